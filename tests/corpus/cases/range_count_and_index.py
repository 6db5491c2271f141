# `range.count` and `range.index` (monty: AttributeError, and the scan
# does not route them, as lists have both): an int by arithmetic, anything
# else by `==` over the items, as CPython. Errors by type only (3.14 words
# the int case "range.index(x): x not in range", 3.11 "5 is not in range").
import decimal
r = range(10, 0, -3)
out = [range(10).count(3), r.count(2.0), r.count(-0.0), r.count(7), r.count(7.0), r.index(4), range(5).index(True), range(3, 10**18, 7).index(3 + 7 * 10**6), range(5).count(decimal.Decimal(2)), range(5).index(decimal.Decimal(3)), range(5).count("a")]
for bad in [lambda: r.index(5), lambda: r.index(False), lambda: r.index(2.5)]:
    try:
        bad()
    except ValueError as e:
        out.append(type(e).__name__)
out
