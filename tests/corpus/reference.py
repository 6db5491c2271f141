#!/usr/bin/env python3
"""CPython reference runner for the differential corpus (tests/corpus/).

    python3 tests/corpus/reference.py            # re-bless: rewrite every expected/<case>.json
    python3 tests/corpus/reference.py --check    # only compare, exit 1 on any difference
    python3 tests/corpus/reference.py NAME...    # limit to some cases (with or without --check)

Each case `cases/<name>.py` runs here in CPython 3.11+ with the same tools
chainbox gives it (`tools.toml` + `tools.py`), and `expected/<name>.json`
records what a user of chainbox must see: the final value (`output`,
`output_text`), `stdout`, the uncaught exception type, the tool calls made
(`trace`) and the "never awaited" warnings. `tests/it/corpus.rs` runs the
same scripts through chainbox and compares.

How CPython is made to behave like the sandbox boundary:
- Each tool is an `async def <name>(*args, **kwargs)`: positional arguments
  map onto the schema's `properties` in order (too many is a TypeError, as in
  the guest), arguments cross as JSON (the guest's value→JSON rules, see
  `to_json`), a `{tool, status}` record is opened when the coroutine starts
  running (awaited or gathered; a coroutine never awaited makes none), the
  arguments are checked against the schema (a failure is a ValueError and a
  record with status "error", like the invoker's gate), the tool function of
  `tools.py` runs in-process, and its result crosses back as JSON. A tool
  failure raises RuntimeError with the message chainbox's command tool makes
  of the program's stderr (trimmed, cut to 2000 characters, "exited with
  status 1" when empty).
- Each case runs in an empty directory of its own, as a chain runs in its
  empty workspace.
- The script runs with top-level await (`ast.PyCF_ALLOW_TOP_LEVEL_AWAIT`);
  its last statement, when an expression, is the answer.
"""
import ast
import asyncio
import builtins
import contextlib
import dataclasses
import gc
import importlib.util
import io
import json
import math
import sys
import tempfile
import tomllib
import warnings
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to tools.py

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
EXPECTED = HERE / "expected"

# chainbox's bounds on a tool's error message (src/chain.rs
# MAX_ERROR_MESSAGE_CHARS) and on value nesting (guest protocol MAX_VALUE_DEPTH).
MAX_ERROR_MESSAGE_CHARS = 2000
MAX_VALUE_DEPTH = 128

ANSWER = "__chain_answer__"


def load_tools_module():
    spec = importlib.util.spec_from_file_location("corpus_tools", HERE / "tools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOLS = load_tools_module()
with open(HERE / "tools.toml", "rb") as f:
    MANIFEST = tomllib.load(f)
SCHEMAS = {t["name"]: t.get("input_schema", {"type": "object"}) for t in MANIFEST["tool"]}


# --- the boundary -----------------------------------------------------------


def to_json(value, depth=0):
    """The guest's Python→JSON conversion (guest/runtime/src/json.rs): like
    `json.dumps`, but tuples, sets and frozensets become arrays, dataclass
    instances objects of their fields, and non-finite floats are refused.
    Raises TypeError for anything else, like `json.dumps`."""
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


def crossing(value):
    """A value as it arrives on the other side: through JSON text, as the
    host's serde_json would carry it (order and big integers kept)."""
    return json.loads(json.dumps(to_json(value)))


JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def schema_error(schema, value, where):
    """The first way `value` breaks the (small) subset of JSON Schema the
    corpus manifest uses, or None. chainbox's messages differ (it uses the
    `jsonschema` crate); cases compare only the ValueError's type."""
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(JSON_TYPES[t](value) for t in types):
            return f"{where}: {value!r} is not of type {' or '.join(types)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of {schema['enum']!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where}: {value!r} is less than the minimum of {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where}: {value!r} is greater than the maximum of {schema['maximum']}"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            err = schema_error(schema["items"], item, f"{where}/{i}")
            if err:
                return err
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"{where}: {name!r} is a required property"
        if schema.get("additionalProperties") is False:
            extra = [k for k in value if k not in props]
            if extra:
                return f"{where}: additional properties are not allowed ({', '.join(map(repr, extra))} unexpected)"
        for name, item in value.items():
            if name in props:
                err = schema_error(props[name], item, f"{where}/{name}")
                if err:
                    return err
    return None


def failure_message(stderr_text):
    """src/tools/command.rs `failure_message`: stderr trimmed and bounded."""
    text = stderr_text.strip()
    if not text:
        return "exited with status 1"
    if len(text) > MAX_ERROR_MESSAGE_CHARS:
        text = text[: MAX_ERROR_MESSAGE_CHARS - 1] + "…"
    return text


def make_tool(name, schema, trace):
    params = list(schema.get("properties", {}))

    async def tool(*args, **kwargs):
        if len(args) > len(params):
            s = "" if len(params) == 1 else "s"
            raise TypeError(f"{name}() takes {len(params)} positional argument{s} but {len(args)} were given")
        arguments = {}
        for param, value in zip(params, args):
            arguments[param] = to_json(value)
        for key, value in kwargs.items():
            if key in arguments:
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            arguments[key] = to_json(value)
        arguments = json.loads(json.dumps(arguments))
        record = {"tool": name, "status": "error"}
        trace.append(record)
        # A real tool call suspends: concurrent (gathered) calls all start
        # before any of them answers, as they do on chainbox's host.
        await asyncio.sleep(0)
        problem = schema_error(schema, arguments, name)
        if problem:
            raise ValueError(f"invalid arguments for {name!r}: {problem}")
        try:
            result = TOOLS.call(name, arguments)
        except Exception as exc:  # what tools.py's main prints on stderr
            raise RuntimeError(failure_message(TOOLS.error_message(exc) + "\n")) from None
        result = json.loads(json.dumps(result))
        record["status"] = "ok"
        return result

    tool.__name__ = tool.__qualname__ = name
    return tool


# --- running a case ---------------------------------------------------------


def compile_script(source, filename):
    tree = ast.parse(source, filename)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(ANSWER, ast.Store())], value=last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def run_case(source, filename):
    trace = []
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    for name, schema in SCHEMAS.items():
        namespace[name] = make_tool(name, schema, trace)
    stdout = io.StringIO()
    outcome = {}

    async def main():
        code = compile_script(source, filename)
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            await result

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(stdout):
                asyncio.run(main())
            answer = namespace.get(ANSWER)
            outcome["status"] = "ok"
            try:
                outcome["output"] = to_json(answer)
            except TypeError:
                outcome["output"] = repr(answer)
            outcome["output_text"] = answer if isinstance(answer, str) else repr(answer)
            outcome["error_type"] = None
        except Exception as exc:  # the chain's uncaught exception
            outcome["status"] = "error"
            outcome["output"] = None
            outcome["output_text"] = ""
            outcome["error_type"] = type(exc).__name__
            del exc
        # Coroutines never awaited warn when collected: drop every reference.
        namespace.clear()
        gc.collect()
    never_awaited = [
        str(w.message)
        for w in caught
        if issubclass(w.category, RuntimeWarning) and "was never awaited" in str(w.message)
    ]
    return {
        "status": outcome["status"],
        "output": outcome["output"],
        "output_text": outcome["output_text"],
        "stdout": stdout.getvalue(),
        "error_type": outcome["error_type"],
        "trace": trace,
        "warnings": never_awaited,
    }


def render(expected):
    return json.dumps(expected, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    cases = sorted(CASES.glob("*.py"))
    if names:
        cases = [c for c in cases if c.stem in names]
        missing = set(names) - {c.stem for c in cases}
        if missing:
            print(f"no such case: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    EXPECTED.mkdir(exist_ok=True)
    differ = []
    for case in cases:
        # Each case starts in an empty directory of its own, as a chain
        # starts in its empty workspace.
        with tempfile.TemporaryDirectory() as workspace, contextlib.chdir(workspace):
            text = render(run_case(case.read_text(), f"{case.stem}.py"))
        target = EXPECTED / f"{case.stem}.json"
        old = target.read_text() if target.exists() else None
        if old != text:
            differ.append(case.stem)
            if not check:
                target.write_text(text)
    if not names:
        live = {c.stem for c in cases}
        for stale in sorted(EXPECTED.glob("*.json")):
            if stale.stem not in live:
                differ.append(stale.stem)
                if not check:
                    stale.unlink()
    verb = "differ from" if check else "rewritten in"
    print(f"{len(cases)} cases; {len(differ)} {verb} expected/" + (f": {', '.join(differ)}" if differ else ""))
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
