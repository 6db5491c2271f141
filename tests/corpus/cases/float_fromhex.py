# float.fromhex as CPython parses it: whitespace, sign, inf/nan, the
# optional 0x, round half to even at the 53rd bit and into subnormals,
# overflow, and invalid strings; and hex() round trips.
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e)]

values = [0.0, -0.0, 1.0, -2.5, 0.1, 1 / 3, 1e300, 1e-300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 3.0]
round_trip = [float.fromhex(x.hex()) == x for x in values]
texts = ["0x1p0", "0x1.8p1", "  -0x1.fffffffffffffp1023  ", "0x1.fffffffffffff8p1023", "0x1p1024", "0x1p-1074", "0x1p-1075", "0x1.8p-1075", "0x3p-1076", "0x1.00000000000008p0", "0x1.00000000000018p0", "0x1.000000000000080001p0", "inf", "-Infinity", "nan", "iNf", "infinit", "1", "1.", ".1", ".", "x", "0x", "ff", "FF.8", "0X1P-2", "1p", "1p+", "1e3", "0x1.8p1 x", "", "0x1p99999999999999999999", "0x1p-99999999999999999999", "-0x0p0", "0x0.fffffffffffff8p-1022", "\t0x1.abcp10\n", "1" * 300]
parsed = [attempt(lambda: float.fromhex(t)) for t in texts]
{"round_trip": round_trip, "parsed": parsed, "instance": (2.0).fromhex("0x1p-2")}
