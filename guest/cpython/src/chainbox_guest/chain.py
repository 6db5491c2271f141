"""The export: one chain, a `RunRequest` in and a `Finish` out."""

import traceback
import warnings

from .messages import _JSON_DECODE, _JSON_ENCODE, _internal_error, _script_error, _wire
from .protocol import PROTOCOL_VERSION, WORKSPACE
from .reports import _head, _head_tail, _safe_str
from .script import SCRIPT_FILENAME, cell_filename, compile_script
from .session import _Session
from .stale import _STALE_CONTAINERS, _rehash_stale_containers


def run_chain(request, host, workspace=WORKSPACE, reseed=None):
    """Runs one chain: a `RunRequest` (JSON text) in, a `Finish` (JSON text)
    out. `host` has the imports of the `host` interface: `call`, `start`,
    `wait`, `cancel`, `load_artifact`, `stdout`, and `cell` (called only
    for a session's run, one with `cells` or `session`). `reseed`, if
    given, is called before the script runs unless the run continues a
    session this instance kept (`continued`: its randomness goes on where
    the last cell left it). Never raises: an exception escaping `run` would
    trap the whole instance."""
    try:
        finish = _run(request, host, workspace, reseed)
    except BaseException as exc:
        try:
            finish = _internal_error(f"the guest failed: {type(exc).__name__}: {_head(_safe_str(exc), 2000)}")
        except BaseException:
            finish = _internal_error("the guest failed")
    try:
        return _wire(_JSON_ENCODE(finish))
    except BaseException:
        try:
            return _JSON_ENCODE(_internal_error("the guest could not encode the chain's result"))
        except BaseException:
            return '{"result":{"status":"error","compile":false,"exc_type":"InternalError","message":"the guest failed","line":null,"traceback":"","memory_limit":false},"warnings":[]}'


def _run(request, host, workspace, reseed=None):
    if _STALE_CONTAINERS:
        _rehash_stale_containers()
    try:
        req = _JSON_DECODE(request)
        version = req["version"]
        if version != PROTOCOL_VERSION:
            return _internal_error(f"protocol version mismatch: host {version}, guest {PROTOCOL_VERSION}")
        script = req["script"]
        tools = [(t["name"], list(t["params"])) for t in req["tools"]]
        limits = dict(req["limits"])
        if not isinstance(script, str) or not all(isinstance(n, str) for n, _ in tools):
            raise TypeError("script and tool names must be strings")
        # A session's earlier cells (absent, or empty, for a plain chain).
        cells = None
        if "cells" in req:
            cells = req["cells"]
            if type(cells) is not list or not all(isinstance(c, str) for c in cells):
                raise TypeError("cells must be a list of strings")
            cells = cells or None
        # A session's cell (its first one too), and whether this instance
        # ran the earlier ones already and kept their namespace.
        session = req.get("session", False)
        continued = req.get("continued", False)
        if type(session) is not bool or type(continued) is not bool:
            raise TypeError("session and continued must be booleans")
        if session and cells is None:
            cells = []
    except (ValueError, KeyError, TypeError) as exc:
        return _internal_error(f"malformed run request message: {exc}")
    if reseed is not None and not continued:
        reseed()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning: CPython would print it to stderr
            code = compile_script(script, SCRIPT_FILENAME if cells is None else cell_filename(len(cells)))
    except Exception as exc:
        # SyntaxError (and IndentationError...), or the parser's own limits
        # (RecursionError, MemoryError, ValueError for NUL bytes).
        line = exc.lineno if isinstance(exc, SyntaxError) else None
        message = exc.msg if isinstance(exc, SyntaxError) and exc.msg else _safe_str(exc)
        tb = "".join(traceback.format_exception_only(type(exc), exc))
        error = _script_error(type(exc).__name__, _head(message), compile=True, line=line, tb=_head_tail(tb))
        return {"result": error, "warnings": []}
    if continued:
        # Run already, on this instance: their sources only, for tracebacks.
        cells = [(cell, None) for cell in cells or ()]
    elif cells is not None:
        cells = [(cell, _compile_earlier_cell(cell, index)) for index, cell in enumerate(cells)]
    return _Session(host, tools, limits).run(code, script, workspace, cells, continued)


def _compile_earlier_cell(source, index):
    """A session's earlier cell `index`, compiled; None when it does not
    compile (then it is skipped: it failed when it ran as the new cell)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile_script(source, cell_filename(index))
    except Exception:
        return None
