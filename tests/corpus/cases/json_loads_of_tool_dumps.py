import json

# Serialise tool results to a string (e.g. to cache them), then parse them back.
orders = await list_orders(customer_id="C200")
cache = json.dumps(orders)
restored = json.loads(cache)
assert restored == orders
amounts = [o["amount"] for o in restored["orders"]]
print(cache[:60])
{"restored_keys": list(restored["orders"][0]), "amounts": amounts, "cursor": restored["next_cursor"]}
