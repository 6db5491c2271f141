# A float division with an int too large for a float fails on converting
# the int, before any zero check, as CPython's float division converts its
# operands first (monty: ZeroDivisionError for `10**400 / 0.0`).
out = []
for f in [lambda: 10**400 / 0.0, lambda: 10**400 // 0.0, lambda: 10**400 % 0.0, lambda: divmod(10**400, 0.0), lambda: 0.0 / 10**400, lambda: 10**400 / 2.0, lambda: 1.0 % 10**400, lambda: 2**1024 % 0.0]:
    try:
        out.append(f())
    except (ZeroDivisionError, OverflowError) as e:
        out.append(type(e).__name__ + ": " + str(e))
out
