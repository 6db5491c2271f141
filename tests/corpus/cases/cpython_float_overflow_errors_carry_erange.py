# A float power that overflows is CPython's `OverflowError(ERANGE,
# strerror)`: `args`, `repr()` and `str()` as glibc's CPython gives them
# (monty held the text as one argument; the CPython guest's C library is
# musl's, with WASI's errno 68 and other words). `errno` sends this copy
# of `float_overflow_errors_carry_erange` to the CPython guest.
import errno

out = []
for power in [lambda: 2.0**10000.0, lambda: 10.0**400, lambda: (-8.0) ** 1e300, lambda: pow(1e300, 2.0)]:
    try:
        out.append(power())
    except OverflowError as e:
        out.append([str(e), repr(e), list(e.args), e.args[0] == errno.ERANGE])
out
