# Money with decimal, price bands with bisect, and the math of a quote.
import bisect
import decimal
import math
from decimal import Decimal

rates = await get_exchange_rates(base="USD")
eur = Decimal(str(rates["rates"]["EUR"]))
amount = Decimal("19.99") * eur
rounded = amount.quantize(Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)
plain = Decimal("1.500").normalize()
bands = [10, 50, 100, 500]
where = [bisect.bisect_left(bands, v) for v in (5, 50, 75, 1000)]
right = bisect.bisect_right(bands, 50)
ordered = [3, 9]
bisect.insort(ordered, 5)
quote = {
    "amount": str(rounded),
    "plain": str(plain),
    "where": where,
    "right": right,
    "ordered": ordered,
    "comb": math.comb(5, 2),
    "perm": math.perm(5, 2),
    "e": round(math.e, 6),
    "fmod": math.fmod(7.5, 2),
    "isqrt": math.isqrt(17),
    "copysign": math.copysign(3, -0.0),
    "inf": math.inf > 10**100,
    "degrees": round(math.degrees(math.pi), 3),
    "lcm": math.lcm(4, 6),
}
key_funcs = {"min_key": min(["bb", "a", "ccc"], key=len)}
applied = {"sum": sum, "repr": repr, "pow": pow, "max": max, "bool": bool}
{"quote": quote, "key_funcs": key_funcs, "applied": [f.__name__ for f in applied.values()], "dict_kw": dict(base="USD", extra=1)}
