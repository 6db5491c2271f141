# Two `float('nan')` are two objects, and containers compare items by
# identity before `==`: two keys, unequal lists, a count of one. monty's
# floats have no identity (every NaN was one there), so the scan sends
# `float('nan')` to CPython; `math.nan` is one object on both.
import math
a, b = float("nan"), float("nan")
readings = [1.5, a, 2.0, b]
[[a] == [b], [a] == [a], a in [b], len({a: 1, b: 2}), readings.count(a), readings.index(b), (a,) == (a,), [math.nan] == [math.nan],
 sum(1 for r in readings if r != r), sorted(r for r in readings if not math.isnan(r))]
