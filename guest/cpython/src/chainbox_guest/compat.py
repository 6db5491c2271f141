"""Small parts of the stdlib as CPython on Linux has them where this build's
C library (wasi-libc, musl's code) or its missing OpenSSL differ:
`time.gmtime`'s zone, glibc's `strftime` directives, `hashlib.pbkdf2_hmac`."""

import hmac
import operator
import time


_GMTIME = time.gmtime


def _gmtime_as_glibc(*args):
    """`time.gmtime`, its zone named `GMT` (see
    `interpreter._patch_interpreter`); the C function checks the arguments,
    so its errors are its own."""
    tm = _GMTIME(*args)
    return time.struct_time(tuple(tm), {"tm_zone": "GMT", "tm_gmtoff": 0})


_gmtime_as_glibc.__name__ = _gmtime_as_glibc.__qualname__ = "gmtime"

_STRFTIME = time.strftime

# What glibc's strftime writes for the directives this build's C library
# (musl) lacks, by the hour: musl writes nothing for the whole format.
_GLIBC_DIRECTIVES = {
    "k": lambda hour: f"{hour:2d}",
    "l": lambda hour: f"{hour % 12 or 12:2d}",
    "P": lambda hour: "am" if hour < 12 else "pm",
    "+": lambda hour: "%%+",  # not a directive: glibc keeps it as written
}


def _strftime_as_glibc(format, t=None, /):
    """`time.strftime` (and so `datetime.strftime`, which calls it) with
    glibc's `%k`, `%l` and `%P`, as CPython on Linux writes them
    (`' 9'`, `' 2'`, `'pm'`), and an unknown `%+` kept: musl's strftime
    gave an empty string for any format holding one."""
    if type(format) is str and any(f"%{d}" in format for d in _GLIBC_DIRECTIVES):
        try:
            hour = (time.localtime() if t is None else t)[3]
        except Exception:
            hour = None  # the C function reports a bad time tuple
        if type(hour) is int:
            out, i = [], 0
            while i < len(format):
                directive = format[i + 1 : i + 2] if format[i] == "%" else ""
                if directive in _GLIBC_DIRECTIVES:
                    out.append(_GLIBC_DIRECTIVES[directive](hour))
                else:
                    out.append(format[i : i + 2] if directive else format[i])
                i += 2 if directive else 1
            format = "".join(out)
    return _STRFTIME(format) if t is None else _STRFTIME(format, t)


_strftime_as_glibc.__name__ = _strftime_as_glibc.__qualname__ = "strftime"


def _pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
    """`hashlib.pbkdf2_hmac` (RFC 8018's PBKDF2 with HMAC as the PRF), with
    the arguments checked in the order and words of CPython's OpenSSL one.
    Each block starts from one keyed HMAC state, copied per iteration."""
    if not isinstance(hash_name, str):
        raise TypeError(f"pbkdf2_hmac() argument 'hash_name' must be str, not {type(hash_name).__name__}")
    password, salt = _bytes_like(password), _bytes_like(salt)
    iterations = operator.index(iterations)
    prf = hmac.new(password, digestmod=hash_name)
    if iterations < 1:
        raise ValueError("iteration value must be greater than 0.")
    if iterations > _INT_MAX:
        raise OverflowError("iteration value is too great.")
    dklen = prf.digest_size if dklen is None else operator.index(dklen)
    if dklen < 1:
        raise ValueError("key length must be greater than 0.")
    if dklen > _INT_MAX:
        raise OverflowError("key length is too great.")
    key = bytearray()
    block = 0
    while len(key) < dklen:
        block += 1
        state = prf.copy()
        state.update(salt + block.to_bytes(4, "big"))
        u = state.digest()
        acc = int.from_bytes(u)
        for _ in range(iterations - 1):
            state = prf.copy()
            state.update(u)
            u = state.digest()
            acc ^= int.from_bytes(u)
        key += acc.to_bytes(prf.digest_size)
    return bytes(key[:dklen])


_INT_MAX = (1 << 31) - 1


def _bytes_like(value):
    """The bytes of a bytes-like argument; a str is CPython's TypeError."""
    if isinstance(value, str):
        raise TypeError("a bytes-like object is required, not 'str'")
    return bytes(memoryview(value))
