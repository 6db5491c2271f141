# Average order value for a customer with no orders: divides by zero.
page = await list_orders(customer_id="C300")
amounts = [o["amount"] for o in page["orders"]]
print(f"{len(amounts)} orders")
average = sum(amounts) / len(amounts)
{"average": average}
