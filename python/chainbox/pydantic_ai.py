"""Code mode for pydantic-ai: one tool, ``run_chain``, over your tools.

    from pydantic_ai import Agent
    from chainbox.pydantic_ai import CodeModeToolset

    agent = Agent(model, toolsets=[CodeModeToolset([get_weather, send_email])])

The agent sees one tool whose argument is a Python script and whose
description carries the stubs of the tools (``chainbox.stubs``); the script
runs in chainbox's sandbox (``Engine.run_async``, on the agent's loop) and
its answer is the tool's result. A chain that fails is a ``ModelRetry``:
the model reads the error and the calls that already ran, and fixes the
script. Needs ``pip install 'chainbox[pydantic-ai]'``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

try:
    from pydantic_ai import ModelRetry, Tool as PydanticTool
    from pydantic_ai.toolsets import FunctionToolset
except ModuleNotFoundError as exc:  # the extra is not installed (not: it is, and fails)
    if exc.name != "pydantic_ai":
        raise
    raise ImportError("chainbox.pydantic_ai needs pydantic-ai: pip install 'chainbox[pydantic-ai]'") from exc

import chainbox

from . import _codemode

__all__ = ["CodeModeToolset"]


def _chain_tool(t: Union[chainbox.Tool, PydanticTool[Any], Callable[..., Any]]) -> chainbox.Tool:
    if isinstance(t, PydanticTool):
        if t.takes_ctx:
            raise chainbox.ToolDefinitionError(
                f"tool {t.name!r} takes a RunContext, which a chain's call cannot pass; give a function without it"
            )
        # pydantic-ai's schema: its parameters' descriptions (from the
        # docstring's Args) reach the stubs.
        return chainbox.tool(
            t.function, name=t.name, description=t.description, schema=t.tool_def.parameters_json_schema
        )
    return t if isinstance(t, chainbox.Tool) else chainbox.tool(t)


class CodeModeToolset(FunctionToolset[Any]):
    """A pydantic-ai toolset of one tool, ``run_chain(code)``, that runs the
    script ``code`` against ``tools`` in chainbox's sandbox.

    ``tools``: ``chainbox.Tool``s, plain functions or coroutines, or
    pydantic-ai ``Tool``s that take no ``RunContext``. ``engine``: the
    ``chainbox.Engine`` (its policy: budgets, timeouts, risk); a default one
    if ``None``. ``approve``: decides calls above the policy's
    ``max_risk_unapproved`` as in ``Engine.run`` (``None``: the engine's).
    ``on_result``: called with every chain's ``ChainResult`` (its trace),
    ok or not. ``max_retries``: how many failed chains in a row the model may
    fix before the run fails (pydantic-ai's retries of the tool).
    """

    def __init__(
        self,
        tools: Sequence[Union[chainbox.Tool, PydanticTool[Any], Callable[..., Any]]],
        *,
        engine: Optional[chainbox.Engine] = None,
        approve: Optional[chainbox.Approve] = None,
        on_result: Optional[Callable[[chainbox.ChainResult], Any]] = None,
        name: str = _codemode.NAME,
        max_retries: Optional[int] = 3,
        id: Optional[str] = None,
    ) -> None:
        super().__init__(max_retries=max_retries, id=id)
        self.engine = engine if engine is not None else chainbox.Engine()
        self.chain_tools = [_chain_tool(t) for t in tools]
        self.approve = approve
        self.on_result = on_result
        self.tool_name = name
        self.add_function(
            self._run_chain,
            name=name,
            description=_codemode.describe(self.chain_tools, self.engine),
            takes_ctx=False,
        )

    async def _run_chain(self, code: str) -> Any:
        """Runs a chain.

        Args:
            code: The Python chain script; its last expression is the answer.
        """
        result = await self.engine.run_async(code, tools=self.chain_tools, approve=self.approve)
        if self.on_result is not None:
            self.on_result(result)
        if not result.ok:
            raise ModelRetry(_codemode.failure(result, self.tool_name))
        return _codemode.answer(result)
