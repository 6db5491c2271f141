"""Code mode for the OpenAI Agents SDK: one function tool, ``run_chain``,
over your tools.

    from agents import Agent
    from chainbox.openai_agents import code_mode_tool

    agent = Agent(name="assistant", tools=[code_mode_tool([get_weather, send_email])])

The agent sees one tool whose argument is a Python script and whose
description carries the stubs of the tools (``chainbox.stubs``); the script
runs in chainbox's sandbox (``Engine.run_async``, on the agent's loop) and
its answer is the tool's output. A chain that fails returns a text the
model can fix the script from: the error and the calls that already ran.
Needs ``pip install 'chainbox[openai-agents]'``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any, Optional

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # the extra is not installed (not: it is, and fails)
    if exc.name != "agents":
        raise
    raise ImportError("chainbox.openai_agents needs openai-agents: pip install 'chainbox[openai-agents]'") from exc

import chainbox

from . import _codemode

__all__ = ["code_mode_tool"]


def code_mode_tool(
    tools: Sequence[_codemode.ToolLike],
    *,
    engine: Optional[chainbox.Engine] = None,
    approve: Optional[chainbox.Approve] = None,
    on_result: Optional[Callable[[chainbox.ChainResult], Any]] = None,
    name: str = _codemode.NAME,
) -> FunctionTool:
    """An Agents SDK ``FunctionTool``, ``run_chain(code)``, that runs the
    script ``code`` against ``tools`` in chainbox's sandbox.

    ``tools``: ``chainbox.Tool``s or plain functions and coroutines.
    ``engine``: the ``chainbox.Engine`` (its policy: budgets, timeouts,
    risk); a default one if ``None``. ``approve``: decides calls above the
    policy's ``max_risk_unapproved`` as in ``Engine.run`` (``None``: the
    engine's). ``on_result``: called with every chain's ``ChainResult``
    (its trace), ok or not. The output is the answer as text (a string as
    is, anything else as JSON), or the failure's text.
    """
    the_engine = engine if engine is not None else chainbox.Engine()
    chain_tools = _codemode.as_tools(tools)

    async def on_invoke_tool(ctx: ToolContext[Any], args_json: str) -> str:
        try:
            args = json.loads(args_json)
            code = args["code"]
            if not isinstance(code, str):
                raise TypeError("`code` must be a string")
        except (ValueError, KeyError, TypeError) as exc:
            return f"{name} takes one argument, `code`, the script as a string ({exc})."
        result = await the_engine.run_async(code, tools=chain_tools, approve=approve)
        if on_result is not None:
            on_result(result)
        if not result.ok:
            return _codemode.failure(result, name)
        return _codemode.answer_text(result)

    return FunctionTool(
        name=name,
        description=_codemode.describe(chain_tools, the_engine),
        params_json_schema=copy.deepcopy(_codemode.INPUT_SCHEMA),
        on_invoke_tool=on_invoke_tool,
        strict_json_schema=True,
    )

