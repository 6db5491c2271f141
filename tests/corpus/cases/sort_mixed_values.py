# Sorting tool rows whose values are missing or of mixed types: CPython's
# sort compares with `<` in a fixed order, so which pair fails first (and
# the types the TypeError names), where a NaN lands, and the order a failed
# `list.sort` leaves behind are all part of the answer.
import math
rows = [
    {"name": "ana", "score": 71},
    {"name": "bo", "score": None},
    {"name": "cy", "score": 88.5},
    {"name": "di", "score": 64},
    {"name": "ed", "score": "n/a"},
    {"name": "flo", "score": 90},
]
out = []
for field in ("score", "name"):
    try:
        out.append([r["name"] for r in sorted(rows, key=lambda r: r[field])])
    except TypeError as e:
        out.append(str(e))
scores = [r["score"] for r in rows]
for attempt in (scores, scores[::-1], scores[2:], [3, 1, None, 2], [None, 5, 4], ["b", 1.5, "a"]):
    xs = list(attempt)
    try:
        xs.sort()
        out.append(xs)
    except TypeError as e:
        out.append((str(e), xs))
nan = math.nan
out.append(sorted([3, nan, 1, 2, nan, 0]))
out.append(sorted([5.5, 2, nan, 9, 1], reverse=True))
out.append(sorted(range(70), key=lambda n: (n * 37) % 11)[:12])
from collections import Counter
out.append(Counter({"a": 2, "b": nan, "c": 3, "d": 2}).most_common())
out.append(Counter("mississippi").most_common(3))
try:
    max(scores)
except TypeError as e:
    out.append(str(e))
out
