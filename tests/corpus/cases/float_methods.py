# float methods and attributes: exact ratios, hex round trips, integrality
# checks, and CPython's errors for infinities, NaN and bad hex strings.
import math
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e)]

values = [0.0, -0.0, 1.0, -2.5, 0.1, 1 / 3, 1e300, 1e-300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 3.0, 1e16, 123456.789, float("inf"), float("-inf"), math.nan]
rows = []
for x in values:
    rows.append([x.hex(), x.is_integer(), attempt(lambda: x.as_integer_ratio()), x.conjugate(), x.real, x.imag, type(x.imag).__name__])
errors = [
    attempt(lambda: float.fromhex(1)),
    attempt(lambda: float.fromhex(b"1")),
    attempt(lambda: float.fromhex()),
    attempt(lambda: float.fromhex("1", "2")),
    attempt(lambda: float.fromhex(string="1")),
    attempt(lambda: (1.5).hex(1)),
    attempt(lambda: (1.5).is_integer(1)),
    attempt(lambda: (1.5).as_integer_ratio(x=1)),
    attempt(lambda: (1.5).conjugate(1)),
    attempt(lambda: (1.5).numerator),
    attempt(lambda: (1.5).bit_length()),
]
ratio = (0.75).as_integer_ratio()
{"rows": rows, "errors": errors, "ratio": [ratio, type(ratio[1]).__name__], "complex": [(1 + 2j).conjugate(), (3j).real]}
