"""chainbox: code mode for agents, from Python.

A model writes one short Python script that calls your tools as ``async``
functions; chainbox runs it in a WebAssembly sandbox (monty or CPython
compiled to wasm, run by wasmtime) and sends every tool call through a
policy on the host: budgets, timeouts, risk and approval.

    import chainbox

    @chainbox.tool
    def get_weather(city: str) -> dict:
        "Current weather of a city."
        return {"city": city, "temp_c": 21}

    engine = chainbox.Engine()
    result = engine.run("w = await get_weather(city='Paris')\\nw['temp_c']", tools=[get_weather])
    result.output  # 21

Tools are plain functions or ``async def`` functions. A sync tool runs on a
thread of chainbox's own (never holding up other chains, nor the event loop
of ``run_async``); an async tool runs on the event loop of the caller of
``run_async``, or on a background loop of this package under ``run``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import inspect
import json
import threading
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Optional, Union

from . import _chainbox

__all__ = [
    "ApprovalRequest",
    "Artifact",
    "ArtifactError",
    "BeingResumed",
    "CallRecord",
    "ChainError",
    "ChainEvent",
    "ChainFailed",
    "ChainNotFound",
    "ChainResult",
    "ChainSuspended",
    "ChainTimeout",
    "Decision",
    "Diagnostic",
    "DurableError",
    "Engine",
    "EngineError",
    "ErrorInfo",
    "LimitExceeded",
    "NotPending",
    "PendingCall",
    "PolicyError",
    "ScriptError",
    "Session",
    "SessionError",
    "Tool",
    "ToolDefinitionError",
    "TypeCheckError",
    "Usage",
    "ChainWarning",
    "stubs",
    "tool",
]

__version__: str = _chainbox.__version__

Risk = Literal["safe", "high", "critical"]
PythonChoice = Literal["auto", "monty", "cpython"]


# --------------------------------------------------------------------------
# Exceptions


class ChainError(Exception):
    """Base class of every exception chainbox raises."""


class PolicyError(ChainError, ValueError):
    """The policy given to ``Engine`` is invalid; the message names the field."""


class EngineError(ChainError, RuntimeError):
    """The engine (the compiled guests) could not be built."""


class ToolDefinitionError(ChainError, ValueError):
    """A tool cannot be registered: bad name, schema, risk or permission."""


class SessionError(ChainError, RuntimeError):
    """A session's store could not be opened or failed."""


class DurableError(ChainError, RuntimeError):
    """A durable chain could not be run, decided or resumed: its store could
    not be opened or failed (``kind`` says why: ``store``, ``no_chain``,
    ``not_pending``, ``being_resumed``, ``not_owner``, ``corrupt``,
    ``artifacts``, ``internal``)."""

    def __init__(self, message: str, kind: str = "store") -> None:
        super().__init__(message)
        self.kind = kind


class ChainNotFound(DurableError, LookupError):
    """The store has no durable chain with this id (kind ``no_chain``)."""


class NotPending(DurableError):
    """The chain waits on no decision, or on another call than the one
    named (kind ``not_pending``): it runs, finished, or was decided."""


class BeingResumed(DurableError):
    """Another process (or thread) is resuming the chain now (kind
    ``being_resumed``); a later resume gets its result."""


class ArtifactError(ChainError, RuntimeError):
    """An artifact could not be read: its store failed, or does not have it."""


_DURABLE_ERRORS: dict[str, type[DurableError]] = {
    "no_chain": ChainNotFound,
    "not_pending": NotPending,
    "being_resumed": BeingResumed,
}


def _durable_error(message: str, kind: str) -> Exception:
    if kind == "artifacts":
        return ArtifactError(message)
    return _DURABLE_ERRORS.get(kind, DurableError)(message, kind)


def _chain_error(message: str, kind: str) -> Exception:
    """A run that is not durable: only its artifact store can fail."""
    return ArtifactError(message) if kind == "artifacts" else ChainError(message)


def _session_error(message: str, kind: str) -> Exception:
    return ArtifactError(message) if kind == "artifacts" else SessionError(message)


def _native_failure(exc: RuntimeError) -> tuple[str, str]:
    """The native side raises ``RuntimeError(message, kind)`` (or a bare message)."""
    if len(exc.args) == 2 and all(isinstance(a, str) for a in exc.args):
        return exc.args[0], exc.args[1]
    return str(exc), "internal"


class ChainFailed(ChainError):
    """A chain did not complete (``ChainResult.raise_for_status``).

    ``result`` is the whole ``ChainResult``, trace included.
    """

    def __init__(self, result: ChainResult) -> None:
        self.result = result
        err = result.error
        self.kind = err.kind if err else result.status
        message = f"{err.type}: {err.message}" if err else result.status
        super().__init__(f"[{self.kind}] {message}")


class ScriptError(ChainFailed):
    """The script raised, or did not compile (kinds ``script``, ``compile``)."""


class TypeCheckError(ChainFailed):
    """The check before the run refused the script (kind ``type_error``)."""


class LimitExceeded(ChainFailed):
    """A limit of the policy ended the chain (``tool_budget``, ``memory``, ``cpu``, ...)."""


class ChainTimeout(LimitExceeded):
    """The chain's total timeout expired (status ``timeout``)."""


class ChainSuspended(ChainFailed):
    """A durable chain waits on a decision (status ``suspended``): see
    ``ChainResult.pending``, ``Engine.decide`` and ``Engine.resume``."""


_LIMIT_KINDS = {"tool_budget", "memory", "cpu", "output_limit"}


# --------------------------------------------------------------------------
# Results


@dataclasses.dataclass(frozen=True)
class ErrorInfo:
    """Why a chain failed."""

    kind: str
    type: str
    message: str
    line: Optional[int] = None
    traceback: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class CallRecord:
    """One tool call of a chain's trace, made or refused."""

    call_id: str
    tool: str
    args_digest: str
    status: str
    duration_ms: float
    observed_at: str
    policy: Optional[str] = None
    error: Optional[str] = None
    source: Optional[str] = None
    artifact_ref: Optional[str] = None
    replayed: bool = False
    provenance: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class ChainWarning:
    """Something Python would have warned about (a coroutine never awaited)."""

    message: str
    line: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Diagnostic:
    """A tool call the check before the run found cannot succeed."""

    rule: str
    message: str
    line: int
    col: int


@dataclasses.dataclass(frozen=True)
class Artifact:
    """An artifact the chain stored (an offloaded result, media)."""

    artifact_ref: str
    """``sha256:<hex>``, as the trace's ``artifact_ref`` names it."""
    media_type: str
    size: int
    _store: Optional[str] = dataclasses.field(default=None, repr=False, compare=False)
    """The artifact store's URL (``None``: the process's, in memory)."""

    def read(self) -> bytes:
        """Its bytes, from the artifact store the chain wrote it to.

        ``ArtifactError`` if the store no longer has it (a ``memory:``
        store of another process, a swept one) or fails.
        """
        return _read_artifact(self.artifact_ref, self._store)


def _read_artifact(artifact_ref: str, store: Optional[str]) -> bytes:
    try:
        found = _chainbox.read_artifact(artifact_ref, store)
    except RuntimeError as exc:
        raise ArtifactError(_native_failure(exc)[0]) from None
    except ValueError as exc:
        raise ArtifactError(str(exc)) from None
    if found is None:
        where = store or "the process's artifact store (memory:)"
        raise ArtifactError(f"artifact {artifact_ref} is not in {where}")
    return found[0]


@dataclasses.dataclass(frozen=True)
class PendingCall:
    """The call a suspended durable chain waits on a decision for."""

    chain_id: str
    """The chain (``Engine.decide`` and ``Engine.resume`` name it by this)."""
    seq: int
    """The call's number in the chain, from 1 (``Engine.decide``'s ``seq``)."""
    tool: str
    arguments: dict[str, Any]
    risk: str
    """Why it needs a decision: the tool's risk (``high``, ``critical``)."""
    requested_at: str
    """When the chain asked (UTC, RFC 3339)."""
    provenance: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """The untrusted results its guarded arguments may derive from, when the
    data-flow policy is why it waits (``seq``, ``call_id``, ``tool`` each)."""
    owner: Optional[dict[str, str]] = None
    """Who the chain runs for (``issuer``, ``subject``); ``None``: the local user."""

    @classmethod
    def _from(cls, chain_id: str, call: Mapping[str, Any], owner: Optional[dict[str, str]] = None) -> PendingCall:
        return cls(chain_id=chain_id, owner=owner, **_known(cls, {k: v for k, v in call.items() if k != "chain_id"}))


@dataclasses.dataclass(frozen=True)
class Decision:
    """A decision recorded on a durable chain's pending call."""

    chain_id: str
    seq: int
    decision: str
    """``approved``, ``modified`` (approved with other ``arguments``) or ``denied``."""
    decided_by: str
    decided_at: str
    arguments: Optional[dict[str, Any]] = None
    reason: Optional[str] = None
    """A denial's reason (a late decision's says it came after ``approval_expires_s``)."""


@dataclasses.dataclass(frozen=True)
class Usage:
    """Resources the chain used."""

    peak_memory_bytes: int
    cpu_ms: float
    stdout_bytes: int
    stdout_truncated: bool


@dataclasses.dataclass(frozen=True)
class ChainResult:
    """Everything a chain returns, on every outcome."""

    status: str
    """``ok``, ``error``, ``timeout`` (or ``suspended``)."""
    output: Any
    """The script's final expression (``None`` unless ok)."""
    output_text: str
    stdout: str
    error: Optional[ErrorInfo]
    tool_calls: int
    duration_ms: float
    calls: list[CallRecord]
    """The trace: one record per tool call, in call order."""
    warnings: list[ChainWarning]
    diagnostics: list[Diagnostic]
    artifacts: list[Artifact]
    files: list[dict[str, Any]]
    usage: Usage
    interpreter: str
    """``monty`` or ``cpython``: which Python ran the script."""
    raw: dict[str, Any] = dataclasses.field(repr=False, compare=False)
    """The ``ChainRunResult`` JSON as chainbox's CLI prints it."""
    session_id: Optional[str] = None
    """A session's cell: its session (``Session.id``)."""
    cell: Optional[int] = None
    """A session's cell: its number, from 1."""
    chain_id: Optional[str] = None
    """A durable chain's id (``Engine.decide``, ``Engine.resume``)."""
    pending: Optional[PendingCall] = None
    """A suspended chain's call waiting on a decision."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def raise_for_status(self) -> ChainResult:
        """Returns ``self`` if ok, else raises the ``ChainFailed`` subclass for its kind."""
        if self.ok:
            return self
        kind = self.error.kind if self.error else self.status
        if self.status == "suspended":
            raise ChainSuspended(self)
        if self.status == "timeout" or kind == "timeout":
            raise ChainTimeout(self)
        if kind in ("script", "compile"):
            raise ScriptError(self)
        if kind == "type_error":
            raise TypeCheckError(self)
        if kind in _LIMIT_KINDS:
            raise LimitExceeded(self)
        raise ChainFailed(self)

    @property
    def suspended(self) -> bool:
        """A durable chain waiting on a decision (``pending``)."""
        return self.status == "suspended"

    @classmethod
    def _from_json(cls, text: str, artifacts: Optional[str] = None) -> ChainResult:
        raw = json.loads(text)
        err = raw.get("error")
        chain_id = raw.get("chain_id")
        pending = raw.get("pending")
        return cls(
            status=raw["status"],
            output=raw.get("output"),
            output_text=raw.get("output_text", ""),
            stdout=raw.get("stdout", ""),
            error=ErrorInfo(**_known(ErrorInfo, err)) if err else None,
            tool_calls=raw.get("tool_calls", 0),
            duration_ms=raw.get("duration_ms", 0.0),
            calls=[CallRecord(**_known(CallRecord, c)) for c in raw.get("call_trace", [])],
            warnings=[ChainWarning(**_known(ChainWarning, w)) for w in raw.get("warnings", [])],
            diagnostics=[Diagnostic(**_known(Diagnostic, d)) for d in raw.get("diagnostics", [])],
            artifacts=[Artifact(**_known(Artifact, a), _store=artifacts) for a in raw.get("artifacts", [])],
            files=raw.get("files", []),
            usage=Usage(**_known(Usage, raw.get("usage", {}))),
            interpreter=raw.get("interpreter", "monty"),
            raw=raw,
            session_id=raw.get("session_id"),
            cell=raw.get("cell"),
            chain_id=chain_id,
            pending=PendingCall._from(chain_id, pending) if pending and chain_id else None,
        )


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclasses.dataclass(frozen=True)
class ApprovalRequest:
    """A call waiting for the ``approve`` callback's decision."""

    tool: str
    arguments: dict[str, Any]
    risk: str
    call_id: int
    run_id: str
    requested_at: str
    provenance: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class ChainEvent:
    """Something a running chain did, handed to ``on_event`` as it happens.

    ``kind``: ``stdout`` (``text`` printed), ``call_started`` (``call_id``,
    ``tool``) or ``call_finished`` (``record``, as the trace will hold it).
    """

    kind: str
    text: Optional[str] = None
    call_id: Optional[str] = None
    tool: Optional[str] = None
    record: Optional[CallRecord] = None


def _event_bridge(
    fn: Callable[[ChainEvent], Any], loop: Optional[asyncio.AbstractEventLoop], kind: str, payload: str
) -> None:
    if kind == "stdout":
        event = ChainEvent(kind, text=payload)
    elif kind == "call_started":
        raw = json.loads(payload)
        event = ChainEvent(kind, call_id=raw["call_id"], tool=raw["tool"])
    else:
        record = CallRecord(**_known(CallRecord, json.loads(payload)))
        event = ChainEvent(kind, call_id=record.call_id, tool=record.tool, record=record)
    if loop is None:
        fn(event)
    else:
        try:
            loop.call_soon_threadsafe(fn, event)
        except RuntimeError:
            pass  # the loop is closed


# --------------------------------------------------------------------------
# Tools


@dataclasses.dataclass(frozen=True)
class Tool:
    """A Python function a chain may call (make one with ``chainbox.tool``)."""

    fn: Callable[..., Any]
    name: str
    description: str
    input_schema: dict[str, Any]
    risk: Risk = "safe"
    permissions: tuple[str, ...] = ()
    untrusted: bool = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def _spec(self, loop: Optional[Callable[[], asyncio.AbstractEventLoop]]) -> tuple[Any, ...]:
        return (
            self.name,
            self.description,
            json.dumps(self.input_schema),
            self.risk,
            list(self.permissions),
            self.untrusted,
            functools.partial(_tool_bridge, self, loop, _coercions(self.fn), self.is_async),
        )


@typing.overload
def tool(
    fn: Callable[..., Any],
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    risk: Risk = "safe",
    schema: Optional[dict[str, Any]] = None,
    permissions: Sequence[str] = (),
    untrusted: bool = False,
) -> Tool: ...


@typing.overload
def tool(
    fn: None = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    risk: Risk = "safe",
    schema: Optional[dict[str, Any]] = None,
    permissions: Sequence[str] = (),
    untrusted: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Optional[Callable[..., Any]] = None,
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    risk: Risk = "safe",
    schema: Optional[dict[str, Any]] = None,
    permissions: Sequence[str] = (),
    untrusted: bool = False,
) -> Union[Tool, Callable[[Callable[..., Any]], Tool]]:
    """Makes a ``Tool`` of a function or ``async def``; also a decorator.

    The input schema comes from the parameters' type hints (pydantic models,
    dataclasses and TypedDicts too) unless ``schema`` gives it; the
    description from the docstring unless ``description`` gives it.
    ``risk`` above the policy's ``max_risk_unapproved`` needs approval.
    """

    def make(f: Callable[..., Any]) -> Tool:
        if isinstance(f, Tool):
            f = f.fn
        if not callable(f):
            raise ToolDefinitionError(f"a tool must be a function, not {type(f).__name__}")
        return Tool(
            fn=f,
            name=name or f.__name__,
            description=description if description is not None else inspect.cleandoc(f.__doc__ or ""),
            input_schema=schema if schema is not None else schema_of(f),
            risk=risk,
            permissions=tuple(permissions),
            untrusted=untrusted,
        )

    if fn is None:
        return make
    return make(fn)


def _as_tool(t: Union[Tool, Callable[..., Any]]) -> Tool:
    return t if isinstance(t, Tool) else tool(t)


def schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema of a function's keyword arguments, from its type hints."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    props: dict[str, Any] = {}
    required: list[str] = []
    defs: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {fn.__name__!r}: *args and **kwargs cannot be described; give schema=")
        if p.kind is p.POSITIONAL_ONLY:
            raise ToolDefinitionError(f"tool {fn.__name__!r}: a script calls tools by keyword; {p.name!r} is positional-only")
        hint = hints.get(p.name, p.annotation)
        s = _schema(hint, defs) if hint is not inspect.Parameter.empty else {}
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            try:
                json.dumps(p.default)
                s = {**s, "default": p.default}
            except (TypeError, ValueError):
                pass
        props[p.name] = s
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    if defs:
        out["$defs"] = defs
    return out


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if hint is Any or hint is object:
        return {}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _schema(args[0], defs)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema(a, defs) for a in args]}
    if origin in (list, set, frozenset, Sequence) or hint in (list, set, frozenset):
        return {"type": "array", "items": _schema(args[0], defs)} if args else {"type": "array"}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], defs)}
        if args:
            return {"type": "array", "prefixItems": [_schema(a, defs) for a in args], "minItems": len(args), "maxItems": len(args)}
        return {"type": "array"}
    if origin in (dict, Mapping) or hint is dict:
        return {"type": "object", "additionalProperties": _schema(args[1], defs)} if args else {"type": "object"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if isinstance(hint, type) and hasattr(hint, "model_json_schema"):  # pydantic v2
        s: dict[str, Any] = hint.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(s.pop("$defs", {}))
        return s
    if isinstance(hint, type) and typing.is_typeddict(hint):
        th = typing.get_type_hints(hint)
        req = getattr(hint, "__required_keys__", set(th))
        return {
            "type": "object",
            "properties": {k: _schema(v, defs) for k, v in th.items()},
            "required": [k for k in th if k in req],
        }
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        th = typing.get_type_hints(hint)
        fields = dataclasses.fields(hint)
        return {
            "type": "object",
            "properties": {f.name: _schema(th.get(f.name, Any), defs) for f in fields},
            "required": [
                f.name
                for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ],
        }
    return {}


def _coercions(fn: Callable[..., Any]) -> dict[str, Callable[[dict[str, Any]], Any]]:
    """The parameters annotated with a pydantic model or a dataclass, each
    with what makes one from a dict: read once per run, not per call
    (``typing.get_type_hints`` costs microseconds)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return {}
    out: dict[str, Callable[[dict[str, Any]], Any]] = {}
    for k, h in hints.items():
        if k == "return" or not isinstance(h, type):
            continue
        if hasattr(h, "model_validate"):
            out[k] = h.model_validate
        elif dataclasses.is_dataclass(h):
            out[k] = functools.partial(_dataclass_from, h)
    return out


def _dataclass_from(cls: Any, value: dict[str, Any]) -> Any:
    return cls(**value)


def _coerce_args(coercions: dict[str, Callable[[dict[str, Any]], Any]], args: dict[str, Any]) -> dict[str, Any]:
    """Arguments annotated with a pydantic model or dataclass arrive as one."""
    for k, make in coercions.items():
        v = args.get(k)
        if isinstance(v, dict):
            args[k] = make(v)
    return args


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"a tool returned {type(value).__name__}, which is not JSON")


def _error_message(exc: BaseException) -> str:
    # The message only: the tool's traceback (paths, source lines, locals'
    # reprs) stays on the host.
    text = str(exc)
    return text if text else type(exc).__name__


def _answer(done: Callable[[bool, str], None], get: Callable[[], Any]) -> None:
    try:
        value = get()
        payload = json.dumps(value, default=_jsonable)
    except BaseException as exc:  # noqa: BLE001 - every failure is the script's RuntimeError
        done(False, _error_message(exc))
        return
    done(True, payload)


def _tool_bridge(
    t: Tool,
    loop_of: Optional[Callable[[], asyncio.AbstractEventLoop]],
    coercions: dict[str, Callable[[dict[str, Any]], Any]],
    is_async: bool,
    args_json: str,
    done: Callable[[bool, str], None],
) -> Optional[Callable[[], Any]]:
    """Called by the native side on a thread of its own, with the GIL."""
    try:
        args = _coerce_args(coercions, json.loads(args_json))
    except BaseException as exc:  # noqa: BLE001
        done(False, _error_message(exc))
        return None
    if not is_async:
        _answer(done, lambda: t.fn(**args))
        return None
    return _schedule(lambda: t.fn(**args), loop_of, done, lambda v: v)


def _schedule(
    make_coro: Callable[[], Awaitable[Any]],
    loop_of: Optional[Callable[[], asyncio.AbstractEventLoop]],
    done: Callable[[bool, str], None],
    shape: Callable[[Any], Any],
) -> Callable[[], Any]:
    loop = (loop_of or _background_loop)()

    async def run() -> Any:
        return await make_coro()

    fut = asyncio.run_coroutine_threadsafe(run(), loop)

    def finished(f: Any) -> None:
        if f.cancelled():
            done(False, "cancelled")
        else:
            _answer(done, lambda: shape(f.result()))

    fut.add_done_callback(finished)
    return fut.cancel


_LOOP: Optional[asyncio.AbstractEventLoop] = None
_LOOP_LOCK = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The loop ``async def`` tools run on under the blocking ``run``."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="chainbox-tools", daemon=True).start()
            _LOOP = loop
        return _LOOP


# --------------------------------------------------------------------------
# Approval

Approve = Union[
    Literal["auto", "deny", "defer"],
    Callable[[ApprovalRequest], Union[bool, Awaitable[bool]]],
]


def _decision(answer: Any) -> dict[str, Any]:
    if answer is True:
        return {"decision": "approved"}
    if answer is False or answer is None:
        return {"decision": "denied", "reason": None}
    if isinstance(answer, str):
        return {"decision": "denied", "reason": answer}
    if isinstance(answer, Mapping):  # {"arguments": {...}}: approved with these instead
        return {"decision": "modified", "arguments": dict(answer["arguments"])}
    raise TypeError(f"approve returned {type(answer).__name__}; expected bool, a reason (str) or {{'arguments': ...}}")


def _approval_bridge(
    fn: Callable[[ApprovalRequest], Any],
    loop_of: Optional[Callable[[], asyncio.AbstractEventLoop]],
    request_json: str,
    done: Callable[[bool, str], None],
) -> Optional[Callable[[], Any]]:
    raw = json.loads(request_json)
    req = ApprovalRequest(**_known(ApprovalRequest, raw))
    try:
        answer = fn(req)
    except BaseException as exc:  # noqa: BLE001 - a failing callback denies
        done(False, _error_message(exc))
        return None
    if inspect.isawaitable(answer):
        return _schedule(lambda: answer, loop_of, done, _decision)
    _answer(done, lambda: _decision(answer))
    return None


def _approve_arg(approve: Approve, loop_of: Optional[Callable[[], asyncio.AbstractEventLoop]]) -> Any:
    # "defer": a durable chain suspends at the call; any other chain's is denied.
    if isinstance(approve, str):
        if approve not in ("auto", "deny", "defer"):
            raise ValueError(f'approve must be "auto", "deny", "defer" or a callable, not {approve!r}')
        return approve
    if not callable(approve):
        raise TypeError("approve must be \"auto\", \"deny\", \"defer\" or a callable")
    return functools.partial(_approval_bridge, approve, loop_of)


# --------------------------------------------------------------------------
# Engine


class Engine:
    """Runs chains under one policy. Cheap: every ``Engine`` of a process
    shares one compiled sandbox, built by the first (~seconds; cached on disk).

    ``policy``: a dict of ``ChainPolicy`` fields, TOML text, or ``None`` for
    the defaults (README: Limits). ``python``: ``auto`` (monty unless the
    script needs CPython), ``monty`` or ``cpython``; ``None`` keeps the
    policy's.
    """

    def __init__(
        self,
        policy: Union[Mapping[str, Any], str, None] = None,
        *,
        python: Optional[PythonChoice] = None,
        approve: Approve = "deny",
    ) -> None:
        policy_json = policy_toml = None
        if isinstance(policy, str):
            policy_toml = policy
        elif policy is not None:
            policy_json = json.dumps(dict(policy))
        try:
            self._native = _chainbox.NativeEngine(policy_json, policy_toml, python)
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
        except RuntimeError as exc:
            raise EngineError(str(exc)) from None
        self._approve = approve
        _approve_arg(approve, None)

    @property
    def policy(self) -> dict[str, Any]:
        """The effective policy, every field."""
        policy: dict[str, Any] = json.loads(self._native.policy_json())
        return policy

    def run(
        self,
        script: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Optional[Approve] = None,
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
        state: Optional[str] = None,
        artifacts: Optional[str] = None,
    ) -> ChainResult:
        """Runs a chain to its end, without holding the GIL, and returns its result.

        ``approve`` decides calls above the policy's ``max_risk_unapproved``:
        ``"deny"`` (the engine's default), ``"auto"``, or a callable taking an
        ``ApprovalRequest`` and returning (or, if async, resolving to) ``True``
        / ``False`` / a denial reason. ``on_event`` sees the chain's prints and
        calls as they happen (on a thread of chainbox's; all of them before
        ``run`` returns). Ctrl-C cancels the chain.

        ``state``: a chain store (``sqlite:PATH``, ``postgres://...``,
        ``memory:``) makes the chain durable: journaled there, and with
        ``approve="defer"`` (the default then) suspended at a call that needs
        a decision (``status == "suspended"``, ``result.pending``) for
        ``decide`` and ``resume``, from any process on the store.
        ``artifacts``: where results over ``max_inline_result_bytes`` are
        offloaded (``memory:``, ``file:DIR``, ``s3://BUCKET/PREFIX``); by
        default the process's memory, or for ``state="sqlite:PATH"`` the
        directory ``PATH.artifacts``.
        """
        specs = self._specs(tools, None)
        approve_arg = _approve_arg(self._approve_for(approve, state), None)
        events = functools.partial(_event_bridge, on_event, None) if on_event else None
        store = _artifacts_for(state, artifacts)
        try:
            if state is None:
                text = self._native.run(script, specs, approve_arg, events, store)
            else:
                text = self._native.run_durable(state, script, specs, approve_arg, events, store)
        except ValueError as exc:
            raise ToolDefinitionError(str(exc)) from None
        except RuntimeError as exc:
            raise (_durable_error if state is not None else _chain_error)(*_native_failure(exc)) from None
        return ChainResult._from_json(text, store)

    async def run_async(
        self,
        script: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Optional[Approve] = None,
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
        state: Optional[str] = None,
        artifacts: Optional[str] = None,
    ) -> ChainResult:
        """``run`` for asyncio: ``async def`` tools and approvals run on this
        loop, sync ones on chainbox's threads; ``on_event`` is called on this
        loop. Cancelling the task cancels the chain (a durable one stays in
        its store, unfinished, for a later ``resume``)."""
        loop = asyncio.get_running_loop()
        store = _artifacts_for(state, artifacts)

        def start(specs: list[tuple[Any, ...]], approve_arg: Any, on_done: Any, events: Any) -> Any:
            if state is None:
                return self._native.start(script, specs, approve_arg, on_done, events, store)
            return self._native.start_durable(state, script, specs, approve_arg, on_done, events, store)

        approve = self._approve_for(approve, state)
        failure = _durable_error if state is not None else _chain_error
        return await _run_async(loop, start, tools, approve, on_event, failure, store)

    def resume(
        self,
        state: str,
        chain_id: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Approve = "defer",
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
        artifacts: Optional[str] = None,
    ) -> ChainResult:
        """Continues the durable chain ``chain_id`` of the store ``state``,
        in this process or any other, with the same tools: its script runs
        again from the start, each call the chain made before is answered
        from its journal (its tool does not run again; ``replayed`` in the
        trace), the pending call gets its decision (``decide``), and the
        chain goes on to its end or its next suspension (``approve``:
        ``"defer"`` by default, as ``run``'s). A finished chain gives its
        result again, running nothing. Give it the ``artifacts`` its run had
        (the same default).

        ``ChainNotFound``, ``BeingResumed`` (another resume holds it now),
        or ``DurableError`` for a store that fails.
        """
        specs = self._specs(tools, None)
        approve_arg = _approve_arg(approve, None)
        events = functools.partial(_event_bridge, on_event, None) if on_event else None
        store = _artifacts_for(state, artifacts)
        try:
            text = self._native.resume(state, chain_id, specs, approve_arg, events, store)
        except ValueError as exc:
            raise ToolDefinitionError(str(exc)) from None
        except RuntimeError as exc:
            raise _durable_error(*_native_failure(exc)) from None
        return ChainResult._from_json(text, store)

    async def resume_async(
        self,
        state: str,
        chain_id: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Approve = "defer",
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
        artifacts: Optional[str] = None,
    ) -> ChainResult:
        """``resume`` for asyncio, as ``run_async``."""
        loop = asyncio.get_running_loop()
        store = _artifacts_for(state, artifacts)

        def start(specs: list[tuple[Any, ...]], approve_arg: Any, on_done: Any, events: Any) -> Any:
            return self._native.start_resume(state, chain_id, specs, approve_arg, on_done, events, store)

        return await _run_async(loop, start, tools, approve, on_event, _durable_error, store)

    def decide(
        self,
        state: str,
        chain: Union[str, PendingCall],
        approve: bool,
        *,
        arguments: Optional[Mapping[str, Any]] = None,
        reason: Optional[str] = None,
        seq: Optional[int] = None,
        decided_by: str = "python",
    ) -> Decision:
        """Records a human's decision on a suspended chain's pending call;
        ``resume`` then carries it out. ``chain``: its ``chain_id``, or the
        ``PendingCall`` itself (``result.pending``, an item of ``approvals``:
        then only that call is decided). ``approve=True`` runs the call as
        asked, or with ``arguments`` instead; ``False`` denies it
        (``PermissionError`` in the script, with ``reason``). ``seq``: decide
        only that call (``NotPending`` if the chain waits on another).

        A decision later than the policy's ``approval_expires_s`` after the
        request is recorded as a denial (the returned ``Decision`` says so).
        ``ChainNotFound``, ``NotPending`` (nothing to decide: running,
        finished, decided), ``DurableError``.
        """
        if isinstance(chain, PendingCall):
            chain_id, seq = chain.chain_id, chain.seq if seq is None else seq
        else:
            chain_id = chain
        decision: dict[str, Any]
        if approve:
            if reason is not None:
                raise ValueError("reason= is a denial's (approve=False)")
            decision = {"decision": "approved"}
            if arguments is not None:
                decision = {"decision": "modified", "arguments": dict(arguments)}
        else:
            if arguments is not None:
                raise ValueError("arguments= approve the call with other arguments (approve=True)")
            decision = {"decision": "denied", "reason": reason}
        try:
            text = self._native.decide(state, chain_id, json.dumps(decision), decided_by, seq)
        except RuntimeError as exc:
            raise _durable_error(*_native_failure(exc)) from None
        raw = json.loads(text)
        made = raw.get("decision", {})
        return Decision(
            chain_id=chain_id,
            seq=raw["seq"],
            decision=made.get("decision", ""),
            decided_by=raw.get("decided_by", decided_by),
            decided_at=raw.get("decided_at", ""),
            arguments=made.get("arguments"),
            reason=made.get("reason"),
        )

    async def decide_async(
        self,
        state: str,
        chain: Union[str, PendingCall],
        approve: bool,
        *,
        arguments: Optional[Mapping[str, Any]] = None,
        reason: Optional[str] = None,
        seq: Optional[int] = None,
        decided_by: str = "python",
    ) -> Decision:
        """``decide`` for asyncio (the store's write on a worker thread)."""
        return await asyncio.to_thread(
            self.decide, state, chain, approve, arguments=arguments, reason=reason, seq=seq, decided_by=decided_by
        )

    def approvals(self, state: str) -> list[PendingCall]:
        """Every durable chain of the store ``state`` waiting on a decision,
        oldest request first (``chainbox approvals``): one ``PendingCall``
        each, with its ``chain_id`` and ``owner``."""
        try:
            text = _chainbox.approvals(state)
        except RuntimeError as exc:
            raise _durable_error(*_native_failure(exc)) from None
        return [PendingCall._from(p["chain_id"], p["call"], p.get("owner")) for p in json.loads(text)]

    def read_artifact(self, artifact_ref: str, *, artifacts: Optional[str] = None) -> bytes:
        """An artifact's bytes (``sha256:<hex>``, a trace's ``artifact_ref``)
        from the store ``artifacts`` (``None``: the process's, in memory):
        what ``Artifact.read`` does for a result's ``artifacts``.
        ``ArtifactError`` if the store does not have it."""
        return _read_artifact(artifact_ref, artifacts)

    def stubs(self, tools: Sequence[Union[Tool, Callable[..., Any]]]) -> str:
        """The ``async def`` stubs to show a model for these tools."""
        return stubs(tools)

    def session(
        self, state: str = "memory:", session_id: Optional[str] = None, *, artifacts: Optional[str] = None
    ) -> Session:
        """A Python REPL kept in a chain store: see ``Session``."""
        return Session(self, state, session_id, artifacts=artifacts)

    def _approve_for(self, approve: Optional[Approve], state: Optional[str]) -> Approve:
        """A run's ``approve``: given, else ``defer`` for a durable run, else the engine's."""
        if approve is not None:
            return approve
        return "defer" if state is not None else self._approve

    @staticmethod
    def _specs(tools: Sequence[Union[Tool, Callable[..., Any]]], loop_of: Any) -> list[tuple[Any, ...]]:
        specs = [_as_tool(t)._spec(loop_of) for t in tools]
        return specs


def _artifacts_for(state: Optional[str], artifacts: Optional[str]) -> Optional[str]:
    """The artifact store of a run: ``artifacts``, else for a durable one the
    command line's default (``sqlite:PATH``: ``file:PATH.artifacts``)."""
    if state is None:
        return artifacts
    return _chainbox.durable_artifacts(state, artifacts)


class Session:
    """A Python REPL kept in a chain store, one chain per cell: the names
    earlier cells bound are defined in the next, and their tool calls are
    not made again (docs/sessions.md).

    ``state``: the store, ``memory:`` (this process only), ``sqlite:PATH``
    or ``postgres://...``; ``session_id``: an existing session to continue
    (from ``Session.id``, in any process on the same store), else a new one
    starts with the first cell. ``artifacts``: where offloaded results go,
    as ``Engine.run``'s for a durable chain.
    """

    def __init__(
        self,
        engine: Engine,
        state: str = "memory:",
        session_id: Optional[str] = None,
        *,
        artifacts: Optional[str] = None,
    ) -> None:
        self._engine = engine
        self.state = state
        self._id = session_id
        self._artifacts = _artifacts_for(state, artifacts)

    @property
    def id(self) -> Optional[str]:
        """The session's id, once its first cell has run."""
        return self._id

    def run(
        self,
        cell: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Optional[Approve] = None,
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
    ) -> ChainResult:
        """Runs the next cell as ``Engine.run`` runs a chain (the policy's
        ``max_session_cells`` and ``session_expires_s`` apply)."""
        specs = Engine._specs(tools, None)
        approve_arg = _approve_arg(self._engine._approve if approve is None else approve, None)
        events = functools.partial(_event_bridge, on_event, None) if on_event else None
        native = self._engine._native
        try:
            text = native.run_cell(self.state, self._id or "new", cell, specs, approve_arg, events, self._artifacts)
        except ValueError as exc:
            raise ToolDefinitionError(str(exc)) from None
        except RuntimeError as exc:
            raise _session_error(*_native_failure(exc)) from None
        result = ChainResult._from_json(text, self._artifacts)
        if result.session_id:
            self._id = result.session_id
        return result

    async def run_async(
        self,
        cell: str,
        tools: Sequence[Union[Tool, Callable[..., Any]]] = (),
        *,
        approve: Optional[Approve] = None,
        on_event: Optional[Callable[[ChainEvent], Any]] = None,
    ) -> ChainResult:
        """``run`` for asyncio, as ``Engine.run_async``."""
        loop = asyncio.get_running_loop()
        store = self._artifacts

        def start(specs: list[tuple[Any, ...]], approve_arg: Any, on_done: Any, events: Any) -> Any:
            native = self._engine._native
            return native.start_cell(self.state, self._id or "new", cell, specs, approve_arg, on_done, events, store)

        approve = self._engine._approve if approve is None else approve
        result = await _run_async(loop, start, tools, approve, on_event, _session_error, store)
        if result.session_id:
            self._id = result.session_id
        return result


def configure(*, cache_dir: Optional[str] = None, max_concurrent_chains: Optional[int] = None) -> None:
    """Settings of the process's sandbox, before the first ``Engine()`` builds it.

    ``cache_dir``: where the compiled guests are cached (default:
    ``$CHAINBOX_CACHE_DIR``, else the user's cache folder). ``max_concurrent_chains``:
    chains that may run at once (default 1000; more wait for a slot).
    ``EngineError`` once the sandbox is built.
    """
    try:
        _chainbox.configure(cache_dir, max_concurrent_chains)
    except RuntimeError as exc:
        raise EngineError(str(exc)) from None


async def _run_async(
    loop: asyncio.AbstractEventLoop,
    start: Callable[[list[tuple[Any, ...]], Any, Any, Any], Any],
    tools: Sequence[Union[Tool, Callable[..., Any]]],
    approve: Approve,
    on_event: Optional[Callable[[ChainEvent], Any]],
    failure: Callable[[str, str], Exception],
    artifacts: Optional[str] = None,
) -> ChainResult:
    """Starts a native run with this loop for async tools, approvals and
    events, and awaits its result; cancelling the awaiting task cancels it.
    A failure (``message``, ``kind``) is raised as ``failure`` makes it."""

    def loop_of() -> asyncio.AbstractEventLoop:
        return loop

    specs = Engine._specs(tools, loop_of)
    approve_arg = _approve_arg(approve, loop_of)
    fut: asyncio.Future[str] = loop.create_future()

    def settle(ok: bool, payload: str) -> None:
        if fut.done():
            return
        if ok:
            fut.set_result(payload)
        else:
            raw = json.loads(payload)
            fut.set_exception(failure(raw.get("message", payload), raw.get("kind", "internal")))

    def on_done(ok: bool, payload: str) -> None:
        try:
            loop.call_soon_threadsafe(settle, ok, payload)
        except RuntimeError:
            pass  # the loop is closed: nobody waits

    events = functools.partial(_event_bridge, on_event, loop) if on_event else None
    try:
        handle = start(specs, approve_arg, on_done, events)
    except ValueError as exc:
        raise ToolDefinitionError(str(exc)) from None
    except RuntimeError as exc:
        raise failure(*_native_failure(exc)) from None
    try:
        text = await asyncio.shield(fut)
    except asyncio.CancelledError:
        handle.cancel()
        raise
    return ChainResult._from_json(text, artifacts)


def stubs(tools: Sequence[Union[Tool, Callable[..., Any]]]) -> str:
    """The ``async def`` stubs (with docstrings) a model is shown for these tools."""
    try:
        return _chainbox.stubs([_as_tool(t)._spec(None) for t in tools])
    except ValueError as exc:
        raise ToolDefinitionError(str(exc)) from None
