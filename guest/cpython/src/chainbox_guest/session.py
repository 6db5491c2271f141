"""One chain: its session (host, tools, pending calls, output, warnings),
how it runs the script and reports its end, and the sandbox of interpreter
changes it runs under."""

import asyncio
import builtins
import contextlib
import gc
import linecache
import os
import sys
import types
import warnings

from . import current, interpreter
from .interpreter import _patch, _patch_interpreter
from .loop import GuestLoop, _guest_asyncio_run, _nanoseconds
from .messages import _JSON_DECODE, _JSON_ENCODE, _decode_outcome, _encode, _internal_error, _outcome_value, _script_error
from .protocol import LOAD_ARTIFACT_FN
from .reports import MISSING_AWAIT_HINT, _format_traceback, _head, _is_missing_await, _safe_str, _script_line
from .script import ANSWER, SCRIPT_FILENAME, cell_filename
from .stdio import _DISCARDING_HOST, _HostStdout
from .suggestions import closest_name
from .values import _stack_depth, _to_json_in_script, to_json
from .wit import wit_world


# The namespace (`__main__` module) a session's run left, for the
# instance's next run to continue (`RunRequest.continued`); None after a
# chain's run.
_kept = None


class _Session:
    """One chain: its host, tools, pending calls, output and warnings."""

    # Class attributes: only a session's run (`RunRequest.cells`) sets them
    # on its instance. The file name of the script's code (in a session, the
    # new cell's, `cell_filename`), and whether the earlier cells are
    # running (`replay`).
    filename = SCRIPT_FILENAME
    replaying = False

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
        # The chain the call belongs to is the one running when it is
        # awaited, not the one that made the function: a session's kept
        # namespace (`_kept`) holds its tools, and what an earlier cell
        # built from them (a `partial`, a closure), into later cells' runs.
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
            session = current._current_session()
            outcome, fut = session.begin(head + (_encode(arguments) if arguments else "{}") + "}")
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
                session.host.cancel(call_id)
                raise
            finally:
                session.pending.pop(call_id, None)
            return _outcome_value(outcome)

        # The coroutine takes its name from these: "coroutine 'NAME' was
        # never awaited", repr, tracebacks. No module: a tool is the host's,
        # like a builtin, so call errors say "NAME() argument after * ..."
        # as on monty.
        tool.__name__ = tool.__qualname__ = name
        tool.__module__ = None
        return tool

    def make_load_artifact(self):
        def load_artifact(handle):
            message = _encode({"handle": _to_json_in_script(handle)})
            session = current._current_session()
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

    def run(self, code, source, workspace, cells=None, continued=False):
        """Runs the compiled script; returns the `Finish`. In a session,
        `cells` are its earlier cells (`RunRequest.cells`), `(source, code)`
        pairs, oldest first, `code` None for one that did not compile: they
        run first, in the same namespace (`replay`), and `code` is the new
        cell's; unless `continued`: then they ran on this instance already,
        and the namespace its last run kept is the new cell's.

        A session's namespace outlives the run (`_kept`), as a REPL's does:
        a coroutine bound to one of its names warns when it is collected,
        not when the cell ends. A chain's is cleared at its end."""
        global _kept
        kept, _kept = _kept, None
        if continued:
            if kept is None:
                return _internal_error("a continued run, but no earlier run kept its session")
            module = kept
        else:
            module = self.namespace()
        if cells is not None:
            self.filename = cell_filename(len(cells))
        with contextlib.ExitStack() as stack:
            _Sandbox(self, module, source, workspace, cells).install(stack)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                heard = 0  # warnings caught before the new cell: the earlier cells'
                if cells is not None:
                    # The guest's own failures here are not the script's:
                    # they end the chain as an internal error (`run_chain`).
                    if not continued:
                        self.replay(cells, module.__dict__)
                    heard = len(caught)
                    self.host.cell(len(cells))
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
                # reference to what the script made (a session's names
                # live on instead), then collect.
                if cells is not None:
                    _kept = module
                else:
                    module.__dict__.clear()
                module = None
                gc.collect()
                self.stdout.flush()
            if not self.hooked_warnings:
                # This interpreter did not call the hook: take the warnings
                # it emitted instead (without lines).
                for w in caught[heard:] if heard else caught:
                    if issubclass(w.category, RuntimeWarning) and "was never awaited" in str(w.message):
                        self.warnings.append({"message": str(w.message).split("\n")[0], "line": None})
        return {"result": result, "warnings": self.warnings}

    def replay(self, cells, ns):
        """Runs a session's earlier cells in `ns`, oldest first, as Python's
        REPL runs its inputs: the names each binds live on; an exception,
        whatever it is (SystemExit and KeyboardInterrupt too), ends only its
        own cell; a cell that did not compile is skipped. Their output is
        discarded, their values ignored, and their coroutines never
        awaited warn nothing (`_warn_unawaited_coroutine`). The host hears
        of each cell before it runs (`cell`), so it answers that cell's
        calls; an exception of the host's `cell` is the guest's own, and
        propagates."""
        host, stdout = self.host, self.stdout
        depth = self.limits.get("max_recursion_depth")
        self.replaying = True
        stdout._host = _DISCARDING_HOST
        try:
            for index, (_source, code) in enumerate(cells):
                host.cell(index)
                # A cell without a final expression answers None, not an
                # earlier cell's value.
                ns.pop(ANSWER, None)
                if code is None:
                    continue
                try:
                    with _recursion_limit(depth):
                        self.execute(code, ns)
                except BaseException:
                    pass
            ns.pop(ANSWER, None)
            # What the earlier cells left to the collector (coroutines never
            # awaited among it) goes now, while they are still quiet.
            gc.collect()
            stdout.flush()  # a partial line: discarded
        finally:
            stdout._host = host
            self.replaying = False

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
        return _script_error(type(exc).__name__, message, line=_script_line(exc, self.filename), tb=tb)


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

    def __init__(self, session, module, source, workspace, cells=None):
        self.session = session
        self.module = module
        self.source = source
        self.workspace = workspace
        self.cells = cells

    def install(self, stack):
        session = self.session
        stack.callback(setattr, current, "running", current.running)
        current.running = session

        if not interpreter._INTERPRETER_PATCHED:
            _patch_interpreter(stack)

        # Output: stdout to the host, flushed last (callbacks run in reverse).
        stack.callback(session.stdout.flush)
        _patch(stack, sys, "stdout", session.stdout)
        # `sys.argv` as `python main.py` has it (the component's WASI
        # start-up leaves it empty, whatever the snapshot held).
        _patch(stack, sys, "argv", [SCRIPT_FILENAME])

        # The script's module, and its source for tracebacks and inspect.
        old_main = sys.modules.get("__main__")
        sys.modules["__main__"] = self.module
        stack.callback(_restore_item, sys.modules, "__main__", old_main)
        _register_source(stack, session.filename, self.source)
        if self.cells is not None:
            for index, (source, _code) in enumerate(self.cells):
                _register_source(stack, cell_filename(index), source)

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


def _register_source(stack, filename, source):
    """`source` is the text of `filename` in tracebacks and `inspect`."""
    lines = source.splitlines(keepends=True)
    old_cache = linecache.cache.get(filename)
    linecache.cache[filename] = (len(source), None, lines, filename)
    stack.callback(_restore_item, linecache.cache, filename, old_cache)


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
