# A customer with no orders: the loop must handle an empty first page.
cursor = None
orders = []
while True:
    page = await list_orders("C300", cursor)
    orders.extend(page["orders"])
    cursor = page["next_cursor"]
    if cursor is None:
        break
summary = {"customer": "C300", "orders": len(orders)}
if orders:
    summary["average"] = sum(o["amount"] for o in orders) / len(orders)
else:
    summary["average"] = None
    summary["note"] = "no orders yet"
summary
