"""chainbox's CPython guest: runs one model-written Python "chain" script.

This module is the app of a WebAssembly component built with componentize-py
(world `chain` of `wit/chain.wit`). The host calls the exported `run` with a
`RunRequest` (JSON, `guest/protocol`) and gets a `Finish` back. The script
reaches the outside world only through the four `host` imports:

- each tool of the request is a global `async def`; awaiting it sends a
  `ToolCall` with `host.start` and parks on a future that the guest's event
  loop resolves from `host.wait`'s `Completions`;
- `load_artifact(handle)` asks `host.load_artifact` for an offloaded value;
- `print` output streams out through `host.stdout`;
- sleeps (`time.sleep`, `asyncio.sleep`, timeouts) are `host.wait` calls
  with a timeout, so a sleeping chain parks on the host.

It is the CPython twin of the monty guest (`guest/runtime/src/main.rs`,
the behavioural spec); the chain's answer and the value rules follow the
corpus reference runner `tests/corpus/reference.py`.

Everything at module level runs once, at build time: componentize-py
imports this module and snapshots the interpreter, so the stdlib imported
here is pre-initialised in every chain (and, in a componentize-py build,
the only stdlib there is: a module not imported here, directly or by one
that is, is a ModuleNotFoundError in a chain). All per-chain state lives
in a `_Session`. The patches of the interpreter that are the same for
every chain (`_patch_interpreter`: refusals, stdio, sleeps, event loops)
are made once at build time, in the snapshot; natively they are made per
chain and undone when `run` returns, as the per-chain ones always are, so
`run` can be called twice (the native tests do) without one chain leaking
into the next.

The Python-level refusals below (blocked imports, `os.system`...) make
escape attempts fail clearly; the sandbox itself is the host's WASI
context, which must grant no sockets and only the workspace directory.

Built by the host's build.rs (~20 s, ~23 MB), which runs:

    componentize-py -d guest/cpython/wit -w chain componentize chainbox_guest \
        -p guest/cpython/src -o target/guest/chainbox-cpython.wasm

Tests: `python3 guest/cpython/tests/test_guest.py` (native, with a fake
host); the component itself is tested through the engine by `tests/it`.
"""

# --- the stdlib, pre-initialised ------------------------------------------

import importlib

# Modules imported at build time, so they are in the snapshot. A chain can
# import these (and whatever they import themselves). One that fails to
# import in this build is skipped.
PRELOADED_MODULES = (
    # data and text
    "json", "re", "string", "textwrap", "difflib", "unicodedata", "html",
    "html.parser", "csv", "io", "pprint", "reprlib", "base64", "binascii",
    "codecs", "struct", "array", "hashlib", "hmac", "secrets", "uuid",
    "zlib", "gzip", "shlex", "fnmatch", "glob", "tomllib", "email",
    "email.message", "email.utils", "xml.etree.ElementTree", "ipaddress",
    "urllib.parse", "keyword", "colorsys", "locale", "xml.dom.minidom",
    "mimetypes", "quopri", "pickle", "argparse",
    # numbers
    "math", "cmath", "statistics", "decimal", "fractions", "random",
    "numbers", "operator", "bisect", "heapq",
    # structure
    "collections", "collections.abc", "dataclasses", "enum", "typing",
    "types", "abc", "copy", "functools", "itertools", "contextlib",
    "graphlib", "weakref", "inspect", "ast", "string.templatelib",
    # time and dates
    "time", "datetime", "calendar", "zoneinfo",
    # files in the workspace
    "os", "os.path", "pathlib", "shutil", "tempfile", "sqlite3", "zipfile",
    "tarfile", "filecmp",
    # async
    "asyncio", "asyncio.runners", "asyncio.events", "asyncio.base_events",
    "queue", "contextvars", "sched",
    # diagnostics
    "warnings", "traceback", "linecache", "gc", "logging", "sys", "timeit",
)

# What the stdlib imports only inside a function, on first use: without
# these in the snapshot `datetime.strptime`, `"é".encode("utf-16")`,
# `codecs.encode(s, "rot13")`, `email.message_from_string` and minidom's
# `parseString` would fail at run time with ModuleNotFoundError or
# LookupError ("unknown encoding"). Found by importing every name of
# `sys.stdlib_module_names` in a chain and calling the usual functions.
LAZILY_IMPORTED_MODULES = (
    "_strptime", "_pylong", "stringprep", "email.parser", "email.feedparser",
    "email.policy", "email.generator", "email.headerregistry",
    "email.contentmanager", "email.mime.text", "email.mime.multipart",
    "importlib.resources", "xml.dom.expatbuilder", "xml.dom.pulldom",
    "configparser", "http", "getopt", "optparse", "platform",
)


def _codec_modules():
    """Every `encodings.<codec>` module of this build (looked up by name on
    a codec's first use)."""
    import encodings
    import os

    directory = os.path.dirname(encodings.__file__)
    names = sorted(f[:-3] for f in os.listdir(directory) if f.endswith(".py") and f != "__init__.py")
    return tuple(f"encodings.{name}" for name in names)


for _name in PRELOADED_MODULES + LAZILY_IMPORTED_MODULES + _codec_modules():
    try:
        importlib.import_module(_name)
    except Exception:  # not in this build (`encodings.mbcs`, `_bz2`): skipped
        pass

import ast
import asyncio
import asyncio.events
import asyncio.runners
import builtins
import contextlib
import dataclasses
import datetime
import decimal
import dis
import errno
import fractions
import functools
import gc
import hashlib
import hmac
import importlib.abc
import io
import json
import linecache
import math
import operator
import os
import random
import re
import sys
import time
import traceback
import types
import warnings

# The bindings exist only inside a componentize-py build; natively (the
# tests) there is no `wit_world`, and a fake host is passed to `run_chain`.
try:
    import wit_world
    from wit_world.imports import host as _wit_host
except ImportError:
    wit_world = None
    _wit_host = None


# --- the contract ---------------------------------------------------------

PROTOCOL_VERSION = 4  # guest/protocol PROTOCOL_VERSION
MAX_VALUE_DEPTH = 128  # guest/protocol MAX_VALUE_DEPTH
# Most characters of an error message, and of each end of a traceback, the
# guest reports (the monty guest's MAX_REPORTED_BYTES): the host cuts them
# much shorter; cutting here keeps a huge message from costing a huge copy.
MAX_REPORTED_CHARS = 64 * 1024
SCRIPT_FILENAME = "main.py"
WORKSPACE = "/workspace"
LOAD_ARTIFACT_FN = "load_artifact"
ANSWER = "__chain_answer__"  # the name reference.py's compile_script assigns
# A line of `print` output longer than this streams out without a newline.
STDOUT_FLUSH_AT = 8 * 1024
MISSING_AWAIT_HINT = " (a tool call returns an awaitable: did you forget `await` before it?)"
# Frames of this file are the guest's machinery: tracebacks leave them out.
_GUEST_FILE = __file__


def _script_error(exc_type, message, *, compile=False, line=None, tb=""):
    return {
        "status": "error",
        "compile": compile,
        "exc_type": exc_type,
        "message": message,
        "line": line,
        "traceback": tb,
        "memory_limit": False,
    }


def _internal_error(message):
    """A `Finish` for a chain that ended before (or outside) the script."""
    return {"result": _script_error("InternalError", message), "warnings": []}


# One encoder for every message: `json.dumps(..., ensure_ascii=False)`
# builds a new one per call, a visible share of each tool call's cost.
# Both are bound here, at build time: a script that replaces `json.dumps`
# or `json.loads` in its own chain cannot break the guest's messages. Where
# the stdlib's C accelerator is there (it is in the component), they call
# it directly: `JSONEncoder.encode` and `JSONDecoder.decode` are two Python
# frames and a regex each, a visible share of every tool call.
def _json_encoder():
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(ensure_ascii=False).encode

    def unencodable(value):
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

    # No circular-reference markers: every message is built by `to_json`,
    # which is depth-bounded, or by the guest itself.
    encoder = make(None, unencodable, json.encoder.encode_basestring, None, ": ", ", ", False, False, True)
    join = "".join

    def encode(value):
        return join(encoder(value, 0))

    return encode


def _json_scanner():
    """`scan(text, index) -> (value, end)`: the JSON value at `index`;
    raises StopIteration or ValueError where there is none."""
    make = getattr(json.scanner, "c_make_scanner", None)
    if make is None:
        return json.JSONDecoder().raw_decode
    return make(json.JSONDecoder())


def _json_decoder():
    scan = _JSON_SCAN

    def decode(text):
        try:
            value, end = scan(text, 0)
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text) and text[end:].strip():
            raise ValueError(f"Extra data: char {end}")
        return value

    return decode


_JSON_ENCODE = _json_encoder()
_JSON_SCAN = _json_scanner()
_JSON_DECODE = _json_decoder()


def _encode(message):
    """JSON text for the host; raises if it could not cross (a lone
    surrogate in a str cannot be UTF-8, a huge int has no decimal form)."""
    text = _JSON_ENCODE(message)
    if not text.isascii():  # O(1): CPython knows; only non-ASCII can fail
        text.encode("utf-8")
    return text


def _wire(text):
    """`text` made UTF-8-safe for output the guest must deliver anyway
    (stdout, the Finish): lone surrogates become U+FFFD-like '?'."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


# --- values across the boundary (reference.py to_json / key_string) -------


def to_json(value, depth=0):
    """The guest's Python→JSON conversion: like `json.dumps`, but tuples,
    sets and frozensets become arrays, dataclass instances objects of their
    fields, and non-finite floats are refused. TypeError for anything else."""
    if depth > MAX_VALUE_DEPTH:
        raise TypeError(f"value nested deeper than {MAX_VALUE_DEPTH} levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"float {value} is not JSON compliant")
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key_string(k): to_json(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def key_string(key):
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return repr(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _to_json_in_script(value):
    """`to_json` called on the script's behalf: its own recursion must not
    eat the script's recursion limit (monty converts natively)."""
    if type(value) in _SCALARS:
        # Most arguments: no recursion, and no walk of the stack for it.
        return value
    limit = sys.getrecursionlimit()
    depth = _stack_depth()
    if limit < depth + MAX_VALUE_DEPTH + 50:
        sys.setrecursionlimit(depth + MAX_VALUE_DEPTH + 50)
        try:
            return to_json(value)
        finally:
            sys.setrecursionlimit(limit)
    return to_json(value)


# The types `to_json` returns unchanged (bool is not int's subclass here:
# `type` is exact). float is not among them: a NaN is refused.
_SCALARS = frozenset({str, int, bool, type(None)})


def _stack_depth():
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


# How each CallOutcome status that is not "ok" reaches the script.
_OUTCOME_EXCEPTIONS = {
    "error": RuntimeError,
    "denied": PermissionError,
    "timeout": TimeoutError,
    "invalid": ValueError,
    "not_found": NameError,
}


def _outcome_value(outcome):
    """What awaiting a call with this `CallOutcome` (decoded JSON) gives:
    its value, or the exception it raises."""
    if isinstance(outcome, dict):
        status = outcome.get("status")
        if status == "ok" and "value" in outcome:
            return outcome["value"]
        exc_type = _OUTCOME_EXCEPTIONS.get(status)
        if exc_type is not None and isinstance(outcome.get("message"), str):
            raise exc_type(outcome["message"])
    raise RuntimeError(f"malformed call outcome message: {_short_repr(outcome)}")


def _decode_call_outcome(text):
    """The decoded `CallOutcome` of a host `call`; a malformed one is the
    call's failure, as in a `Completions`."""
    try:
        return _JSON_DECODE(text)
    except ValueError as exc:
        raise RuntimeError(f"malformed call outcome message: {exc}") from None


def _decode_outcome(text):
    """What awaiting a call whose encoded `CallOutcome` is `text` gives."""
    # The host writes a success as exactly this head, the value and "}":
    # scanning the value alone skips a dict and its two keys per call (the
    # tool calls' hot path). Anything else takes the general path.
    if text.startswith(_OK_HEAD):
        try:
            value, end = _JSON_SCAN(text, _OK_HEAD_LEN)
        except (StopIteration, ValueError):
            pass
        else:
            if end == len(text) - 1 and text[end] == "}":
                return value
    return _outcome_value(_decode_call_outcome(text))


_OK_HEAD = '{"status":"ok","value":'
_OK_HEAD_LEN = len(_OK_HEAD)


def _short_repr(value):
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


# --- stdout ---------------------------------------------------------------


class _HostStdout(io.TextIOBase):
    """`sys.stdout` of a chain: buffered per line and flushed before every
    host call, so the host sees output in order with tool calls and loses
    at most one partial line if the chain is killed."""

    def __init__(self, host):
        super().__init__()
        self._host = host
        self._line = []
        self._size = 0

    def writable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._line.append(text)
        self._size += len(text)
        if "\n" in text or self._size >= STDOUT_FLUSH_AT:
            self.flush()
        return len(text)

    def flush(self):
        if self._line:
            text = "".join(self._line)
            self._line.clear()
            self._size = 0
            self._host.stdout(_wire(text))


class _Discard(io.TextIOBase):
    """`sys.stderr` of a chain: the monty guest has none, so it goes nowhere."""

    def writable(self):
        return True

    def write(self, text):
        return len(text)


# --- the event loop -------------------------------------------------------


class _HostSelector:
    """The selector of a `GuestLoop`. asyncio calls `select(timeout)` when
    every ready callback has run: here it waits on the host for the
    loop's pending tool calls (or sleeps on the host until the next timer),
    then resolves the finished calls' futures."""

    def __init__(self, loop):
        self._loop = loop

    def select(self, timeout):
        loop, session = self._loop, self._loop.session
        ids = [i for i, fut in session.pending.items() if not fut.done() and fut.get_loop() is loop]
        if not ids:
            if timeout is None:
                # Nothing can ever wake this loop up: in CPython it would
                # hang forever; a chain must end.
                raise RuntimeError(
                    "deadlock: every task of the chain waits for something that can never happen "
                    "(no tool call or timer is pending)"
                )
            if timeout > 0:
                session.sleep_on_host(timeout)
            return []
        session.stdout.flush()
        answer = session.host.wait(_encode({"ids": ids}), _nanoseconds(timeout))
        session.resolve(answer, ids)
        return []

    def close(self):
        pass


def _nanoseconds(seconds):
    if seconds is None:
        return None
    return min(max(0, int(seconds * 1e9)), 2**64 - 1)


class GuestLoop(asyncio.BaseEventLoop):
    """asyncio's loop on the host: `asyncio.run()` cannot work in WASI (its
    selector loop wants a socketpair), so every loop a chain gets is this
    one. Timers, tasks, gather, wait_for... are BaseEventLoop's own; only
    the waiting (`_HostSelector.select`) is the host's."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self._selector = _HostSelector(self)

    def _process_events(self, event_list):
        # `select` already resolved the finished calls' futures.
        pass

    def _write_to_self(self):
        # No other thread can wake this loop up.
        pass


class _GuestPolicy:
    """The event loop policy while a chain runs: every new loop is a
    `GuestLoop`, and `get_event_loop()` outside a running loop gives one
    (as CPython did up to 3.13), so older `get_event_loop().run_until_complete`
    scripts work too."""

    def __init__(self):
        self._loop = None

    def get_event_loop(self):
        if self._loop is None or self._loop.is_closed():
            self._loop = self.new_event_loop()
        return self._loop

    def set_event_loop(self, loop):
        self._loop = loop

    def new_event_loop(self):
        return GuestLoop(_current_session())


def _guest_asyncio_run(main, *, debug=None, loop_factory=None):
    """`asyncio.run` for a chain: the same steps as CPython's (run the
    coroutine, cancel what is left, close), on a `GuestLoop`."""
    if asyncio.events._get_running_loop() is not None:
        raise RuntimeError("asyncio.run() cannot be called from a running event loop")
    if not asyncio.iscoroutine(main):
        raise ValueError(f"a coroutine was expected, got {main!r}")
    session = _current_session()
    loop = loop_factory() if loop_factory is not None else GuestLoop(session)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            asyncio.runners._cancel_all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


# --- sandbox refusals -----------------------------------------------------

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


# --- "never awaited" warnings ----------------------------------------------

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
    session = _SESSION
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


# --- error reports --------------------------------------------------------


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


def _script_line(exc):
    """Line of the innermost frame of the script in the traceback."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _prune(te, seen):
    """Leaves the guest's machinery out of a traceback: its own frames, and
    whatever ran the script before the script's first frame."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if f.filename != _GUEST_FILE]
    first = next((i for i, f in enumerate(frames) if f.filename == SCRIPT_FILENAME), 0)
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


# CPython's "Did you mean": `_suggestions._generate_suggestions`, the C code
# (`_Py_CalculateSuggestions`) traceback.py uses, as the monty guest does
# (`monty::closest_name`, a port of it). Run natively on a CPython without
# that module (the tests, 3.11), the same algorithm in Python: on the names'
# UTF-8 bytes, with no limit on the name's own length.
_MOVE_COST, _CASE_COST, _MAX_STRING_SIZE, _MAX_CANDIDATE_ITEMS = 2, 1, 40, 750


def closest_name(name, candidates):
    candidates = list(candidates)
    try:
        from _suggestions import _generate_suggestions
    except ImportError:
        return _closest_name(name, candidates)
    return _generate_suggestions(candidates, name)


def _closest_name(name, candidates):
    if len(candidates) >= _MAX_CANDIDATE_ITEMS:
        return None
    wrong = name.encode()
    best, best_distance = None, None
    for candidate in candidates:
        if candidate == name:
            continue
        item = candidate.encode()
        limit = (len(wrong) + len(item) + 3) * _MOVE_COST // 6
        if best_distance is not None:
            limit = min(limit, best_distance - 1)
        distance = _levenshtein(wrong, item, limit)
        if distance <= limit:
            best, best_distance = candidate, distance
    return best


def _substitution_cost(a, b):
    if a == b:
        return 0
    lower = lambda c: c + 32 if 65 <= c <= 90 else c
    return _CASE_COST if lower(a) == lower(b) else _MOVE_COST


def _levenshtein(a, b, limit):
    """Weighted edit distance of two byte strings, or `limit + 1` as soon as
    it must exceed it."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    a, b = a[prefix:], b[prefix:]
    suffix = 0
    while suffix < min(len(a), len(b)) and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if suffix:
        a, b = a[:-suffix], b[:-suffix]
    if not a or not b:
        return (len(a) + len(b)) * _MOVE_COST
    if len(a) > _MAX_STRING_SIZE or len(b) > _MAX_STRING_SIZE:
        return limit + 1
    if len(b) < len(a):
        a, b = b, a
    if (len(b) - len(a)) * _MOVE_COST > limit:
        return limit + 1
    row = list(range(_MOVE_COST, _MOVE_COST * (len(a) + 1), _MOVE_COST))
    result = 0
    for bindex, bchar in enumerate(b):
        distance = result = bindex * _MOVE_COST
        minimum = sys.maxsize
        for index, achar in enumerate(a):
            substitute = distance + _substitution_cost(bchar, achar)
            distance = row[index]
            insert_delete = min(result, distance) + _MOVE_COST
            result = min(insert_delete, substitute)
            row[index] = result
            minimum = min(minimum, result)
        if minimum > limit:
            return limit + 1
    return result


# --- compiling the script (reference.py compile_script) -------------------


def compile_script(source, filename=SCRIPT_FILENAME):
    """The script as a code object whose last statement, if an expression,
    assigns the chain's answer; top-level `await` allowed."""
    tree = ast.parse(source, filename)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        # Each new node gets the expression's location (not a walk of the
        # whole tree with `ast.fix_missing_locations`: a third of a trivial
        # chain's guest time).
        target = ast.copy_location(ast.Name(ANSWER, ast.Store()), last)
        tree.body[-1] = ast.copy_location(ast.Assign(targets=[target], value=last.value), last)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


# --- one chain ------------------------------------------------------------

_SESSION = None  # the running chain's _Session, for the patched stdlib


def _current_session():
    if _SESSION is None:
        raise RuntimeError("no chain is running")
    return _SESSION


class _Session:
    """One chain: its host, tools, pending calls, output and warnings."""

    def __init__(self, host, tools, limits):
        self.host = host
        self.tools = tools  # [(name, [param, ...])]
        self.limits = limits
        self.next_id = 1
        self.pending = {}  # call id -> the future its `await` parks on
        self.stdout = _HostStdout(host)
        self.warnings = []
        self.hooked_warnings = 0

    # -- host calls

    def sleep_on_host(self, seconds):
        self.stdout.flush()
        self.host.wait(_encode({"ids": []}), _nanoseconds(seconds))

    def resolve(self, answer, ids):
        """Resolves the futures of the calls a `Completions` says finished."""
        try:
            done = _JSON_DECODE(answer)["done"]
            results = [(call_id, outcome) for call_id, outcome in done]
        except (ValueError, KeyError, TypeError) as exc:
            # As the monty guest: every awaited call fails with the reason.
            failure = RuntimeError(f"malformed completions message: {exc}")
            for call_id in ids:
                fut = self.pending.get(call_id)
                if fut is not None and not fut.done():
                    fut.set_exception(failure)
            return
        for call_id, outcome in results:
            fut = self.pending.get(call_id) if call_id in ids else None
            if fut is not None and not fut.done():
                fut.set_result(outcome)

    def begin(self, message):
        """Starts one tool call on the host (what awaiting a tool does).
        Returns `(outcome, None)` when nothing else could run before the
        call answers (no ready callback, no timer, no other call in flight):
        the call ran to its end in one host `call`, without a trip through
        the event loop (a tenth of the cost of each awaited call in the
        component), and the first item is the encoded `CallOutcome`; else
        `(call_id, future)`, the call started on the host and the future
        resolved by the loop with the decoded one."""
        loop = asyncio.get_running_loop()
        if type(loop) is not GuestLoop or loop.session is not self:
            raise RuntimeError("a tool call can only run on the chain's own event loop")
        stdout = self.stdout
        if stdout._line:
            stdout.flush()
        pending = self.pending
        if not loop._ready and not loop._scheduled and (not pending or all(f.done() for f in pending.values())):
            return self.host.call(message), None
        call_id = self.next_id
        self.next_id += 1
        self.host.start(call_id, message)
        fut = loop.create_future()
        pending[call_id] = fut
        return call_id, fut

    def make_tool(self, name, params):
        begin = self.begin
        cancel = self.host.cancel
        pending = self.pending
        # The `ToolCall`'s head, encoded once: a call encodes its arguments
        # only (the C encoder's cost is per dict entry).
        head = '{"tool":' + _encode(name) + ',"args":'

        async def tool(*args, **kwargs):
            if len(args) > len(params):
                s = "" if len(params) == 1 else "s"
                raise TypeError(f"{name}() takes {len(params)} positional argument{s} but {len(args)} were given")
            arguments = {}
            for param, value in zip(params, args):
                arguments[param] = _to_json_in_script(value)
            for key, value in kwargs.items():
                if key in arguments:
                    raise TypeError(f"{name}() got multiple values for argument '{key}'")
                arguments[key] = _to_json_in_script(value)
            # One coroutine per call (this one): each costs its creation
            # and its origin. (No arguments: no encoder call.)
            outcome, fut = begin(head + (_encode(arguments) if arguments else "{}") + "}")
            if fut is None:
                return _decode_outcome(outcome)
            call_id = outcome
            try:
                outcome = await fut
            except asyncio.CancelledError:
                # The script stopped waiting (`wait_for`'s timeout, a
                # cancelled task): the host stops the tool, as cancelling
                # a task cancels its I/O. (A coroutine closed unfinished,
                # when the chain ends, leaves its call to the host.)
                cancel(call_id)
                raise
            finally:
                pending.pop(call_id, None)
            return _outcome_value(outcome)

        # The coroutine takes its name from these: "coroutine 'NAME' was
        # never awaited", repr, tracebacks. No module: a tool is the host's,
        # like a builtin, so call errors say "NAME() argument after * ..."
        # as on monty.
        tool.__name__ = tool.__qualname__ = name
        tool.__module__ = None
        return tool

    def make_load_artifact(self):
        session = self

        def load_artifact(handle):
            message = _encode({"handle": _to_json_in_script(handle)})
            session.stdout.flush()
            return _decode_outcome(session.host.load_artifact(message))

        return load_artifact

    # -- running

    def namespace(self):
        module = types.ModuleType("__main__")
        ns = module.__dict__
        ns["__builtins__"] = builtins
        for name, params in self.tools:
            ns[name] = self.make_tool(name, params)
        if LOAD_ARTIFACT_FN not in ns:
            ns[LOAD_ARTIFACT_FN] = self.make_load_artifact()
        return module

    def run(self, code, source, workspace):
        """Runs the compiled script; returns the `Finish`."""
        module = self.namespace()
        with contextlib.ExitStack() as stack:
            _Sandbox(self, module, source, workspace).install(stack)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    exc = None
                    with _recursion_limit(self.limits.get("max_recursion_depth")):
                        self.execute(code, module.__dict__)
                    result = self.answer(module.__dict__.get(ANSWER))
                except BaseException as raised:
                    exc = raised
                if exc is not None:
                    result = self.report(exc)
                    exc = None  # its frames hold the script's objects
                # Coroutines never awaited warn when collected: drop every
                # reference to what the script made, then collect.
                module.__dict__.clear()
                module = None
                gc.collect()
                self.stdout.flush()
            if not self.hooked_warnings:
                # This interpreter did not call the hook: take the warnings
                # it emitted instead (without lines).
                for w in caught:
                    if issubclass(w.category, RuntimeWarning) and "was never awaited" in str(w.message):
                        self.warnings.append({"message": str(w.message).split("\n")[0], "line": None})
        return {"result": result, "warnings": self.warnings}

    def execute(self, code, ns):
        # A script without top-level await runs as `python main.py` would: no
        # loop running, `asyncio.run(main())` works. One with top-level
        # await runs as the main task of a GuestLoop. (`eval` gives that
        # coroutine or None: an exact type test, not `asyncio.iscoroutine`,
        # whose isinstance against the `Coroutine` ABC missed the ABC cache
        # in every fresh instance.)
        result = eval(code, ns)
        if type(result) is types.CoroutineType:
            _guest_asyncio_run(result)

    def answer(self, value):
        """The script's answer as reference.py reports it. Raises what the
        script would raise printing it (a `__repr__` that fails, an int too
        long to write)."""
        try:
            output = to_json(value)
            _JSON_ENCODE(output)  # an int past sys.get_int_max_str_digits raises here
        except TypeError:
            output = repr(value)
        text = value if isinstance(value, str) else repr(value)
        return {"status": "ok", "output": output, "output_text": str.__str__(text)}

    def report(self, exc):
        """The `ScriptResult` error for an uncaught exception."""
        message = _head(_safe_str(exc))
        if _is_missing_await(exc, message):
            message += MISSING_AWAIT_HINT
        tb = _format_traceback(exc)
        if type(exc) is NameError:
            # CPython's hint, as the monty guest adds it: only the report gets
            # it (CPython's traceback printer adds it, `str(e)` stays plain).
            prefix, suffix = "name '", "' is not defined"
            if message.startswith(prefix) and message.endswith(suffix):
                candidates = [name for name, _ in self.tools] + [LOAD_ARTIFACT_FN]
                close = closest_name(message[len(prefix):-len(suffix)], candidates)
                if close is not None:
                    hint = f". Did you mean: '{close}'?"
                    if tb.rstrip("\n").endswith(message):
                        tb = tb.rstrip("\n") + hint + "\n"
                    message += hint
        return _script_error(type(exc).__name__, message, line=_script_line(exc), tb=tb)


@contextlib.contextmanager
def _recursion_limit(depth):
    """The script's recursion limit, counted from where the script starts
    (the guest's own frames, and the event loop's, come on top)."""
    old = sys.getrecursionlimit()
    if isinstance(depth, int) and depth > 0:
        sys.setrecursionlimit(_stack_depth() + depth + 30)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class _Sandbox:
    """Every change to the interpreter a chain runs under, each undone by
    the ExitStack it is installed on."""

    def __init__(self, session, module, source, workspace):
        self.session = session
        self.module = module
        self.source = source
        self.workspace = workspace

    def install(self, stack):
        global _SESSION
        session = self.session

        def set_session(value):
            global _SESSION
            _SESSION = value

        stack.callback(set_session, _SESSION)
        _SESSION = session

        if not _INTERPRETER_PATCHED:
            _patch_interpreter(stack)

        # Output: stdout to the host, flushed last (callbacks run in reverse).
        stack.callback(session.stdout.flush)
        _patch(stack, sys, "stdout", session.stdout)

        # The script's module, and its source for tracebacks and inspect.
        old_main = sys.modules.get("__main__")
        sys.modules["__main__"] = self.module
        stack.callback(_restore_item, sys.modules, "__main__", old_main)
        lines = self.source.splitlines(keepends=True)
        old_cache = linecache.cache.get(SCRIPT_FILENAME)
        linecache.cache[SCRIPT_FILENAME] = (len(self.source), None, lines, SCRIPT_FILENAME)
        stack.callback(_restore_item, linecache.cache, SCRIPT_FILENAME, old_cache)

        # Relative paths land in the workspace, when the host preopened it.
        if self.workspace is None:
            return
        if wit_world is not None:
            # In the component no run follows a chain's (the host drops the
            # instance), so the way back is not worth its WASI calls; and
            # the host's warm-up run of a spare instance, preopened with its
            # chain's workspace, has entered it already (a `chdir` is ~0.2
            # ms of WASI calls, listing the preopens the first time).
            if os.getcwd() != self.workspace:
                _chdir_quietly(self.workspace)
            return
        try:
            old_cwd = os.getcwd()
        except OSError:
            old_cwd = None
        try:
            os.chdir(self.workspace)
        except OSError:
            pass
        else:
            if old_cwd is not None:
                stack.callback(_chdir_quietly, old_cwd)


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

    _install_refusals(stack)


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
        if code.co_filename != SCRIPT_FILENAME or not isinstance(exc, _ERRNO_ERRORS) or id(exc) in renumbered:
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
        if type(code) is int and sys._getframe(1).f_code.co_filename == SCRIPT_FILENAME:
            own = wasi_for_linux.get(code)
            if own is None and code in table:
                return f"Unknown error {code}"
            code = code if own is None else own
        return original_strerror(code)

    patch(os, "strerror", script_strerror)


# guest/protocol `imports::C_MATH_FUNCTIONS`: the host's `c-math` function
# codes, by index.
C_MATH_FUNCTIONS = (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "cbrt", "erf", "erfc", "hypot",
)
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


_PRIME_61 = (1 << 61) - 1
_SEED_OF_RANDOM = random.Random.seed


def _hash_as_64_bit(x):
    """`hash(x)` of a finite or infinite float as 64-bit CPython computes
    it (the modulus 2**61 - 1; this wasm32 build's is 2**31 - 1), after the
    language reference's "Hashing of numeric types"."""
    if math.isinf(x):
        return 314159 if x > 0 else -314159
    numerator, denominator = x.as_integer_ratio()
    value = abs(numerator) % _PRIME_61 * pow(denominator, _PRIME_61 - 2, _PRIME_61) % _PRIME_61
    value = -value if numerator < 0 else value
    return -2 if value == -1 else value


_HASH = builtins.hash
_MASK_64 = (1 << 64) - 1


def _signed_64(value):
    value &= _MASK_64
    return value - (1 << 64) if value >> 63 else value


def _hash_rational(numerator, denominator):
    """The numeric hash of `numerator / denominator` modulo 2**61 - 1."""
    inverse = pow(denominator, _PRIME_61 - 2, _PRIME_61)
    if inverse == 0:  # the denominator is a multiple of the prime
        value = 314159
    else:
        value = abs(numerator) % _PRIME_61 * inverse % _PRIME_61
    value = -value if numerator < 0 else value
    return -2 if value == -1 else value


def _hash_tuple_lanes(lanes):
    """CPython's `tuplehash` (xxHash lanes) over the items' hashes, in 64 bits."""
    acc = 2870177450012600261
    for lane in lanes:
        acc = (acc + (lane & _MASK_64) * 14029467366897019727) & _MASK_64
        acc = ((acc << 31) | (acc >> 33)) & _MASK_64
        acc = (acc * 11400714785074694791) & _MASK_64
    acc = (acc + (len(lanes) ^ (2870177450012600261 ^ 3527539))) & _MASK_64
    return 1546275796 if acc == _MASK_64 else _signed_64(acc)


def _hash_frozenset_lanes(lanes):
    """CPython's `frozenset_hash` over the members' hashes, in 64 bits."""
    acc = 0
    for lane in lanes:
        h = lane & _MASK_64
        acc ^= (((h ^ 89869747) ^ (h << 16)) * 3644798167) & _MASK_64
    acc ^= ((len(lanes) + 1) * 1927868237) & _MASK_64
    acc ^= (acc >> 11) ^ (acc >> 25)
    acc = (acc * 69069 + 907133923) & _MASK_64
    return 590923713 if acc == _MASK_64 else _signed_64(acc)


_NESTED = object()


def _hash_64(value):
    """`hash(value)` as 64-bit CPython computes it, for what its result
    does not depend on the process (numbers, None, tuples, frozensets,
    ranges, timedeltas, and a `__hash__` written in Python); anything else
    (strings, bytes, identities) as this interpreter does. Tuples and
    frozensets are walked with a stack of their own, not Python recursion:
    CPython hashes data nested thousands deep."""
    leaf = _hash_leaf_64(value)
    if leaf is not _NESTED:
        return leaf
    stack = [(value, iter(value), [])]
    while True:
        container, items, lanes = stack[-1]
        for item in items:
            leaf = _hash_leaf_64(item)
            if leaf is _NESTED:
                stack.append((item, iter(item), []))
                break
            lanes.append(leaf)
        else:
            stack.pop()
            if type(container).__hash__ is tuple.__hash__:
                combined = _hash_tuple_lanes(lanes)
            else:
                combined = _hash_frozenset_lanes(lanes)
            if not stack:
                return combined
            stack[-1][2].append(combined)


def _hash_leaf_64(value):
    """`_hash_64` of anything but a tuple or frozenset, which are `_NESTED`."""
    kind = type(value)
    slot = kind.__hash__
    if slot is None or value is None:
        return 0xFCA86420 if value is None else _HASH(value)
    if slot is tuple.__hash__ or slot is frozenset.__hash__:
        return _NESTED
    if slot is int.__hash__:
        return _hash_rational(value, 1)
    if slot is float.__hash__:
        return _HASH(value) if value != value else _hash_as_64_bit(value)
    if slot is complex.__hash__:
        combined = (_hash_64(value.real) & _MASK_64) + 1000003 * (_hash_64(value.imag) & _MASK_64)
        combined = _signed_64(combined)
        return -2 if combined == -1 else combined
    if slot is range.__hash__:
        length = len(value)
        start = value.start if length else None
        step = value.step if length > 1 else None
        return _hash_tuple_lanes([_hash_64(length), _hash_64(start), _hash_64(step)])
    if slot is datetime.timedelta.__hash__:
        return _hash_tuple_lanes([_hash_64(value.days), _hash_64(value.seconds), _hash_64(value.microseconds)])
    if slot is decimal.Decimal.__hash__ and value.is_finite():
        return _hash_rational(*value.as_integer_ratio())
    if slot is fractions.Fraction.__hash__:
        return _hash_rational(value.numerator, value.denominator)
    if isinstance(slot, types.FunctionType):
        result = slot(value)
        if not isinstance(result, int):
            raise TypeError("__hash__ method should return an integer")
        if -(1 << 63) <= result < (1 << 63):
            return -2 if result == -1 else int(result)
        return _hash_rational(result, 1)
    return _HASH(value)


def _seed_as_64_bit(self, a=None, version=2):
    """`Random.seed`, but a float seeds as on 64-bit CPython, whose C
    `random_seed` takes its hash as a `size_t`: on this 32-bit build the
    same seed gave other numbers (`random.seed(3.5); random.random()`)."""
    if isinstance(a, float) and not math.isnan(a):
        a = _hash_as_64_bit(a) % (1 << 64)
    return _SEED_OF_RANDOM(self, a, version)


# Its arity errors name `Random.seed()`, as the method it replaces (they
# take the name from the code object).
_seed_as_64_bit.__code__ = _seed_as_64_bit.__code__.replace(co_name="seed", co_qualname="Random.seed")
_seed_as_64_bit.__name__, _seed_as_64_bit.__qualname__ = "seed", "Random.seed"


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

_GMTIME = time.gmtime


def _gmtime_as_glibc(*args):
    """`time.gmtime`, its zone named `GMT` (see `_patch_interpreter`); the
    C function checks the arguments, so its errors are its own."""
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
# build time).
_INTERPRETER_PATCHED = False


def _install_refusals(stack):
    """Refusals: blocked imports (hidden from sys.modules too, where the
    stdlib's own imports left them), process functions of os."""
    finder = _BlockedImports()
    sys.meta_path.insert(0, finder)
    stack.callback(sys.meta_path.remove, finder)
    for name in [n for n in sys.modules if _is_blocked(n)]:
        stack.callback(sys.modules.__setitem__, name, sys.modules.pop(name))
    for name in _OS_REFUSED:
        if hasattr(os, name) or name in _OS_ALWAYS_REFUSED:
            _patch(stack, os, name, _refused(name))


def _restore_item(mapping, key, old):
    if old is None:
        mapping.pop(key, None)
    else:
        mapping[key] = old


def _chdir_quietly(path):
    try:
        os.chdir(path)
    except OSError:
        pass


def _host_sleep(seconds):
    """`time.sleep` for a chain: parks it on the host."""
    if not isinstance(seconds, (int, float)):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as an integer")
    if seconds != seconds:
        raise ValueError("Invalid value NaN (not a number)")
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    _current_session().sleep_on_host(seconds)


# --- the export -----------------------------------------------------------


def run_chain(request, host, workspace=WORKSPACE):
    """Runs one chain: a `RunRequest` (JSON text) in, a `Finish` (JSON text)
    out. `host` has the four imports of the `host` interface: `start`,
    `wait`, `load_artifact`, `stdout`. Never raises: an exception escaping
    `run` would trap the whole instance."""
    try:
        finish = _run(request, host, workspace)
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


def _run(request, host, workspace):
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
    except (ValueError, KeyError, TypeError) as exc:
        return _internal_error(f"malformed run request message: {exc}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning: CPython would print it to stderr
            code = compile_script(script)
    except Exception as exc:
        # SyntaxError (and IndentationError...), or the parser's own limits
        # (RecursionError, MemoryError, ValueError for NUL bytes).
        line = exc.lineno if isinstance(exc, SyntaxError) else None
        message = exc.msg if isinstance(exc, SyntaxError) and exc.msg else _safe_str(exc)
        tb = "".join(traceback.format_exception_only(type(exc), exc))
        error = _script_error(type(exc).__name__, _head(message), compile=True, line=line, tb=_head_tail(tb))
        return {"result": error, "warnings": []}
    return _Session(host, tools, limits).run(code, script, workspace)


if wit_world is not None:

    class WitWorld(wit_world.WitWorld):
        """The component's export (componentize-py looks it up by this name)."""

        def run(self, request: str) -> str:
            global _ARMED
            if not _ARMED:
                _wit_host.arm(b"\0")
                _ARMED = True
            return run_chain(request, _wit_host)

    # Whether this instance has let the host find its guard page (the
    # `arm` import): the first `run` does, before any script.
    _ARMED = False


# --- the snapshot -----------------------------------------------------------

# The snapshot's dicts and sets whose keys hash otherwise in the component
# than when the snapshot was taken: componentize-py initialises the
# interpreter before the build splices 64-bit CPython's numeric hashes into
# libpython (guest/cpython/hashes), so a dict keyed by tuples, like
# `dataclasses._hash_action`, would miss every key. Found at build time by
# `_find_stale_containers`; each instance's first chain (the spare's warm-up,
# off a chain's path) re-inserts their keys with the new hashes.
_STALE_CONTAINERS = []


def _rehash_stale_containers():
    stale, _STALE_CONTAINERS[:] = list(_STALE_CONTAINERS), []
    for container in stale:
        items = list(container.items() if isinstance(container, dict) else container)
        container.clear()
        container.update(items)


def _hash_changes(key):
    """Whether `key`'s hash in the component (the low 32 bits of 64-bit
    CPython's) differs from this interpreter's."""
    if type(key) is str:
        return False
    try:
        new = _hash_64(key) & 0xFFFFFFFF
        old = _HASH(key)
    except Exception:
        return False
    new = new - (1 << 32) if new >> 31 else new
    return (-2 if new == -1 else new) != old


# What `_find_stale_containers` never walks into: no references inside.
_LEAVES = (str, bytes, int, float, complex, type(None), range, slice)


def _find_stale_containers():
    """Every dict and set reachable from the modules or tracked by the
    collector whose keys include one whose hash changes. A frozenset cannot
    be rehashed: none is expected (the integration test
    `no_container_in_the_cpython_snapshot_misses_its_own_keys` walks a
    chain's objects for any left).

    Whatever this allocates stays in the snapshot's memory (wasm memory
    never shrinks), so what was seen is one bit per 8 bytes of address
    (`id`), not a set of ids (a set of the ~130,000 objects added ~9 MB to
    the component), and leaves are never pushed."""
    found = []
    stack = [m for m in list(sys.modules.values()) if m is not None]
    stack.extend(gc.get_objects())

    def push(objects):
        stack.extend(o for o in objects if not isinstance(o, _LEAVES))

    if wit_world is None:  # natively (tests): 64-bit addresses
        seen_ids = set()

        def first_visit(obj):
            new = id(obj) not in seen_ids
            seen_ids.add(id(obj))
            return new

    else:  # in wasm32, an address is below the memory's size
        seen = bytearray()

        def first_visit(obj):
            slot = id(obj) >> 3
            byte, bit = slot >> 3, 1 << (slot & 7)
            if byte >= len(seen):
                seen.extend(bytes(byte + 65536 - len(seen)))
            elif seen[byte] & bit:
                return False
            seen[byte] |= bit
            return True

    while stack:
        obj = stack.pop()
        if not first_visit(obj):
            continue
        try:
            if isinstance(obj, (dict, set)) and any(_hash_changes(k) for k in list(obj)):
                found.append(obj)
            if isinstance(obj, types.ModuleType) or isinstance(obj, type):
                push(list(vars(obj).values()))
            elif isinstance(obj, types.FunctionType):
                stack.append(obj.__code__)
                push(obj.__defaults__ or ())
                push(c.cell_contents for c in obj.__closure__ or () if c.cell_contents is not None)
            elif isinstance(obj, types.CodeType):
                push(obj.co_consts)
            elif isinstance(obj, dict):
                push(list(obj.keys()))
                push(list(obj.values()))
            elif isinstance(obj, (list, tuple, set, frozenset)):
                push(list(obj))
            elif isinstance(obj, (classmethod, staticmethod)):
                stack.append(obj.__func__)
            elif isinstance(obj, property):
                push((obj.fget, obj.fset, obj.fdel))
            elif hasattr(obj, "__dict__"):
                stack.append(vars(obj))
        except Exception:
            pass
    return found


def _warm_up():
    """Runs one small chain (a tool call, an answer) at build time, so what
    a first chain builds lazily (caches, specialised bytecode, the event
    loop's classes, the blocked-module answers) is in the snapshot."""

    class _WarmUpHost:
        def start(self, call_id, call):
            pass

        def call(self, call):
            return '{"status": "ok", "value": null}'

        def cancel(self, call_id):
            pass

        def wait(self, wait, timeout_ns):
            ids = json.loads(wait)["ids"]
            return json.dumps({"done": [[i, {"status": "ok", "value": None}] for i in ids]})

        def load_artifact(self, request):
            return '{"status": "error", "message": "no host"}'

        def stdout(self, text):
            pass

    request = {
        "version": PROTOCOL_VERSION,
        "script": "import asyncio\nx = await warm_up(1)\nprint(x)\nawait asyncio.gather(warm_up(2), warm_up(3))\n1 + 1",
        "tools": [{"name": "warm_up", "params": ["n"]}],
        "limits": {"max_memory_bytes": 1 << 28, "max_recursion_depth": 1000},
    }
    for _ in range(3):
        run_chain(json.dumps(request), _WarmUpHost())


if wit_world is not None:
    # The interpreter's patches and refusals are made for good, then the
    # warm-up runs on them. Last, every object alive is moved into the
    # permanent generation (`gc.freeze`), so the collection that ends each
    # chain (for the "never awaited" warnings) walks only what the chain
    # made: collecting the whole pre-imported stdlib cost ~45 ms per chain.
    _patch_interpreter(contextlib.ExitStack())  # never closed: for good
    _INTERPRETER_PATCHED = True
    _warm_up()
    asyncio.events._event_loop_policy._loop = None
    gc.collect()
    # `re`'s caches are most of the stale keys (~260 of ~490 entries; the
    # rehash costs ~0.7 us an entry): the patterns the stdlib compiled at
    # import are held by its modules, so emptying the caches loses nothing
    # a chain would have used.
    re.purge()
    _STALE_CONTAINERS.extend(_find_stale_containers())
    gc.freeze()
