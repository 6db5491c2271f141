"""The "coroutine ... was never awaited" warnings of a chain: a tool call it
made and never awaited (so never ran), with the script line that made it."""

import warnings

from . import current
from .script import SCRIPT_FILENAME


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
    chain runs)."""
    session = current.running
    if session is None:
        return _ORIGINAL_WARN_UNAWAITED(coro)
    line = None
    for filename, lineno, _function in getattr(coro, "cr_origin", None) or ():
        if filename == SCRIPT_FILENAME:
            line = lineno
            break
    session.warnings.append({"message": f"coroutine '{coro.__qualname__}' was never awaited", "line": line})
    session.hooked_warnings += 1


_ORIGINAL_WARN_UNAWAITED = getattr(warnings, "_warn_unawaited_coroutine", None)
