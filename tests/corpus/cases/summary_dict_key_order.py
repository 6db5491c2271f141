# A summary dict built in a deliberate (not alphabetical) key order.
orders = []
cursor = None
while True:
    page = await list_orders("C100", cursor=cursor)
    orders += page["orders"]
    cursor = page["next_cursor"]
    if cursor is None:
        break

by_status = {}
for o in orders:
    by_status[o["status"]] = by_status.get(o["status"], 0) + 1

summary = {
    "total_orders": len(orders),
    "status_counts": by_status,
    "largest": max(orders, key=lambda o: o["amount"])["order_id"],
    "items": sum(o["items"] for o in orders),
    "currencies": sorted({o["currency"] for o in orders}),
}
print(summary)
summary
