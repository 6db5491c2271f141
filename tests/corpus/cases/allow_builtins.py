# Summarising numbers from a tool with the builtins.
prices = [await get_stock_price(symbol=s) for s in ["ACME", "GLOBX", "INITECH"]]
values = [p["price"] for p in prices]
changes = [p["change_pct"] for p in prices]
out = {
    "all": all([v > 0 for v in values]),
    "any": any([c < 0 for c in changes]),
    "min": min(values),
    "max_key": max(prices, key=lambda p: p["change_pct"])["symbol"],
    "min_default": min([], default=None),
    "max_default": max([], default=0),
    "sum_start": sum(values, 10),
    "sorted": sorted(values, reverse=True),
    "reversed": list(reversed(values)),
    "enumerate": [i for i, _ in enumerate(values, start=1)],
    "pairs": dict(zip(["a", "b", "c"], values)),
    "round": [round(v, 1) for v in values] + [round(2.5), round(3.14159, ndigits=2)],
    "divmod": divmod(17, 5),
    "pow": [pow(2, 10), pow(3, 4, 5)],
    "chars": [chr(65), ord("a"), hex(255), oct(8), bin(5)],
    "parse": [int("ff", 16), int("42"), float("1.5"), int(3.9), abs(-2)],
    "types": [isinstance(values[0], float), type(values).__name__],
    "next": next(iter(values)),
    "next_default": next(iter([]), "none"),
    "len": len(values),
    "range": list(range(10, 0, -3)),
    "truthy": [bool(""), bool([0])],
    "frozen": sorted(frozenset(["x", "y"])),
    "text": [str(1.0), repr("a"), format(3.14159, ".2f")],
}
print("prices", *values, sep=", ", end="\n")
out
