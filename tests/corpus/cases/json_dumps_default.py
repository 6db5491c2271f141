import json
from datetime import date, datetime
from decimal import Decimal

# Serialising tool results that hold dates and decimals, as models do.
orders = await list_orders("C100")
rows = [
    {"id": o["order_id"], "total": Decimal(str(o["amount"])), "day": date(2024, 5, 1 + i), "at": datetime(2024, 5, 1, 9, i)}
    for i, o in enumerate(orders["orders"][:3])
]

as_text = json.dumps(rows, default=str)


def encode(o):
    if isinstance(o, datetime):
        return o.isoformat(timespec="minutes")
    if isinstance(o, date):
        return o.isoformat()
    if isinstance(o, Decimal):
        return {"amount": str(o), "places": -o.as_tuple().exponent}
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


pretty = json.dumps({"rows": rows, "count": len(rows)}, default=encode, indent=2, sort_keys=True)

problems = []
for obj, default in [({"b": b"x"}, encode), ([b"y"], lambda o: [o]), ({"d": date(2024, 1, 1)}, None), ({date(2024, 1, 1): 1}, str)]:
    try:
        json.dumps(obj, default=default)
    except (TypeError, ValueError) as e:
        problems.append(f"{type(e).__name__}: {e}")

print(as_text[:80])
{"pretty": json.loads(pretty), "lines": len(pretty.splitlines()), "problems": problems}
