# hash() of ints and tuples is CPython's modular hash.
r = await big_number(exponent=64)
[hash(r["n"]), hash(r["negative"]), hash(2**64), hash(-1), hash((1, 2)), hash(10**20) % 1000]
