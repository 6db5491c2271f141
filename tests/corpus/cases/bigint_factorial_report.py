import math

# Pure computation in the output: factorials beyond 64 bits in a dict.
r = await big_number(exponent=64)
f25 = math.factorial(25)
{"factorial_25": f25, "ratio": f25 // r["n"], "u64_max": r["n"] - 1, "float": float(r["n"])}
