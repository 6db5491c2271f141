# A float's repr reads back as the same float. Rounding a 16-digit tie to
# even (as Python's dtoa does) had broken that at 46 powers of two, where the
# gap below the value is half the gap above: repr(2.0 ** -24) ended in 062,
# which is another float.
import math

values = [2.0 ** -24, 2.0 ** -44, 2.0 ** 89, math.ulp(256), 83112236674491.125, 0.1 + 0.2]
[[repr(v), float(repr(v)) == v] for v in values]
