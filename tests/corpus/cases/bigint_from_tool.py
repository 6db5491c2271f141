# A tool returns 2**70: it must arrive as an exact int.
r = await big_number(exponent=70)
n = r["n"]
print(type(n).__name__, n, r["negative"])
print(n + 1, n // 3, n % 1000, len(str(n)) == r["digits"])
{"n": n, "is_int": isinstance(n, int), "half": n // 2, "as_str": str(n)}
