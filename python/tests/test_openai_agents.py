"""chainbox.openai_agents: the code-mode FunctionTool, invoked as the SDK
invokes it, and in a Runner driven offline by a fake Model."""

import asyncio
import json
import subprocess
import sys

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, ModelResponse, RunConfig, Runner, Usage  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import chainbox  # noqa: E402
from chainbox.openai_agents import code_mode_tool  # noqa: E402

SCRIPT = """
import asyncio
cities = ["Paris", "Oslo"]
weather = await asyncio.gather(*[get_weather(city=c) for c in cities])
warmest = max(weather, key=lambda w: w["temp_c"])
rate = await convert(amount=warmest["temp_c"], factor=2)
{"warmest": warmest["city"], "doubled": rate}
"""


def make_tools(calls):
    @chainbox.tool
    def get_weather(city: str) -> dict:
        """Current weather of a city."""
        calls.append(("get_weather", city))
        return {"city": city, "temp_c": {"Paris": 21, "Oslo": 9}[city]}

    async def convert(amount: int, factor: int) -> int:
        """Multiplies an amount by a factor."""
        await asyncio.sleep(0)
        calls.append(("convert", amount))
        return amount * factor

    return [get_weather, convert]


def invoke(tool: FunctionTool, code: str) -> str:
    args = json.dumps({"code": code})
    ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="call_1", tool_arguments=args)
    return asyncio.run(tool.on_invoke_tool(ctx, args))


def test_the_tool_runs_a_chain_over_two_python_tools_and_returns_its_answer():
    calls, results = [], []
    tool = code_mode_tool(make_tools(calls), on_result=results.append)
    assert isinstance(tool, FunctionTool) and tool.name == "run_chain"
    assert "async def get_weather(city: str)" in tool.description
    assert "async def convert(amount: int, factor: int)" in tool.description
    assert tool.params_json_schema["required"] == ["code"] and tool.strict_json_schema

    out = invoke(tool, SCRIPT)

    assert json.loads(out) == {"warmest": "Paris", "doubled": 42}
    assert sorted(calls) == [("convert", 21), ("get_weather", "Oslo"), ("get_weather", "Paris")]
    assert results[0].ok and len(results[0].calls) == 3


def test_a_failing_chain_returns_a_text_to_fix_the_script_from():
    calls = []
    tool = code_mode_tool(make_tools(calls))
    out = invoke(tool, 'w = await get_weather(city="Paris")\nprint("got", w["temp_c"])\nw["wind"]')
    assert "KeyError" in out and "line 3" in out, out
    assert "1. get_weather: ok" in out and "got 21" in out, out
    assert "Fix the script and call run_chain again." in out
    # A script the check refuses before it runs: no call made.
    out = invoke(tool, 'await get_weather(town="Paris")')
    assert "type_error" in out and "No tool call ran." in out, out
    assert calls == [("get_weather", "Paris")]


def test_a_printed_answer_and_a_denied_call():
    @chainbox.tool(risk="critical")
    def transfer(amount: int) -> str:
        """Moves money."""
        return f"sent {amount}"

    tool = code_mode_tool([transfer], engine=chainbox.Engine({"max_tool_calls": 7}), approve=lambda r: r.arguments["amount"] < 10)
    assert "at most 7 tool calls" in tool.description
    script = "print('paying')\nsmall = await transfer(amount=5)\ntry:\n    big = await transfer(amount=50)\nexcept PermissionError:\n    big = 'refused'\n[small, big]"
    assert json.loads(invoke(tool, script)) == {"output": ["sent 5", "refused"], "stdout": "paying\n"}
    assert invoke(tool, "'plain text'") == "plain text"


class ScriptedModel(Model):
    """A Model that calls run_chain with each script in turn, then answers
    with the last tool output as text."""

    def __init__(self, scripts):
        self.scripts = list(scripts)
        self.requests = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):
        self.requests.append((input, tools))
        n = len(self.requests)
        if self.scripts:
            call = ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{n}",
                call_id=f"call_{n}",
                name="run_chain",
                arguments=json.dumps({"code": self.scripts.pop(0)}),
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        last = [i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"][-1]
        text = ResponseOutputText(type="output_text", text=f"answer: {last['output']}", annotations=[])
        message = ResponseOutputMessage(type="message", id=f"msg_{n}", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def test_a_runner_with_a_fake_model_gets_the_chains_answer_and_fixes_a_failure():
    calls = []
    model = ScriptedModel(['w = await get_weather(city="Oslo")\nw["wind"]', SCRIPT])
    agent = Agent(name="assistant", model=model, tools=[code_mode_tool(make_tools(calls))])

    result = asyncio.run(Runner.run(agent, "Which city is warmest?", run_config=RunConfig(tracing_disabled=True)))

    assert [t.name for t in model.requests[0][1]] == ["run_chain"]
    failure = [i for i in model.requests[1][0] if isinstance(i, dict) and i.get("type") == "function_call_output"][-1]
    assert "KeyError" in failure["output"] and "1. get_weather: ok" in failure["output"]
    assert json.loads(result.final_output.removeprefix("answer: ")) == {"warmest": "Paris", "doubled": 42}
    assert sorted(calls) == [("convert", 21), ("get_weather", "Oslo"), ("get_weather", "Oslo"), ("get_weather", "Paris")]


def test_chainbox_imports_without_the_agents_sdk_and_names_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "import chainbox\n"
        "try:\n    import chainbox.openai_agents\n"
        "except ImportError as e:\n    print(e)\n"
    )
    # In tmp_path: the source folder chainbox/ must not shadow the installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "pip install 'chainbox[openai-agents]'" in out.stdout, out
