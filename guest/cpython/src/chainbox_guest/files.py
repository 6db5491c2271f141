"""Files as on Linux where WASI differs: an empty path names no file, and a
file opened with `'a+'` reads where `seek` put it."""

import builtins
import errno
import functools
import io
import os


# The functions of `os` that take a path first (and a second one for the
# two-path calls), and `open`.
_PATH_FUNCTIONS = (
    "stat", "lstat", "listdir", "scandir", "mkdir", "rmdir", "remove", "unlink", "chdir", "access",
    "utime", "truncate", "chmod", "chown", "lchown", "readlink", "open", "statvfs", "mkfifo", "mknod",
    "pathconf", "getxattr", "listxattr", "setxattr", "removexattr",
)
_TWO_PATH_FUNCTIONS = ("rename", "replace", "link", "symlink")


def _install_empty_path_errors(patch):
    """An empty path names no file, as on Linux, where every call given one
    fails with ENOENT (`[Errno 2] No such file or directory: ''`). WASI
    resolves `''` as the directory it is relative to, so `os.listdir('')`
    listed the workspace, `os.path.exists('')` was True and
    `os.makedirs(os.path.dirname('a.txt'), exist_ok=True)` succeeded. The
    `os.path` predicates, `os.walk` and `os.makedirs` go through these."""

    def no_such_file(*filenames):
        return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), filenames[0], None, *filenames[1:])

    def empty(path):
        return (path == "" or path == b"") and type(path) in (str, bytes)

    def guarded(function, names):
        @functools.wraps(function)
        def call(*args, **kwargs):
            paths = args[: len(names)] + tuple(kwargs[n] for n in names[len(args) :] if n in kwargs)
            if any(empty(path) for path in paths):
                raise no_such_file(*paths)
            return function(*args, **kwargs)

        return call

    for name in _PATH_FUNCTIONS:
        if hasattr(os, name):
            patch(os, name, guarded(getattr(os, name), ("path",)))
    for name in _TWO_PATH_FUNCTIONS:
        if hasattr(os, name):
            patch(os, name, guarded(getattr(os, name), ("src", "dst")))
    opener = guarded(_open_appending_as_linux, ("file",))
    patch(io, "open", opener)
    patch(builtins, "open", opener)


_IO_OPEN = io.open


class _AppendingFileIO(io.FileIO):
    """A file opened for appending and reading (`'a+'`) as on Linux: every
    write goes to the end, and `seek` moves where reads start. WASI pins an
    `O_APPEND` descriptor's position at the end (`seek(0)` then `read()` was
    `''`), so the descriptor is opened without it and each write seeks to the
    end first, as the kernel does for `O_APPEND`."""

    def write(self, data):
        os.lseek(self.fileno(), 0, os.SEEK_END)
        return super().write(data)


_AppendingFileIO.__module__, _AppendingFileIO.__name__, _AppendingFileIO.__qualname__ = "_io", "FileIO", "FileIO"


def _open_appending_as_linux(
    file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None
):
    """`open`, with `'a+'` (and `'ab+'`) as on Linux (see `_AppendingFileIO`);
    every other mode is `io.open` itself. Builds the layers as `io.open`
    does: raw, buffered, text."""
    # 'a+', 'at+', 'ab+' in any order; anything else (and io.open's own
    # refusals) is io.open's.
    canonical = "".join(sorted(mode)) if isinstance(mode, str) else None
    binary = canonical == "+ab"
    text_arguments = (encoding, errors, newline) != (None, None, None)
    if canonical not in ("+a", "+at", "+ab") or (binary and text_arguments):
        return _IO_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)

    def without_append(path, flags):
        return (opener or os.open)(path, flags & ~os.O_APPEND)

    raw = _AppendingFileIO(file, "a+", closefd, opener=without_append)
    try:
        line_buffering = buffering == 1 or (buffering < 0 and raw.isatty())
        if buffering == 0:
            if not binary:
                raise ValueError("can't have unbuffered text I/O")
            return raw
        if buffering in (1, -1):
            buffering = io.DEFAULT_BUFFER_SIZE
        buffered = io.BufferedRandom(raw, buffering)
        if binary:
            return buffered
        text = io.TextIOWrapper(buffered, io.text_encoding(encoding), errors, newline, line_buffering)
        text.mode = mode
        return text
    except BaseException:
        raw.close()
        raise


_open_appending_as_linux.__name__ = _open_appending_as_linux.__qualname__ = "open"
