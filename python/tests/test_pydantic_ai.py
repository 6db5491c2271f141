"""chainbox.pydantic_ai: an Agent with one code-mode tool, driven offline by
pydantic-ai's FunctionModel (a model that is a Python function)."""

import asyncio
import subprocess
import sys

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, Tool  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import chainbox  # noqa: E402
from chainbox.pydantic_ai import CodeModeToolset  # noqa: E402

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


def last_part(messages: list[ModelMessage]):
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return last.parts[-1]


def scripted_model(scripts, seen):
    """A model that answers each turn with the next script as a run_chain
    call, then with the last tool result as its text answer."""
    turn = iter(scripts)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((messages, info))
        part = last_part(messages)
        script = next(turn, None)
        if script is None:
            assert isinstance(part, ToolReturnPart), part
            return ModelResponse(parts=[TextPart(f"answer: {part.model_response_str()}")])
        return ModelResponse(parts=[ToolCallPart("run_chain", {"code": script})])

    return FunctionModel(model)


def test_an_agent_runs_a_chain_over_two_python_tools_and_gets_its_answer():
    calls, seen, results = [], [], []
    toolset = CodeModeToolset(make_tools(calls), on_result=results.append)
    agent = Agent(scripted_model([SCRIPT], seen), toolsets=[toolset])

    out = agent.run_sync("Which city is warmest?")

    # The tools really ran, inside one chain.
    assert sorted(calls) == [("convert", 21), ("get_weather", "Oslo"), ("get_weather", "Paris")]
    assert results[0].ok and [c.tool for c in results[0].calls].count("get_weather") == 2
    # The model saw one tool, whose description carries the stubs.
    info = seen[0][1]
    assert [t.name for t in info.function_tools] == ["run_chain"]
    tool_def = info.function_tools[0]
    assert "async def get_weather(city: str)" in tool_def.description
    assert "async def convert(amount: int, factor: int)" in tool_def.description
    assert tool_def.parameters_json_schema["required"] == ["code"]
    # The chain's answer came back as the tool's result, and to the agent.
    returned = last_part(seen[1][0])
    assert isinstance(returned, ToolReturnPart)
    assert returned.content == {"warmest": "Paris", "doubled": 42}
    assert out.output == 'answer: {"warmest":"Paris","doubled":42}'


def test_a_failing_chain_reaches_the_model_as_a_fixable_retry():
    calls, seen = [], []
    failing = 'w = await get_weather(city="Paris")\nprint("got", w["temp_c"])\nw["wind"]'
    fixed = 'w = await get_weather(city="Paris")\nw.get("wind", "calm")'
    agent = Agent(scripted_model([failing, fixed], seen), toolsets=[CodeModeToolset(make_tools(calls))])

    out = agent.run_sync("How windy is Paris?")

    # A ModelRetry: the tool's result marked retried (a RetryPromptPart
    # before pydantic-ai 2.7x), with the failure's text.
    retry = last_part(seen[1][0])
    if isinstance(retry, RetryPromptPart):
        text = retry.model_response()
    else:
        assert isinstance(retry, ToolReturnPart) and retry.outcome == "retried", retry
        text = retry.model_response_str()
    assert "KeyError" in text and "line 3" in text, text
    assert "1. get_weather: ok" in text, text  # the call that already ran
    assert "got 21" in text, text  # what the script printed
    assert "Fix the script" in text
    assert out.output == "answer: calm"
    assert calls == [("get_weather", "Paris"), ("get_weather", "Paris")]


def test_a_denied_call_and_the_engine_policy_are_the_toolsets():
    @chainbox.tool(risk="critical")
    def transfer(amount: int) -> str:
        """Moves money."""
        return f"sent {amount}"

    seen = []
    engine = chainbox.Engine({"max_tool_calls": 7})
    toolset = CodeModeToolset([transfer], engine=engine, approve=lambda req: req.arguments["amount"] < 10)
    script = "small = await transfer(amount=5)\ntry:\n    big = await transfer(amount=50)\nexcept PermissionError:\n    big = 'refused'\n[small, big]"
    out = Agent(scripted_model([script], seen), toolsets=[toolset]).run_sync("pay")
    assert out.output == 'answer: ["sent 5","refused"]'
    assert "at most 7 tool calls" in seen[0][1].function_tools[0].description


def test_pydantic_ai_tools_without_context_are_chain_tools():
    def double(x: int) -> int:
        """Doubles x.

        Args:
            x: The number to double.
        """
        return 2 * x

    seen = []
    toolset = CodeModeToolset([Tool(double, name="twice")])
    out = Agent(scripted_model(["await twice(x=21)"], seen), toolsets=[toolset]).run_sync("hi")
    assert out.output == "answer: 42"
    description = seen[0][1].function_tools[0].description
    assert "async def twice(x: int)" in description and "x: The number to double." in description

    async def with_ctx(ctx, x: int) -> int:
        return x

    with pytest.raises(chainbox.ToolDefinitionError, match="RunContext"):
        CodeModeToolset([Tool(with_ctx, takes_ctx=True)])


def test_chainbox_imports_without_pydantic_ai_and_names_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "import chainbox\n"
        "try:\n    import chainbox.pydantic_ai\n"
        "except ImportError as e:\n    print(e)\n"
    )
    # In tmp_path: the source folder chainbox/ must not shadow the installed package.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "pip install 'chainbox[pydantic-ai]'" in out.stdout, out
