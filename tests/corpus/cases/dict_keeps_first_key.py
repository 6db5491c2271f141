# Counting by a key that arrives as int, float or bool: equal keys share
# one entry, and the dict keeps the key it saw first (CPython's rule).
readings = [1, 1.0, True, 2, 2.0, 0, False, 0.0]
counts = {}
for r in readings:
    counts[r] = counts.get(r, 0) + 1
merged = {1: "int"}
merged.update({1.0: "float"})
merged[True] = "bool"
{"counts": counts, "merged": merged, "literal": {1.0: "a", 1: "b"}, "pairs": dict([(0, "x"), (0.0, "y")])}
