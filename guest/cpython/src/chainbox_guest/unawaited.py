"""The "coroutine ... was never awaited" warnings of a chain: a tool call it
made and never awaited (so never ran), with the script line that made it."""

import warnings

from . import current
from .script import is_script_file


# The frame that creates a tool's coroutine is the script's own (a helper,
# lambda or generator expression of the script is in main.py too; list
# comprehensions are inlined). Deeper tracking computed the line of every
# frame behind each coroutine made, asyncio's among them: measured a fifth
# of each tool call's cost in the component.
_ORIGIN_DEPTH = 1


def _warn_unawaited_coroutine(coro):
    """Replaces `warnings._warn_unawaited_coroutine`, which CPython calls
    when a coroutine that never ran is collected: records the warning with
    the script line that created it (from `cr_origin`, tracked while a
    chain runs).

    In a session, an earlier cell's coroutines warn nothing (as its output,
    `RunRequest.cells`): those collected while it runs (or by the collection
    that ends the earlier cells), and, later, those its own top-level code
    made. The line is the new cell's only: a coroutine a function of an
    earlier cell made while the new cell ran warns without one."""
    session = current.running
    if session is None:
        return _ORIGINAL_WARN_UNAWAITED(coro)
    session.hooked_warnings += 1
    if session.replaying:
        return
    line = None
    for filename, lineno, function in getattr(coro, "cr_origin", None) or ():
        if filename == session.filename:
            line = lineno
            break
        if function == "<module>" and is_script_file(filename):
            return  # an earlier cell's top-level code made it
    session.warnings.append({"message": f"coroutine '{coro.__qualname__}' was never awaited", "line": line})


_ORIGINAL_WARN_UNAWAITED = getattr(warnings, "_warn_unawaited_coroutine", None)
