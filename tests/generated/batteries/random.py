PRELUDE = "import random"
SEEDS = ["0", "42", "-7", "2**70", "3.5", "'abc'", "b'xyz'", "''", "True", "12345678901234567890", "-2**64", "(1,2)", "0.0", "-0.0"]
POPS = ["range(10)", "[1,2,3,4,5]", "'abcdef'", "list(range(100))", "(1,)", "[]", "range(0, 1000, 7)", "{1,2,3}", "{'a':1}", "range(2**70)"]
def call(rng):
    k = rng.choice
    f = k([
        "random.random()", "random.randint({a}, {b})", "random.randrange({a})", "random.randrange({a}, {b})", "random.randrange({a}, {b}, {s})",
        "random.choice({p})", "random.sample({p}, {n})", "random.choices({p}, k={n})", "random.choices({p}, weights={w}, k={n})",
        "random.choices({p}, cum_weights={w}, k={n})", "random.uniform({a}, {b})", "random.gauss({a}, {sd})", "random.normalvariate({a}, {sd})",
        "random.getrandbits({n})", "random.triangular({a}, {b})", "random.triangular({a}, {b}, {c})", "random.expovariate({l})",
        "random.betavariate({l}, {l2})", "random.gammavariate({l}, {l2})", "random.lognormvariate({a}, {sd})", "random.vonmisesvariate({l}, {l2})",
        "random.paretovariate({l})", "random.weibullvariate({l}, {l2})", "random.binomialvariate({n}, {pr})", "random.randbytes({n})",
        "(lambda L: (random.shuffle(L), L)[1])(list({p}))", "random.sample({p}, k={n}, counts={w})", "random.Random({sd0}).random()",
        "random.Random({sd0}).randint(1, 100)", "random.getstate()[1][:3]",
    ])
    return f.format(a=k(["0", "1", "-5", "10", "2**65", "3", "7", "1.5", "100"]), b=k(["10", "100", "0", "2**66", "7", "-1", "3"]),
                    s=k(["1", "2", "-1", "3", "0"]), p=k(POPS), n=k(["0", "1", "3", "5", "10", "-1", "64", "100"]),
                    w=k(["[1,2,3,4,5]", "[0,0,1,0,0]", "[1]*10", "[0.5, 1.5]", "[1,2,3,4,5,6]", "None"]), sd=k(["1", "0", "2.5", "-1"]),
                    c=k(["5", "0", "11"]), l=k(["1", "0.5", "2", "3.0", "0"]), l2=k(["1", "0.5", "2", "4"]), pr=k(["0.5", "0.1", "0.9", "0", "1"]),
                    sd0=k(SEEDS))
def expr(rng):
    seed = rng.choice(SEEDS)
    calls = ", ".join(call(rng) for _ in range(rng.randint(1, 4)))
    return f"(random.seed({seed}), {calls})[1:]"
