# Generator expressions are lazy: `next` takes the first match and stops,
# `any` stops at the first true item (later rows lacking the key are never
# read), and a stored generator is used up by its first consumer.
rows = [{"id": 1, "score": 5}, {"id": 3, "score": 9}, {"id": 4}]
first = next((r for r in rows if r["id"] > 2), None)
missing = next((r for r in rows if r["id"] > 9), "none")
any_high = any(r["score"] > 6 for r in rows)
all_low = all(r["score"] < 6 for r in rows)
scores = (r.get("score", 0) for r in rows)
total = sum(scores)
again = sum(scores)
order = []
def seen(x):
    order.append(x)
    return x
doubled = list(map(seen, (seen(r["id"]) * 2 for r in rows)))
{"first": first, "missing": missing, "any": any_high, "all": all_low, "totals": [total, again], "order": order, "doubled": doubled}
