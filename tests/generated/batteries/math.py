PRELUDE = "import math"
F = ["0.0", "-0.0", "0.5", "-0.5", "1.5", "2.5", "-2.5", "1e-310", "5e-324", "1e16", "1e300", "-1e300", "1.7976931348623157e308", "float('inf')", "float('-inf')", "float('nan')",
     "0.1", "1/3", "2.0", "-1.0", "1.0", "3.0", "100.0", "1e22", "123456.789", "-7.25", "9007199254740993.0", "math.pi", "0.9999999999999999"]
I = ["0", "1", "-1", "2", "3", "-7", "10", "12", "255", "-256", "2**31", "2**53 + 1", "2**63", "-2**63", "2**64 - 1", "10**20", "-10**25", "3**100", "10**400", "True", "False"]
V = F + I + ["'1'", "None", "[1]", "1j"]
BS = ['b""', 'b"\\xff"', 'b"\\x00\\x01"', 'b"\\x80\\x00"', '[1, 2]', 'bytearray(b"ab")']
HX = ['"0x1p-1074"', '"0x1.8p1"', '"-0x1p+1024"', '"inf"', '"0x.8"', '"1"', '" 0xAp0 "', '"0x1.fffffffffffff8p1023"', '"nan"', '"0x"', '"0x1p-1075"', '"0X1.0P+0"']
FS = ['"1e500"', '"-0"', '"1_5.5"', '"0x10"', '" 1.5 "', '"infinity"', '"nan"']
SM = ['0', '1', '2', '5', '20', '-1', '-3', '2.0', '1.5', 'True', '10**20', '2**63', 'None', "'3'", '171']
N = ["0", "1", "2", "-1", "-2", "3", "5", "10", "20", "-20", "400", "2.0", "None"]
def expr(rng):
    k = rng.choice
    a, b, c, f, i, j, n, sm = k(V), k(V), k(V), k(F), k(I), k(I), k(N), k(SM)
    fs = ["floor", "ceil", "trunc", "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "fabs", "isnan", "isinf", "isfinite", "ulp", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "degrees", "radians", "gamma", "lgamma", "erf", "erfc", "cbrt", "factorial", "isqrt"]
    f2 = ["pow", "fmod", "remainder", "copysign", "atan2", "nextafter", "ldexp", "log", "isclose", "gcd", "lcm", "hypot"]
    seq = "[" + ", ".join(k(V) for _ in range(rng.randint(0, 4))) + "]"
    iseq = ", ".join(k(I) for _ in range(rng.randint(0, 4)))
    o, bs, hx = k(['"big"', '"little"']), k(BS), k(HX)
    r = f"{rng.randint(-10**6, 10**6)}{k(['/', 'e', '/3e', '*2.0**'])}{rng.randint(-330, 330) if rng.random() < 0.3 else rng.randint(-12, 12)}"
    return k([
        f"repr(2.0 ** {rng.randint(-1074, 1023)})", f"(lambda x: (repr(x), str(-x), round(x, {n}), x // 0.1, x % 0.1, math.ulp(x), math.floor(x), x.as_integer_ratio()))({r})",
        f"math.{k(fs)}({a})", f"math.{k(fs)}({f})", f"math.{k(fs)}({i})", f"math.{k(f2)}({a}, {b})", f"math.{k(f2)}({f}, {k(F)})", f"math.{k(f2)}({i}, {j})",
        f"math.gcd({iseq})", f"math.lcm({iseq})", f"math.hypot({iseq})", f"math.comb({i}, {sm})", f"math.perm({i}, {sm})", f"math.perm({sm})", f"math.comb({sm}, {k(SM)})", f"math.perm({sm}, {k(SM)})", f"math.comb({k(V)}, {k(SM + V[:20])})",
        f"math.factorial({sm})", f"math.isqrt({i})", f"math.fsum({seq})", f"math.prod({seq})", f"math.prod({seq}, start={a})", f"math.sumprod({seq}, {seq})",
        f"math.dist([{a}, {b}], [{c}, {f}])", f"math.dist([{i}], [{j}, {i}])", f"math.frexp({a})", f"math.modf({a})", f"math.ldexp({f}, {i})",
        f"math.isclose({a}, {b}, rel_tol={k(['0', '1e-9', '0.5', '-1'])})", f"math.isclose({f}, {k(F)}, abs_tol={k(['0', '1e-9', '1', '-1'])})",
        f"math.nextafter({f}, {k(F)}, steps={k(['0', '1', '3', '-1', '2**64'])})", f"math.log({a}, {b})", f"math.fma({f}, {k(F)}, {a})", f"math.pow({a}, {b})",
        f"(math.pi, math.e, math.tau, math.inf, -math.inf, math.nan)", f"math.{k(fs + f2 + ['perm', 'comb', 'dist', 'fsum'])}({k(['', '1', '1, 2', '1, 2, 3', '1, 2, 3, 4', '1, x=2', '1, 2, k=3'])})",
        f"({i}).bit_length()", f"({i}).bit_count()", f"({i}).to_bytes({k(['1', '2', '8', '0', '16'])}, {o}, signed={k(['True', 'False'])})",
        f"({i}).to_bytes()", f"int.from_bytes({bs}, {o}, signed={k(['True', 'False'])})",
        f"({a}).as_integer_ratio()", f"({a}).is_integer()", f"({f}).hex()", f"float.fromhex({hx})",
        f"({a}).conjugate()", f"({a}).real", f"({a}).imag", f"({i}).numerator", f"({i}).denominator",
        f"round({a})", f"round({a}, {n})", f"round({i}, {n})", f"round({f}, {n})", f"divmod({a}, {b})", f"{a} // {b}", f"{a} % {b}", f"{i} / {j}", f"{i} // {f}", f"{f} % {i}", f"{k(['10**400', '-10**400', '2**1024'])} {k(['/', '//', '%'])} {k(['0.0', '-0.0', '0', '1.5'])}",
        f"(10**{k(['30', '400', '20'])} + {i}) / {k(['3', '7', '10**10', '-1', '10**300'])}", f"float({i} * 10**{k(['15', '16', '22', '300', '309'])})",
        f"repr({f} * {k(F)})", f"str({k(['1e16', '1e-5', '0.0001', '123456789012345678.0', '1.0e15', '-1e-7', '2.5e-5', '1e100', '0.1+0.2'])})", f"float({k(FS)})",
        f"({i}) ** {k(['-1', '-2', '0.5', '2', '-0.5'])}", f"pow({i}, {j}, {k(['7', '-7', '1', '0'])})", f"abs({a})", f"int({f})", f"{f} == {i}", f"{f} < {i}", f"hash({f}) == hash({i})",
    ])
