# CPython computes gamma and lgamma itself (Lanczos' approximation), not with
# the C library: the last digits are CPython's own.
import math

out = []
for x in [2.5, -2.5, 0.5, -0.5, 1e-30, 30.5, 150.3, -150.3, 171.5, 250.0, -250.5, 1.0, 3.0, 23.0, 24.0, 7.1, 0.001, -0.001, 4.99, 5.0]:
    row = []
    for f in (math.gamma, math.lgamma):
        try:
            row.append(f(x))
        except (ValueError, OverflowError) as e:
            row.append([type(e).__name__, str(e)])
    out.append(row)
out
