# Cursor pagination: sum a customer's order amounts per currency.
totals = {}
cursor = None
calls = 0
while True:
    batch = await list_orders(customer_id="C100", cursor=cursor)
    calls += 1
    for order in batch["orders"]:
        if order["status"] == "cancelled":
            continue
        totals[order["currency"]] = round(totals.get(order["currency"], 0) + order["amount"], 2)
    cursor = batch["next_cursor"]
    if not cursor:
        break

print("calls:", calls)
print("totals:", totals)
totals
