# Modular arithmetic a model uses for checksums and hashing exercises:
# `pow(b, -1, m)` is b's inverse modulo m (Python 3.8+).
M = 10**9 + 7
inv2 = pow(2, -1, M)
results = {"inv2": inv2, "check": 2 * inv2 % M, "inv_pow": pow(3, -2, 7), "neg_base": pow(-3, -1, 7),
           "neg_mod": pow(3, -1, -7), "mod_one": pow(5, -3, 1), "big": pow(2**70, -1, M)}
errors = []
for b, m in [(2, 4), (0, 5), (6, 9)]:
    try:
        pow(b, -1, m)
    except ValueError as e:
        errors.append(f"{b} mod {m}: {e}")
results["errors"] = errors
results
