"""Sandbox refusals: imports of modules that are ways out, and the process
functions of `os`. They make escape attempts fail clearly; the sandbox
itself is the host's WASI context (no sockets, only the workspace)."""

import functools
import importlib.abc
import os
import sys


# Modules a chain may not import: ways out of the sandbox (processes,
# sockets, native code, signals) that WASI would refuse less clearly, or
# hang on. A submodule of one is refused too.
BLOCKED_MODULES = frozenset({
    "socket", "_socket", "ssl", "_ssl", "select", "selectors", "subprocess",
    "_posixsubprocess", "ctypes", "_ctypes", "multiprocessing",
    "_multiprocessing", "concurrent.futures.process", "signal", "_signal",
    "mmap", "fcntl", "termios", "tty", "pty", "resource", "socketserver",
    "http.client", "http.server", "urllib.request", "ftplib", "smtplib",
    "poplib", "imaplib", "xmlrpc", "webbrowser", "asyncio.subprocess",
    "pdb", "_thread_native",
})


@functools.lru_cache(maxsize=None)
def _is_blocked(fullname):
    # Cached: every chain checks every loaded module, and the answers for
    # the stdlib's are computed at build time (`_warm_up`), in the snapshot.
    parts = fullname.split(".")
    return any(".".join(parts[:i]) in BLOCKED_MODULES for i in range(1, len(parts) + 1))


class _BlockedImports(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path` while a chain runs."""

    def find_spec(self, fullname, path=None, target=None):
        if _is_blocked(fullname):
            raise ImportError(f"module '{fullname}' is not available in the chainbox sandbox", name=fullname)
        return None


# os functions that start or signal processes.
_OS_REFUSED = (
    "system", "popen", "fork", "forkpty", "kill", "killpg", "execl", "execle",
    "execlp", "execlpe", "execv", "execve", "execvp", "execvpe", "spawnl",
    "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp",
    "spawnvpe", "posix_spawn", "posix_spawnp", "startfile", "abort",
)
# Refused even where this build's os lacks them: the clearest answer to
# the first thing a script tries.
_OS_ALWAYS_REFUSED = ("system", "popen")


def _refused(name):
    def refused(*args, **kwargs):
        raise PermissionError(f"os.{name}() is not available in the chainbox sandbox: a chain cannot run programs")

    refused.__name__ = refused.__qualname__ = name
    return refused


def _install_refusals(patch, stack):
    """Refusals: blocked imports (hidden from sys.modules too, where the
    stdlib's own imports left them), process functions of os."""
    finder = _BlockedImports()
    sys.meta_path.insert(0, finder)
    stack.callback(sys.meta_path.remove, finder)
    for name in [n for n in sys.modules if _is_blocked(n)]:
        stack.callback(sys.modules.__setitem__, name, sys.modules.pop(name))
    for name in _OS_REFUSED:
        if hasattr(os, name) or name in _OS_ALWAYS_REFUSED:
            patch(os, name, _refused(name))
