# Tools stored in a dict and called by key, the way a planner loop does it.
handlers = {"weather": get_weather, "stock": get_stock_price, "user": get_user}
plan = [("weather", "Oslo"), ("stock", "UMBRL"), ("user", 8), ("weather", "Lima")]
results = []
for kind, arg in plan:
    r = await handlers[kind](arg)
    results.append({"kind": kind, "key": arg, "keys": list(r)[:3]})
results
