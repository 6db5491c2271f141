"""Floats from the C math library as native CPython on the host computes
them: `math`'s C-library functions ask the host (`host.c_math`)."""

import math
import random

from .protocol import C_MATH_FUNCTIONS


# `math` functions that are CPython's own code, not the C library's.
_NOT_C_MATH = frozenset({"hypot"})


def _install_c_math(patch, c_math):
    """Makes `math`'s C-library functions return what the host's C library
    computes. This build's is wasi-libc (musl code), whose last bits differ
    from glibc's for 1-10 % of `sin`/`cos`/`atan2`/`tanh` arguments (and
    half the `cbrt`s), and `repr` shows every bit; the host's is the one
    native CPython on the same machine uses (the monty guest asks it too).
    Each wrapper lets the original check and convert the arguments and raise
    its errors, then takes the host's value of a finite result. `random` and
    `statistics` bound some of these functions at import: they are rebound
    (`random`'s constants, computed at import, are the same in both
    libraries; this runs at build time, when no host answers).
    Not covered (C code calling the C library itself): `float ** float`
    (glibc and musl share `pow`), `complex`, `cmath`,
    `statistics.NormalDist.inv_cdf`. CPython's own `gamma` and `lgamma`
    call the C library too: they are ported (`_Lanczos`)."""
    wrapped = {
        name: _c_math_wrapper(getattr(math, name), code, c_math)
        for code, name in enumerate(C_MATH_FUNCTIONS)
        if name not in _NOT_C_MATH
    }
    for name in ("log2", "log10"):
        wrapped[name] = _c_math_log_wrapper(getattr(math, name), _loghelper(C_MATH_FUNCTIONS.index(name), c_math))
    ln = _loghelper(C_MATH_FUNCTIONS.index("log"), c_math)
    wrapped["log"] = _c_math_log_wrapper(math.log, lambda x, *base: ln(x) / ln(base[0]) if base else ln(x))
    lanczos = _Lanczos(wrapped)
    wrapped["gamma"] = _c_math_log_wrapper(math.gamma, lambda x: lanczos.gamma(float(x)))
    wrapped["lgamma"] = _c_math_log_wrapper(math.lgamma, lambda x: lanczos.lgamma(float(x)))
    for name, function in wrapped.items():
        patch(math, name, function)
    import statistics

    bound_at_import = (
        (random, "_", ("log", "exp", "acos", "cos", "sin", "log2")),
        (statistics, "", ("exp", "erf", "log")),
    )
    for module, prefix, names in bound_at_import:
        for name in names:
            if hasattr(module, prefix + name):
                patch(module, prefix + name, wrapped[name])


def _c_math_wrapper(original, code, c_math):
    """`original` (a `math` function of one or two floats) with the host's
    value of a finite result: the original converts the arguments and
    raises its errors (its messages, its arity), and keeps its infinities
    and NaNs. One frame and one host call (~0.8 us, most of the wrapper's
    cost) over the original's."""

    def function(*args, **kwargs):
        result = original(*args, **kwargs)
        if result - result == 0.0:  # finite
            value = c_math(code, float(args[0]), float(args[1]) if len(args) > 1 else 0.0)
            if value - value == 0.0:
                return value
        return result

    function.__name__ = function.__qualname__ = original.__name__
    function.__doc__ = original.__doc__
    return function


def _c_math_log_wrapper(original, compute):
    """`math.log` (and `log2`, `log10`, `gamma`, `lgamma`) like
    `_c_math_wrapper`, the value of a finite result being `compute(*args)`."""

    def function(*args, **kwargs):
        result = original(*args, **kwargs)
        if result - result == 0.0:
            value = compute(*args)
            if value - value == 0.0:
                return value
        return result

    function.__name__ = function.__qualname__ = original.__name__
    function.__doc__ = original.__doc__
    return function


def _loghelper(code, c_math):
    """CPython's `loghelper` of a positive number with the C function
    `code`: an int too large for a float is split as `m * 2**e` (as
    `_PyLong_Frexp`), giving `f(m) + f(2.0) * e`."""

    def value(x):
        if isinstance(x, int):
            try:
                x = float(x)
            except OverflowError:
                e = x.bit_length()
                m = x / (1 << e)  # int / int is correctly rounded
                if m == 1.0:
                    m, e = 0.5, e + 1
                return c_math(code, m, 0.0) + c_math(code, 2.0, 0.0) * e
        return c_math(code, float(x), 0.0)

    return value


class _Lanczos:
    """CPython's `m_tgamma` and `m_lgamma` (Modules/mathmodule.c), line for
    line, over the host's C functions `c` (`c["sin"](x)`, ...). Called only
    for arguments the original accepted with a finite result."""

    G = 6.024680040776729583740234375
    G_MINUS_HALF = 5.524680040776729583740234375
    NUM = (
        23531376880.410759688572007674451636754734846804940,
        42919803642.649098768957899047001988850926355848959,
        35711959237.355668049440185451547166705960488635843,
        17921034426.037209699919755754458931112671403265390,
        6039542586.3520280050642916443072979210699388420708,
        1439720407.3117216736632230727949123939715485786772,
        248874557.86205415651146038641322942321632125127801,
        31426415.585400194380614231628318205362874684987640,
        2876370.6289353724412254090516208496135991145378768,
        186056.26539522349504029498971604569928220784236328,
        8071.6720023658162106380029022722506138218516325024,
        210.82427775157934587250973392071336271166969580291,
        2.5066282746310002701649081771338373386264310793408,
    )
    DEN = (0.0, 39916800.0, 120543840.0, 150917976.0, 105258076.0, 45995730.0, 13339535.0, 2637558.0, 357423.0,
           32670.0, 1925.0, 66.0, 1.0)
    LOG_PI = 1.144729885849400174143427351353058711647

    def __init__(self, c):
        self.c = c

    def sum(self, x):
        num = den = 0.0
        if x < 5.0:
            for i in range(12, -1, -1):
                num = num * x + self.NUM[i]
                den = den * x + self.DEN[i]
        else:
            for i in range(13):
                num = num / x + self.NUM[i]
                den = den / x + self.DEN[i]
        return num / den

    def sinpi(self, x):
        y = math.fmod(abs(x), 2.0)
        n = int(2.0 * y)  # C's round(2.0 * y): halves away from zero
        if 2.0 * y - n >= 0.5:
            n += 1
        sin, cos, pi = self.c["sin"], self.c["cos"], math.pi
        r = (sin(pi * y), cos(pi * (y - 0.5)), sin(pi * (1.0 - y)), -cos(pi * (y - 1.5)), sin(pi * (y - 2.0)))[n]
        return math.copysign(1.0, x) * r

    def gamma(self, x):
        if x == math.floor(x) and 0 < x <= 23:
            return float(math.factorial(int(x) - 1))
        absx = abs(x)
        if absx < 1e-20:
            return 1.0 / x
        if absx > 200.0:  # the original raised for a positive x
            return 0.0 / self.sinpi(x)
        exp, pow = self.c["exp"], self.c["pow"]
        y = absx + self.G_MINUS_HALF
        z = (y - absx) - self.G_MINUS_HALF if absx > self.G_MINUS_HALF else (y - self.G_MINUS_HALF) - absx
        z = z * self.G / y
        if x < 0.0:
            r = -math.pi / self.sinpi(absx) / absx * exp(y) / self.sum(absx)
            r -= z * r
            if absx < 140.0:
                r /= pow(y, absx - 0.5)
            else:
                sqrtpow = pow(y, absx / 2.0 - 0.25)
                r /= sqrtpow
                r /= sqrtpow
        else:
            r = self.sum(absx) / exp(y)
            r += z * r
            if absx < 140.0:
                r *= pow(y, absx - 0.5)
            else:
                sqrtpow = pow(y, absx / 2.0 - 0.25)
                r *= sqrtpow
                r *= sqrtpow
        return r

    def lgamma(self, x):
        if x == math.floor(x) and x <= 2.0:
            return 0.0
        log = self.c["log"]
        absx = abs(x)
        if absx < 1e-20:
            return -log(absx)
        r = log(self.sum(absx)) - self.G
        r += (absx - 0.5) * (log(absx + self.G - 0.5) - 1)
        if x < 0.0:
            r = self.LOG_PI - log(abs(self.sinpi(absx))) - log(absx) - r
        return r
