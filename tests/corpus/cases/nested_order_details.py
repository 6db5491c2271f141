import asyncio

# Fan out over order ids, then dig into nested line items.
page = await list_orders("C200")
ids = [o["order_id"] for o in page["orders"]]
details = await asyncio.gather(*[get_order(order_id=i) for i in ids])
lines = [(d["order_id"], l["sku"], l["qty"]) for d in details for l in d["lines"]]
qty = {}
for _, sku, q in lines:
    qty[sku] = qty.get(sku, 0) + q
{"lines": lines, "qty_by_sku": qty}
