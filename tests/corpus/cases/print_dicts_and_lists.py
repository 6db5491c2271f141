# Printing raw tool results: dict, list of dicts, tuple, nested None/bool.
u = await get_user(3)
print(u)
orders = await list_orders("C200")
print(orders["orders"])
print((u["name"], u["active"], None))
print([u["id"], 2.0, 1e-7, 1e22, -0.0])
print({"ok": True, "missing": None, "nested": {"b": 1, "a": [1, (2, 3)]}})
print(repr("it's \"quoted\""), str(3.0), 10 / 4)
