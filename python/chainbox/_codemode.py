"""What the agent-framework integrations share: the one code-mode tool an
agent sees (its description, its argument), and what a chain's result
becomes for the model: the answer, or a failure it can fix the script from.

``chainbox.pydantic_ai`` and ``chainbox.openai_agents`` wrap this in their
framework's tool types; this module imports neither framework.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Union

import chainbox

ToolLike = Union[chainbox.Tool, Callable[..., Any]]

#: The tool's name, as ``chainbox serve`` and ``chainbox specs`` name it.
NAME = "run_chain"

CODE_DESCRIPTION = "The Python chain script; its last expression is the answer."

#: JSON Schema of the tool's arguments: one string, ``code`` (as ``chainbox specs``).
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": CODE_DESCRIPTION}},
    "required": ["code"],
    "additionalProperties": False,
}


def as_tools(tools: Sequence[ToolLike]) -> list[chainbox.Tool]:
    """Every tool a ``chainbox.Tool`` (a plain function gets the defaults)."""
    return [t if isinstance(t, chainbox.Tool) else chainbox.tool(t) for t in tools]


def _seconds(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else str(s)


def describe(tools: Sequence[chainbox.Tool], engine: chainbox.Engine) -> str:
    """The tool's description: the rules of a chain, the engine's limits,
    then the Python stubs of ``tools`` (``chainbox.stubs``)."""
    p = engine.policy
    return (
        "Runs a Python chain script in a sandbox and returns its answer. Write one short "
        "script that calls the tools below as `async` functions (`await` each call, "
        "`asyncio.gather` for independent ones) and combines their results: only the "
        "answer comes back, not every intermediate result.\n"
        "\n"
        "What comes back: the value of the script's last expression; if the script "
        'printed, {"output": <that value>, "stdout": <what it printed>}. A tool failure '
        "is a Python exception the script can catch (see the comments below); an uncaught "
        "one fails the chain: you get its error and the tool calls it made, "
        "to fix the script and run it again.\n"
        "\n"
        "Limits (a limit hit ends the chain; it cannot be caught):\n"
        f"- at most {p['max_tool_calls']} tool calls per chain\n"
        f"- {_seconds(p['call_timeout_s'])} s per tool call, {_seconds(p['total_timeout_s'])} s "
        f"for the whole chain, {_seconds(p['max_cpu_s'])} s of CPU for the script itself\n"
        f"- {p['max_memory_bytes'] // (1024 * 1024)} MiB of memory; print() output kept up to "
        f"{p['max_stdout_bytes']} bytes\n"
        f"- tool results larger than {p['max_inline_result_bytes']} bytes arrive as an artifact "
        "handle (see below)\n"
        f"- tool results larger than {p['max_inline_result_bytes']} bytes arrive as an artifact "
        "handle (see below)\n"
        f"- tools above `{p['max_risk_unapproved']}` risk need approval; a refusal is a "
        "PermissionError\n"
        "\n"
        "The tools, as Python stubs:\n"
        "\n" + chainbox.stubs(tools)
    )


def answer(result: chainbox.ChainResult) -> Any:
    """A successful chain's answer for the model: its output, or, if the
    script printed, ``{"output", "stdout"}`` (and ``warnings`` if any)."""
    if not result.stdout and not result.warnings:
        return result.output
    out: dict[str, Any] = {"output": result.output}
    if result.stdout:
        out["stdout"] = result.stdout
    if result.warnings:
        out["warnings"] = [_warning(w) for w in result.warnings]
    return out


def answer_text(result: chainbox.ChainResult) -> str:
    """``answer`` as text: a string as is, anything else as JSON."""
    value = answer(result)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _warning(w: chainbox.ChainWarning) -> str:
    return f"line {w.line}: {w.message}" if w.line else w.message


def failure(result: chainbox.ChainResult, name: str = NAME) -> str:
    """A failed chain as text the model can fix the script from: the error
    (its traceback, or the check's findings), the tool calls that had
    already run (their effects are done), what the script printed."""
    err = result.error
    lines: list[str] = []
    if err is None:
        lines.append(f"The chain did not complete (status {result.status}).")
    else:
        at = f" at line {err.line}" if err.line else ""
        lines.append(f"The chain failed{at} ({err.kind}): {err.type}: {err.message}")
        if err.traceback:
            lines.append(err.traceback.rstrip())
    for d in result.diagnostics:
        if err is None or d.message not in err.message:
            lines.append(f"line {d.line}:{d.col} [{d.rule}] {d.message}")
    for w in result.warnings:
        lines.append(f"warning: {_warning(w)}")
    if result.calls:
        lines.append("The tool calls it made, in order (those that ran are done: do not repeat them needlessly):")
        for i, c in enumerate(result.calls, 1):
            status = c.status if c.policy in (None, "within_risk", "approved") else f"{c.status} ({c.policy})"
            lines.append(f"  {i}. {c.tool}: {status}" + (f": {c.error}" if c.error else ""))
    else:
        lines.append("No tool call ran.")
    if result.stdout:
        lines.append("The script printed:")
        lines.append(result.stdout.rstrip("\n"))
    lines.append(f"Fix the script and call {name} again.")
    return "\n".join(lines)

