"""The differential corpus (tests/corpus/) through the Python API, on both
guests: a deterministic sample of its cases (every 10th by name, the cases
`known_differences.toml` lists as differing left out) runs through
`chainbox.Engine` with the corpus's fake tools as Python tools, and each
result is compared with CPython's expected answer as tests/it/corpus.rs
compares it: `status`, the uncaught exception's type, `output` (exact:
key order, int against float, big integers by value), `output_text`,
`stdout`, the trace's `(tool, status)` sequence and the "never awaited"
warnings' messages.

Each sampled case runs on the CPython guest, and on monty too where the
Rust harness expects monty to run it (a case not named `cpython_*` nor
listed under `[routed]`), with `python="monty"` (which must then be the
interpreter that ran it). `CHAINBOX_CORPUS=<substring>` runs the cases whose
name holds it instead of the sample.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import chainbox

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "corpus"
EVERY = 10


def _known(section: str) -> dict[str, str]:
    table = tomllib.loads((CORPUS / "known_differences.toml").read_text())
    return dict(table.get(section, {}))


def _cases() -> list[str]:
    names = sorted(p.stem for p in (CORPUS / "cases").glob("*.py"))
    wanted = os.environ.get("CHAINBOX_CORPUS")
    if wanted:
        return [n for n in names if wanted in n]
    differs = _known("differs")
    return [n for i, n in enumerate(names) if i % EVERY == 0 and n not in differs]


def _load(name: str) -> Any:
    """A module of tests/corpus/ (`tools.py`, `reference.py`), loaded by path."""
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", CORPUS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _corpus_tools() -> list[chainbox.Tool]:
    """tools.toml's tools as Python tools calling tools.py in-process, each
    failing as its command tool fails (the message its stderr would hold)."""
    module = _load("tools")
    # The message a command tool makes of its stderr, as the CPython
    # reference runner makes it.
    failure_message = _load("reference").failure_message
    manifest = tomllib.loads((CORPUS / "tools.toml").read_text())

    def make(name: str) -> Any:
        def call(**arguments: Any) -> Any:
            try:
                return module.call(name, arguments)
            except Exception as exc:
                raise RuntimeError(failure_message(module.error_message(exc))) from None

        return call

    return [
        chainbox.Tool(
            fn=make(t["name"]),
            name=t["name"],
            description=t.get("description", ""),
            input_schema=t["input_schema"],
            risk=t.get("risk", "safe"),
        )
        for t in manifest["tool"]
    ]


def _expected_interpreter(name: str, routed: dict[str, str]) -> str:
    return "cpython" if name.startswith("cpython_") or name in routed else "monty"


# --- exact comparison, as tests/it/corpus.rs's json_diff ---------------------


def _json_diff(path: str, expected: Any, actual: Any, out: list[str]) -> None:
    where = path or "(top)"
    if isinstance(expected, dict) and isinstance(actual, dict):
        if list(expected) != list(actual):
            what = "key order differs" if sorted(expected) == sorted(actual) else "keys differ"
            out.append(f"{where}: {what}: expected {list(expected)}, got {list(actual)}")
            if sorted(expected) != sorted(actual):
                return
        for key, value in expected.items():
            _json_diff(f"{path}.{key}", value, actual[key], out)
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{where}: expected {len(expected)} items, got {len(actual)}: {expected!r} vs {actual!r}")
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            _json_diff(f"{path}[{i}]", e, a, out)
    elif type(expected) is not type(actual):
        out.append(f"{where}: expected {type(expected).__name__} {expected!r}, got {type(actual).__name__} {actual!r}")
    elif isinstance(expected, float):
        same = expected == actual and math.copysign(1, expected) == math.copysign(1, actual)
        if not same and not (math.isnan(expected) and math.isnan(actual)):
            out.append(f"{where}: expected float {expected!r}, got {actual!r}")
    elif expected != actual:
        out.append(f"{where}: expected {expected!r}, got {actual!r}")


def _compare(expected: dict[str, Any], r: chainbox.ChainResult) -> list[str]:
    out: list[str] = []
    if r.status != expected["status"]:
        why = f" ({r.error.kind} {r.error.type}: {r.error.message[:300]})" if r.error else ""
        out.append(f"status: expected {expected['status']}, got {r.status}{why}")
    got_type = r.error.type if r.error else None
    if expected.get("error_type") != got_type:
        message = f" ({r.error.message[:300]})" if r.error else ""
        out.append(f"error type: expected {expected.get('error_type')!r}, got {got_type!r}{message}")
    diffs: list[str] = []
    _json_diff("", expected.get("output"), r.output, diffs)
    out.extend(f"output {d}" for d in diffs[:8])
    for field, got in (("output_text", r.output_text), ("stdout", r.stdout)):
        if expected.get(field, "") != got:
            out.append(f"{field}: expected {expected.get(field, '')!r}, got {got!r}")
    want_trace = [(c["tool"], c["status"]) for c in expected.get("trace", [])]
    got_trace = [(c.tool, c.status) for c in r.calls]
    if want_trace != got_trace:
        errors = [c.error for c in r.calls if c.error]
        out.append(f"trace: expected {want_trace}, got {got_trace} (call errors: {errors})")
    want_warnings = list(expected.get("warnings", []))
    got_warnings = [w.message for w in r.warnings if not w.message.startswith("type check")]
    if want_warnings != got_warnings:
        out.append(f"warnings: expected {want_warnings}, got {got_warnings}")
    return out


# --- the test ---------------------------------------------------------------


def test_the_sample_is_deterministic_and_calls_tools():
    cases = _cases()
    if os.environ.get("CHAINBOX_CORPUS"):
        pytest.skip("CHAINBOX_CORPUS picks the cases")
    assert len(cases) >= 20, cases
    with_calls = [n for n in cases if json.loads((CORPUS / "expected" / f"{n}.json").read_text()).get("trace")]
    assert len(with_calls) >= 10, with_calls
    assert any(n.startswith("cpython_") or n in _known("routed") for n in cases), "a case only CPython runs"


@pytest.mark.parametrize("python", ["monty", "cpython"])
def test_the_corpus_sample_matches_cpython(python: str):
    routed = _known("routed")
    cases = [
        n for n in _cases() if python == "cpython" or _expected_interpreter(n, routed) == "monty"
    ]
    assert cases
    tools = _corpus_tools()
    # As the Rust harness: every case runs to its end (no check before the
    # run), every call approved.
    engine = chainbox.Engine({"type_check": "off"}, python=python, approve="auto")

    def run(name: str) -> tuple[str, list[str]]:
        script = (CORPUS / "cases" / f"{name}.py").read_text()
        expected = json.loads((CORPUS / "expected" / f"{name}.json").read_text())
        r = engine.run(script, tools=tools)
        diffs = _compare(expected, r)
        if r.interpreter != python:
            diffs.append(f"interpreter: ran on {r.interpreter}, asked for {python}")
        return name, diffs

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, cases))
    failures = [f"--- {name} (tests/corpus/cases/{name}.py)\n    " + "\n    ".join(d) for name, d in results if d]
    assert not failures, f"{len(failures)} of {len(cases)} cases differ from CPython on {python}:\n" + "\n".join(
        failures
    )
