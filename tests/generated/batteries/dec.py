PRELUDE = "from decimal import Decimal, getcontext, localcontext, ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN, ROUND_CEILING, ROUND_FLOOR, ROUND_UP, ROUND_05UP, ROUND_HALF_DOWN, InvalidOperation, DivisionByZero\nimport decimal"
D = ["Decimal('1.10')", "Decimal('-0')", "Decimal('1E+3')", "Decimal('123.456')", "Decimal('0.0001')", "Decimal('NaN')", "Decimal('sNaN')", "Decimal('-Infinity')",
     "Decimal(7)", "Decimal(-2)", "Decimal('1e-30')", "Decimal('99999999999999999999999999999.5')", "Decimal(0.1)", "Decimal('2.5')", "Decimal('-3.5')",
     "Decimal('1.000')", "Decimal((0, (1, 2, 3), -2))", "Decimal('  4.2  ')", "Decimal('1_000.5')", "Decimal(10**30)", "Decimal('0E-10')", "Decimal('12e5')"]
O = ["1", "3", "0", "2.5", "Decimal('0.3')", "-1", "10**20"]
def expr(rng):
    k = rng.choice
    a, b, o = k(D), k(D), k(O)
    e = k([f"{a} + {b}", f"{a} - {b}", f"{a} * {b}", f"{a} / {b}", f"{a} // {b}", f"{a} % {b}", f"divmod({a}, {b})", f"{a} ** {o}", f"{a} + {o}",
           f"{a} < {b}", f"{a} == {b}", f"{a} == {o}", f"hash({a}) == hash({o})", f"str({a})", f"repr({a})", f"float({a})", f"int({a})", f"round({a})",
           f"round({a}, 1)", f"round({a}, -1)", f"{a}.quantize(Decimal('0.01'))", f"{a}.quantize(Decimal('1'), rounding={k(['ROUND_HALF_UP', 'ROUND_HALF_EVEN', 'ROUND_DOWN', 'ROUND_CEILING', 'ROUND_05UP', 'ROUND_HALF_DOWN'])})",
           f"{a}.normalize()", f"{a}.sqrt()", f"{a}.exp()", f"{a}.ln()", f"{a}.log10()", f"{a}.as_tuple()", f"{a}.as_integer_ratio()", f"{a}.adjusted()",
           f"{a}.to_integral_value()", f"{a}.to_eng_string()", f"{a}.is_signed()", f"{a}.copy_abs()", f"{a}.copy_negate()", f"{a}.fma({b}, {o})", f"{a}.compare({b})",
           f"{a}.max({b})", f"{a}.min({b})", f"{a}.scaleb(2)", f"{a}.remainder_near({b})", f"{a}.same_quantum({b})", f"{a}.is_nan()", f"{a}.is_finite()",
           f"f'{{{a}:.3f}}'", f"f'{{{a}:,}}'", f"f'{{{a}:e}}'", f"f'{{{a}:%}}'", f"f'{{{a}:>12.2}}'", f"f'{{{a}:g}}'", f"-{a}", f"+{a}", f"abs({a})",
           f"sum([{a}, {b}])", f"max({a}, {b})", f"sorted([{a}, {b}, {o}])", f"{a}.number_class()", f"{a}.logb()", f"{a}.next_plus()",
           f"Decimal.from_float({k(['0.1', '1.5', '-0.0', '1e300'])})", f"{a}.canonical()", f"{a} * 1", f"bool({a})",
           f"(lambda: (setattr(getcontext(), 'prec', {k(['3', '5', '50'])}), {a} / {b}, setattr(getcontext(), 'prec', 28))[1])()"])
    return e
