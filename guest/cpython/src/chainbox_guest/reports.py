"""The error report of a chain: its message and traceback, cut to size, with
the guest's own frames left out."""

import os
import traceback

from .script import SCRIPT_FILENAME, is_script_file

# Most characters of an error message, and of each end of a traceback, the
# guest reports (the monty guest's MAX_REPORTED_BYTES): the host cuts them
# much shorter; cutting here keeps a huge message from costing a huge copy.
MAX_REPORTED_CHARS = 64 * 1024
MISSING_AWAIT_HINT = " (a tool call returns an awaitable: did you forget `await` before it?)"
# Frames of this package's files are the guest's machinery: tracebacks leave
# them out.
_GUEST_DIR = os.path.dirname(__file__)


def _head(text, limit=MAX_REPORTED_CHARS):
    return text if len(text) <= limit else text[:limit]


def _head_tail(text, limit=MAX_REPORTED_CHARS):
    """The first and last `limit` characters of `text`, as the monty guest's
    HeadTail keeps them."""
    if len(text) <= 2 * limit:
        return text
    return text[:limit] + "\n[...]\n" + text[-limit:]


def _safe_str(exc):
    try:
        return str(exc)
    except BaseException:
        return f"<exception str() failed>"


def _script_line(exc, filename=SCRIPT_FILENAME):
    """Line of the innermost frame of the script in the traceback: of the
    file `filename` (in a session, the new cell's: a line of an earlier
    cell is not one of the script the chain reports)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _prune(te, seen):
    """Leaves the guest's machinery out of a traceback: its own frames, and
    whatever ran the script before the script's first frame."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if os.path.dirname(f.filename) != _GUEST_DIR]
    first = next((i for i, f in enumerate(frames) if is_script_file(f.filename)), 0)
    te.stack = traceback.StackSummary.from_list(frames[first:])
    _prune(te.__cause__, seen)
    _prune(te.__context__, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _prune(sub, seen)


def _format_traceback(exc):
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        _prune(te, set())
        return _head_tail("".join(te.format()))
    except BaseException:
        # Formatting can fail (out of memory, a hostile __str__): say less.
        return f"{type(exc).__name__}: {_head(_safe_str(exc))}"


def _is_missing_await(exc, message):
    """A TypeError about a coroutine or future is, in a chain, almost always
    a tool call used without `await`."""
    return isinstance(exc, TypeError) and any(w in message for w in ("coroutine", "future", "Future"))
