# Rounding to tens, hundreds, ... (a negative ndigits) and to digits held in
# a variable: CPython rounds the exact binary value, ties to even.
c = await convert_currency(amount=201454.52, from_currency="USD", to_currency="USD")
populations = [c["amount"], 1234.5, 1250.0, 1350.0, -2550.0, 0.4, 7.0e22, 1e300]
digits = [-1, -2, -3, -5, -22, -308, -309]
table = {n: [round(p, n) for p in populations] for n in digits}
ints = [round(v, n) for v in [12345, -12355, 250, 350, 10**30 + 5 * 10**10] for n in (-1, -2, 0, 2)]
places = 2
try:
    too_big = round(1.7976931348623157e308, -308)
except OverflowError as e:
    too_big = f"OverflowError: {e}"
{"table": table, "ints": ints, "cents": round(2.675, places), "too_big": too_big, "bool": round(True, -1)}
