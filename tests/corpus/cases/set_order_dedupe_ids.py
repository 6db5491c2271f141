# Which users placed orders: deduplicated with a set, as models often do.
# CPython iterates a set of ints in hash-table order, not insertion order.
customers = ["C100", "C200", "C100"]
items = []
for c in customers:
    page = await list_orders(customer_id=c)
    items.extend(o["items"] for o in page["orders"])
distinct = list(set(items))
print("distinct item counts:", set(items))
statuses = {o["status"] for o in page["orders"]}
{"distinct": distinct, "count": len(distinct), "sorted": sorted(set(items)), "statuses": sorted(statuses)}
