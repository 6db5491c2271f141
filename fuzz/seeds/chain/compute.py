def f(n):
    return n if n < 2 else f(n - 1) + f(n - 2)
x = [i * i for i in range(100)]
{"f": f(10), "d": {k: str(k) for k in x[:5]}}