"""Python functions as tools: sync and async, their schemas, their errors."""

import asyncio
import threading
import time
from typing import Literal, Optional

import pydantic
import pytest

import chainbox


def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


async def slow_double(x: float) -> float:
    await asyncio.sleep(0.01)
    return x * 2


def test_a_sync_tool_answers_the_script(engine):
    r = engine.run("await add(a=2, b=3)", tools=[add])
    assert r.ok, r
    assert r.output == 5
    assert [c.tool for c in r.calls] == ["add"]


def test_an_async_tool_answers_the_script_under_run(engine):
    r = engine.run("await slow_double(x=1.5)", tools=[slow_double])
    assert r.ok, r
    assert r.output == 3.0


def test_an_async_tool_runs_on_the_loop_of_run_async(engine):
    seen = []

    async def where() -> bool:
        seen.append(asyncio.get_running_loop())
        return True

    async def main():
        r = await engine.run_async("await where()", tools=[where])
        return r, asyncio.get_running_loop()

    r, loop = asyncio.run(main())
    assert r.ok, r
    assert seen == [loop]


def test_a_sync_tool_does_not_block_the_loop_of_run_async(engine):
    def blocking() -> str:
        time.sleep(0.5)
        return "done"

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        t = asyncio.create_task(ticker())
        r = await engine.run_async("await blocking()", tools=[blocking])
        t.cancel()
        return r, ticks

    r, ticks = asyncio.run(main())
    assert r.output == "done", r
    assert ticks >= 10


def test_a_blocking_tool_does_not_stall_another_chain(engine):
    release = threading.Event()

    def wait_for_release() -> str:
        release.wait(10)
        return "released"

    slow = {}
    t = threading.Thread(target=lambda: slow.update(r=engine.run("await wait_for_release()", tools=[wait_for_release])))
    t.start()
    try:
        started = time.monotonic()
        fast = engine.run("await add(a=1, b=1)", tools=[add])
        elapsed = time.monotonic() - started
    finally:
        release.set()
        t.join()
    assert fast.output == 2
    assert elapsed < 5
    assert slow["r"].output == "released"


def test_the_schema_comes_from_the_type_hints():
    def search(query: str, limit: int = 10, kind: Literal["web", "news"] = "web", tags: Optional[list[str]] = None):
        """Searches."""

    t = chainbox.tool(search)
    assert t.description == "Searches."
    assert t.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "kind": {"enum": ["web", "news"], "default": "web"},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_a_schema_given_explicitly_is_used():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}

    @chainbox.tool(schema=schema, name="count", description="Counts.", risk="high")
    def anything(**kwargs):
        return kwargs["n"]

    assert (anything.name, anything.description, anything.risk) == ("count", "Counts.", "high")
    assert anything.input_schema is schema


def test_the_schema_refuses_bad_arguments_before_the_tool_runs(engine):
    r = engine.run("try:\n    await add(a='x', b=1)\nexcept ValueError as e:\n    r = 'refused'\nr", tools=[add])
    assert r.output == "refused", r


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


def test_a_pydantic_argument_has_its_schema_and_arrives_as_its_model(engine):
    got = []

    def norm(p: Point) -> int:
        got.append(p)
        return abs(p.x) + abs(p.y)

    t = chainbox.tool(norm)
    assert t.input_schema["properties"]["p"] == Point.model_json_schema()
    r = engine.run("await norm(p={'x': -3, 'y': 4})", tools=[t])
    assert r.output == 7, r
    assert got == [Point(x=-3, y=4)]


class Line(pydantic.BaseModel):
    start: Point
    end: Point


def test_a_nested_pydantic_model_keeps_its_definitions_at_the_top(engine):
    def length(line: Line) -> int:
        return abs(line.end.x - line.start.x)

    t = chainbox.tool(length)
    assert t.input_schema["properties"]["line"]["properties"]["start"] == {"$ref": "#/$defs/Point"}
    assert "Point" in t.input_schema["$defs"]
    r = engine.run("await length(line={'start': {'x': 1}, 'end': {'x': 4, 'y': 2}})", tools=[t])
    assert r.output == 3, r


def test_a_pydantic_result_reaches_the_script_as_a_dict(engine):
    def origin() -> Point:
        return Point(x=1)

    r = engine.run("await origin()", tools=[origin])
    assert r.output == {"x": 1, "y": 0}, r


def test_a_tool_raising_is_a_runtime_error_in_the_script_with_its_message(engine):
    def boom() -> None:
        raise KeyError("no such account: 42")

    script = "try:\n    await boom()\nexcept RuntimeError as e:\n    r = str(e)\nr"
    r = engine.run(script, tools=[boom])
    assert r.ok, r
    assert "no such account: 42" in r.output
    assert "Traceback" not in r.output and __file__ not in r.output
    assert r.calls[0].status == "error"


def test_an_uncaught_tool_error_fails_the_chain_without_the_tool_traceback(engine):
    def boom() -> None:
        raise ValueError("disk full")

    r = engine.run("await boom()", tools=[boom])
    assert r.status == "error"
    assert (r.error.kind, r.error.type) == ("script", "RuntimeError")
    assert "disk full" in r.error.message
    assert __file__ not in (r.error.message + (r.error.traceback or ""))
    with pytest.raises(chainbox.ScriptError):
        r.raise_for_status()


def test_an_async_tool_raising_is_a_runtime_error_too(engine):
    async def boom() -> None:
        raise RuntimeError("upstream 503")

    r = engine.run("try:\n    await boom()\nexcept RuntimeError as e:\n    r = str(e)\nr", tools=[boom])
    assert "upstream 503" in r.output, r


def test_a_tool_name_that_is_no_identifier_is_refused(engine):
    t = chainbox.tool(add, name="not an identifier")
    with pytest.raises(chainbox.ToolDefinitionError):
        engine.run("1", tools=[t])


def test_stubs_show_each_tool_as_an_async_def():
    text = chainbox.stubs([add, slow_double])
    assert "async def add(a: int, b: int)" in text
    assert "Adds two integers." in text
    assert "async def slow_double(x: float)" in text
