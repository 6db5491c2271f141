"""The changes to the interpreter that are the same for every chain: the
streams, sleeps and event loops, warnings, the Linux and 64-bit parities,
the refusals. In the component they are made once, at build time, in the
snapshot; natively (the tests) per chain, and undone after it."""

import asyncio
import asyncio.events
import asyncio.runners
import builtins
import contextlib
import fractions
import functools
import hashlib
import io
import random
import sys
import time
import warnings

from .c_math import _install_c_math
from .compat import _gmtime_as_glibc, _pbkdf2_hmac, _strftime_as_glibc
from .files import _install_empty_path_errors
from .hashes import _PRIME_61, _hash_64, _seed_as_64_bit
from .linux_errno import _install_linux_errno
from .loop import _GuestPolicy, _guest_asyncio_run, _host_sleep
from .refusals import _install_refusals
from .stdio import _Discard
from .unawaited import _ORIGIN_DEPTH, _warn_unawaited_coroutine
from .wit import _wit_host


def _patch_interpreter(stack):
    """Every change to the interpreter that is the same for every chain:
    undone by `stack` natively; in the component, made once at build time
    and kept (every chain is a fresh instance of the snapshot, so nothing
    needs undoing and no chain pays for making them)."""
    patch = functools.partial(_patch, stack)
    patch(sys, "stderr", _Discard())
    patch(sys, "stdin", io.StringIO(""))  # input() is EOFError, never a hang
    patch(sys, "breakpointhook", lambda *a, **k: None)

    # Sleeps and event loops go to the host.
    patch(time, "sleep", _host_sleep)
    patch(asyncio, "run", _guest_asyncio_run)
    patch(asyncio.runners, "run", _guest_asyncio_run)
    patch(asyncio.events, "_event_loop_policy", _GuestPolicy())

    # "never awaited" warnings with the script line of the call.
    patch(warnings, "_warn_unawaited_coroutine", _warn_unawaited_coroutine)
    old_depth = sys.get_coroutine_origin_tracking_depth()
    sys.set_coroutine_origin_tracking_depth(_ORIGIN_DEPTH)
    stack.callback(sys.set_coroutine_origin_tracking_depth, old_depth)

    # `random.seed(3.5)` as on 64-bit CPython (see `_seed_as_64_bit`). The
    # module's `seed` is a method bound to its own instance at import.
    patch(random.Random, "seed", _seed_as_64_bit)
    patch(random, "seed", random._inst.seed)

    # `time.gmtime()`'s zone is `GMT`, as glibc's `gmtime_r` names it and
    # CPython on Linux reports it (`tm_zone`, `strftime('%Z', ...)`);
    # wasi-libc says `UTC`.
    patch(time, "gmtime", _gmtime_as_glibc)
    # glibc's `%k`, `%l`, `%P` (see `_strftime_as_glibc`).
    patch(time, "strftime", _strftime_as_glibc)

    # `sys.maxsize` as on 64-bit CPython (and monty): scripts use it as an
    # "infinity" (`best = sys.maxsize; best = min(best, ts)`), and this
    # wasm32 build's 2**31 - 1 is smaller than a millisecond timestamp, a
    # silently wrong answer. No C code reads the attribute (C uses
    # PY_SSIZE_T_MAX); `pickle` bound its own copy at import, and keeps it.
    patch(sys, "maxsize", (1 << 63) - 1)

    # `hash()` as on 64-bit CPython (and monty): this wasm32 build reduces
    # numbers modulo 2**31 - 1 and mixes tuples in 32 bits, so `hash(2**40)`
    # or `hash((1, 2))` gave other numbers. The interpreter's own hashes of
    # ints, floats, complexes, tuples and decimals (what orders a set) are
    # the low 32 bits of 64-bit CPython's: the build splices them into
    # libpython (guest/cpython/hashes). `Fraction.__hash__` is Python and
    # reads the modulus `fractions` took from `sys.hash_info` at import.
    patch(builtins, "hash", _hash_64)
    patch(sys, "hash_info", type(sys.hash_info)((64, _PRIME_61, 314159, 0, 1000003, "siphash13", 64, 128, 0)))
    patch(fractions, "_PyHASH_MODULUS", _PRIME_61)

    # Floats from the C math library as native CPython on the host computes
    # them (see `_install_c_math`).
    if _wit_host is not None:
        _install_c_math(patch, _wit_host.c_math)

    # This build has no OpenSSL, whose `pbkdf2_hmac` is hashlib's only one.
    if not hasattr(hashlib, "pbkdf2_hmac"):
        patch(hashlib, "pbkdf2_hmac", _pbkdf2_hmac)

    # An empty path is no file (see `_install_empty_path_errors`).
    _install_empty_path_errors(patch)

    # OSErrors with Linux's errno numbers (see `_install_linux_errno`).
    _install_linux_errno(patch, stack)

    _install_refusals(patch, stack)


def _patch(stack, obj, name, value):
    """Sets `obj.name`, undone by `stack`."""
    missing = object()
    old = getattr(obj, name, missing)
    setattr(obj, name, value)

    def undo():
        if old is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, old)

    stack.callback(undo)


# Whether `_patch_interpreter` was applied for good (in the component, at
# build time, by `_patch_interpreter_for_good`).
_INTERPRETER_PATCHED = False


def _patch_interpreter_for_good():
    """`_patch_interpreter`, never undone (the component's build)."""
    global _INTERPRETER_PATCHED
    _patch_interpreter(contextlib.ExitStack())  # never closed: for good
    _INTERPRETER_PATCHED = True
