# CPU: recursive calls and small-int arithmetic.
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


fib(25)
