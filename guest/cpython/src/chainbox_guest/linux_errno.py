"""OSErrors as on Linux: this wasm32 build numbers errors as WASI does, so
the errors a script sees, and its `errno` module, are renumbered to
Linux's."""

import builtins
import dis
import errno
import os
import sys
import types

from .script import is_script_file


# Linux's errno numbers by name (x86-64's and aarch64's; generated from
# CPython's `errno` there): what native CPython on Linux reports. This wasm32
# build's C library numbers errors as WASI does (`ENOENT` is 44, 2 is
# `EACCES`), so an OSError the script sees said `[Errno 44] No such file or
# directory`. See `_install_linux_errno`.
_LINUX_ERRNO = {
    "EPERM": 1, "ENOENT": 2, "ESRCH": 3, "EINTR": 4, "EIO": 5, "ENXIO": 6, "E2BIG": 7,
    "ENOEXEC": 8, "EBADF": 9, "ECHILD": 10, "EAGAIN": 11, "EWOULDBLOCK": 11, "ENOMEM": 12,
    "EACCES": 13, "EFAULT": 14, "ENOTBLK": 15, "EBUSY": 16, "EEXIST": 17, "EXDEV": 18,
    "ENODEV": 19, "ENOTDIR": 20, "EISDIR": 21, "EINVAL": 22, "ENFILE": 23, "EMFILE": 24,
    "ENOTTY": 25, "ETXTBSY": 26, "EFBIG": 27, "ENOSPC": 28, "ESPIPE": 29, "EROFS": 30,
    "EMLINK": 31, "EPIPE": 32, "EDOM": 33, "ERANGE": 34, "EDEADLK": 35, "EDEADLOCK": 35,
    "ENAMETOOLONG": 36, "ENOLCK": 37, "ENOSYS": 38, "ENOTEMPTY": 39, "ELOOP": 40, "ENOMSG": 42,
    "EIDRM": 43, "ECHRNG": 44, "EL2NSYNC": 45, "EL3HLT": 46, "EL3RST": 47, "ELNRNG": 48,
    "EUNATCH": 49, "ENOCSI": 50, "EL2HLT": 51, "EBADE": 52, "EBADR": 53, "EXFULL": 54,
    "ENOANO": 55, "EBADRQC": 56, "EBADSLT": 57, "EBFONT": 59, "ENOSTR": 60, "ENODATA": 61,
    "ETIME": 62, "ENOSR": 63, "ENONET": 64, "ENOPKG": 65, "EREMOTE": 66, "ENOLINK": 67, "EADV": 68,
    "ESRMNT": 69, "ECOMM": 70, "EPROTO": 71, "EMULTIHOP": 72, "EDOTDOT": 73, "EBADMSG": 74,
    "EOVERFLOW": 75, "ENOTUNIQ": 76, "EBADFD": 77, "EREMCHG": 78, "ELIBACC": 79, "ELIBBAD": 80,
    "ELIBSCN": 81, "ELIBMAX": 82, "ELIBEXEC": 83, "EILSEQ": 84, "ERESTART": 85, "ESTRPIPE": 86,
    "EUSERS": 87, "ENOTSOCK": 88, "EDESTADDRREQ": 89, "EMSGSIZE": 90, "EPROTOTYPE": 91,
    "ENOPROTOOPT": 92, "EPROTONOSUPPORT": 93, "ESOCKTNOSUPPORT": 94, "ENOTSUP": 95,
    "EOPNOTSUPP": 95, "EPFNOSUPPORT": 96, "EAFNOSUPPORT": 97, "EADDRINUSE": 98,
    "EADDRNOTAVAIL": 99, "ENETDOWN": 100, "ENETUNREACH": 101, "ENETRESET": 102,
    "ECONNABORTED": 103, "ECONNRESET": 104, "ENOBUFS": 105, "EISCONN": 106, "ENOTCONN": 107,
    "ESHUTDOWN": 108, "ETOOMANYREFS": 109, "ETIMEDOUT": 110, "ECONNREFUSED": 111, "EHOSTDOWN": 112,
    "EHOSTUNREACH": 113, "EALREADY": 114, "EINPROGRESS": 115, "ESTALE": 116, "EUCLEAN": 117,
    "ENOTNAM": 118, "ENAVAIL": 119, "EISNAM": 120, "EREMOTEIO": 121, "EDQUOT": 122,
    "ENOMEDIUM": 123, "EMEDIUMTYPE": 124, "ECANCELED": 125, "ENOKEY": 126, "EKEYEXPIRED": 127,
    "EKEYREVOKED": 128, "EKEYREJECTED": 129, "EOWNERDEAD": 130, "ENOTRECOVERABLE": 131,
    "ERFKILL": 132,
}


# The exceptions C raises with an errno: OSError and its subclasses, and
# the OverflowError of a float overflow.
_ERRNO_ERRORS = (OSError, OverflowError)

# glibc's words where this build's C library (musl's) has others, by Linux
# number: what `strerror` says on Linux.
_GLIBC_STRERROR = {
    34: "Numerical result out of range",  # ERANGE; musl: Result not representable
    36: "File name too long",  # ENAMETOOLONG; musl: Filename too long
}


def _linux_errno_for_wasi():
    """This build's errno numbers -> Linux's, where they differ (by name;
    nothing when run natively on Linux)."""
    table = {}
    for name, linux in _LINUX_ERRNO.items():
        own = getattr(errno, name, None)
        if own is not None and own != linux:
            table.setdefault(own, linux)
    return table


def _linux_errno_module():
    """The `errno` module the script imports: Linux's numbers, so
    `e.errno == errno.ENOENT` holds for the errors it sees."""
    module = types.ModuleType("errno", errno.__doc__)
    for name, linux in _LINUX_ERRNO.items():
        if hasattr(errno, name):
            setattr(module, name, linux)
    module.errorcode = {}
    for name in sorted(vars(module), key=lambda n: (n not in errno.errorcode.values(), n)):
        if name.startswith("E"):
            module.errorcode.setdefault(getattr(module, name), name)
    return module


def _install_linux_errno(patch, stack):
    """OSErrors reach the script with Linux's errno numbers, and the
    script's `import errno` has them too.

    The numbers are renumbered where an OSError first reaches a frame of the
    script (a `sys.monitoring` RAISE event there), not where C raises it:
    the stdlib catches its own errors by this build's numbers (`pathlib`
    bound `ENOENT` at import), so they keep those until the script sees
    them. An error the script raises itself (`raise OSError(2, ...)`) keeps
    the numbers it was given. The error's class was chosen by its meaning
    already (`FileNotFoundError`); `OSError(2, 'x')` built by the script is
    still this build's class for 2 (`PermissionError`)."""
    table = _linux_errno_for_wasi()
    if not table or not hasattr(sys, "monitoring"):
        return
    monitoring = sys.monitoring
    tool = next((t for t in (3, 4) if monitoring.get_tool(t) is None), None)
    if tool is None:
        return
    raise_statement = dis.opmap["RAISE_VARARGS"]
    renumbered = {}

    def on_raise(code, offset, exc):
        if not is_script_file(code.co_filename) or not isinstance(exc, _ERRNO_ERRORS) or id(exc) in renumbered:
            return
        renumbered[id(exc)] = exc
        if code.co_code[offset] == raise_statement:
            return
        if isinstance(exc, OSError):
            number = exc.errno
        elif len(exc.args) == 2 and type(exc.args[1]) is str:
            # A float overflow C reports through errno (`2.0 ** 10000.0`
            # is `OverflowError(ERANGE, strerror)`).
            number = exc.args[0]
        else:
            return
        linux = table.get(number) if type(number) is int else None
        if linux is None:
            return
        words = _GLIBC_STRERROR.get(linux)
        if isinstance(exc, OSError):
            exc.errno = linux
            if words is not None:
                exc.strerror = words
        if exc.args and exc.args[0] == number:
            rest = exc.args[1:]
            if words is not None and rest:
                rest = (words, *rest[1:])
            exc.args = (linux, *rest)

    monitoring.use_tool_id(tool, "chainbox errno")
    monitoring.register_callback(tool, monitoring.events.RAISE, on_raise)
    monitoring.set_events(tool, monitoring.events.RAISE)
    stack.callback(monitoring.free_tool_id, tool)
    stack.callback(monitoring.set_events, tool, 0)
    stack.callback(renumbered.clear)

    module = _linux_errno_module()
    original_import = builtins.__import__

    def script_import(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "errno" and level == 0 and globals is not None and globals.get("__name__") == "__main__":
            return module
        return original_import(name, globals, locals, fromlist, level)

    patch(builtins, "__import__", script_import)

    # `os.strerror(errno.ENOENT)` in the script: its numbers are Linux's.
    wasi_for_linux = {}
    for own, linux in table.items():
        wasi_for_linux.setdefault(linux, own)
    original_strerror = os.strerror

    def script_strerror(code):
        if type(code) is int and is_script_file(sys._getframe(1).f_code.co_filename):
            own = wasi_for_linux.get(code)
            if own is None and code in table:
                return f"Unknown error {code}"
            code = code if own is None else own
        return original_strerror(code)

    patch(os, "strerror", script_strerror)
