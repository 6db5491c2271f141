"""The engine: policies, approvals, both Pythons, the result."""

import asyncio
import json
import os
import subprocess
import threading
import time
import _thread
import sys
from pathlib import Path

import pytest

import chainbox


@chainbox.tool(risk="critical")
def transfer(amount: int) -> str:
    """Moves money."""
    return f"sent {amount}"


def ping() -> str:
    return "pong"


def test_an_approved_call_runs_and_is_recorded_as_approved(engine):
    asked = []

    def approve(req: chainbox.ApprovalRequest) -> bool:
        asked.append(req)
        return True

    r = engine.run("await transfer(amount=5)", tools=[transfer], approve=approve)
    assert r.output == "sent 5", r
    assert (asked[0].tool, asked[0].arguments, asked[0].risk) == ("transfer", {"amount": 5}, "critical")
    assert (r.calls[0].status, r.calls[0].policy) == ("ok", "approved")


def test_a_denied_call_is_a_permission_error_and_recorded_as_denied(engine):
    script = "try:\n    await transfer(amount=5)\nexcept PermissionError:\n    r = 'refused'\nr"
    r = engine.run(script, tools=[transfer], approve=lambda req: False)
    assert r.output == "refused", r
    assert (r.calls[0].status, r.calls[0].policy) == ("denied", "denied_approval")


def test_an_async_approval_callback_decides_under_run_async(engine):
    async def approve(req):
        await asyncio.sleep(0)
        return req.arguments["amount"] < 10

    async def main():
        small = await engine.run_async("await transfer(amount=5)", tools=[transfer], approve=approve)
        big = await engine.run_async("await transfer(amount=50)", tools=[transfer], approve=approve)
        return small, big

    small, big = asyncio.run(main())
    assert small.calls[0].policy == "approved"
    assert big.calls[0].policy == "denied_approval"


def test_approve_auto_and_deny_decide_without_a_callback(engine):
    assert engine.run("await transfer(amount=1)", tools=[transfer], approve="auto").calls[0].policy == "approved"
    assert engine.run("await transfer(amount=1)", tools=[transfer]).calls[0].policy == "denied_approval"


def test_a_call_past_the_budget_ends_the_chain(engine):
    budget = chainbox.Engine({"max_tool_calls": 2})
    r = budget.run("for i in range(3):\n    await ping()", tools=[ping])
    assert r.status == "error"
    assert r.error.kind == "tool_budget"
    assert len(r.calls) == 2
    with pytest.raises(chainbox.LimitExceeded):
        r.raise_for_status()


def test_a_policy_may_be_toml_text():
    e = chainbox.Engine('max_tool_calls = 7\n[tools.transfer]\ndeny = true\n')
    assert e.policy["max_tool_calls"] == 7
    assert e.policy["tools"]["transfer"]["deny"] is True


def test_a_bad_policy_names_its_field():
    with pytest.raises(chainbox.PolicyError, match="max_risk_unapproved"):
        chainbox.Engine({"max_risk_unapproved": "extreme"})
    with pytest.raises(chainbox.PolicyError, match="call_timeout_s"):
        chainbox.Engine("call_timeout_s = -1")


@pytest.mark.parametrize("python", ["monty", "cpython"])
def test_each_python_runs_the_script(python):
    e = chainbox.Engine(python=python)
    r = e.run("import sys\nv = await ping()\n[v, sys.version_info[0]]", tools=[ping])
    assert r.ok, r
    assert r.output == ["pong", 3]
    assert r.interpreter == python


def test_the_result_carries_stdout_output_and_usage(engine):
    r = engine.run("print('hello')\n{'n': 2**70}", tools=[])
    assert r.stdout == "hello\n"
    assert r.output == {"n": 2**70}
    assert r.output_text == "{'n': 1180591620717411303424}"
    assert r.tool_calls == 0 and r.calls == []
    assert r.usage.peak_memory_bytes > 0
    assert r.interpreter == "monty"
    assert r.raw["status"] == "ok"


def test_a_script_error_comes_back_with_its_type_and_line(engine):
    r = engine.run("x = 1\n1 / 0", tools=[])
    assert (r.status, r.error.kind, r.error.type, r.error.line) == ("error", "script", "ZeroDivisionError", 2)


def test_a_coroutine_never_awaited_is_a_warning(engine):
    r = engine.run("ping()\n1", tools=[ping])
    assert any("never awaited" in w.message for w in r.warnings), r.warnings


def test_cancelling_run_async_cancels_the_chain(engine):

    async def main():
        gate = asyncio.Event()

        async def hang() -> None:
            gate.set()
            await asyncio.sleep(30)

        task = asyncio.create_task(engine.run_async("await hang()", tools=[hang]))
        await asyncio.wait_for(gate.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), 20))


def readme_python_example() -> str:
    """The Python example of the repository's README (its `## Python` section)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("\n## Python\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_wheel_installed_into_a_fresh_venv_runs_the_readmes_example(tmp_path: Path):
    wheel = os.environ.get("CHAINBOX_WHEEL")
    if not wheel:
        pytest.skip("CHAINBOX_WHEEL is not set (python/test.sh sets it)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-index", wheel], check=True)
    example = readme_python_example()
    expected = example.rsplit("# ", 1)[1].strip()
    out = subprocess.run([str(py), "-c", example], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == expected, out


def test_an_approval_may_replace_the_arguments(engine):
    r = engine.run("await transfer(amount=500)", tools=[transfer], approve=lambda req: {"arguments": {"amount": 5}})
    assert r.output == "sent 5", r
    assert r.calls[0].policy == "approved_modified"


def test_a_call_past_its_timeout_cancels_the_async_tool():
    cancelled = threading.Event()

    async def hang() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    e = chainbox.Engine({"call_timeout_s": 0.5, "approval_timeout_s": 0.2})
    r = e.run("try:\n    await hang()\nexcept TimeoutError:\n    r = 'timed out'\nr", tools=[hang])
    assert r.output == "timed out", r
    assert r.calls[0].status == "timeout"
    assert cancelled.wait(5)


def test_an_interrupt_while_run_waits_cancels_the_chain(engine):
    def hang() -> None:
        time.sleep(3)

    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        engine.run("await hang()", tools=[hang])
    assert time.monotonic() - started < 2.5


def test_on_event_sees_prints_and_calls_in_order_before_run_returns(engine):
    events = []
    r = engine.run("print('a')\nawait ping()\nprint('b')", tools=[ping], on_event=events.append)
    assert r.ok, r
    kinds = [(e.kind, e.text or e.tool) for e in events]
    assert kinds == [("stdout", "a\n"), ("call_started", "ping"), ("call_finished", "ping"), ("stdout", "b\n")]
    assert events[2].record == r.calls[0]


def test_on_event_is_called_on_the_loop_of_run_async(engine):
    async def main():
        loop = asyncio.get_running_loop()
        seen = []
        r = await engine.run_async("print('x')", on_event=lambda e: seen.append((e.text, asyncio.get_running_loop())))
        await asyncio.sleep(0)
        return r, seen, loop

    r, seen, loop = asyncio.run(main())
    assert seen == [("x\n", loop)]


def test_configure_after_the_engine_is_built_is_refused(engine):
    with pytest.raises(chainbox.EngineError, match="already built"):
        chainbox.configure(max_concurrent_chains=4)


def test_configure_before_the_first_engine_is_taken(tmp_path: Path):
    # The default cache folder, named: a new one would compile the guests
    # again (~30 s).
    cache = os.environ.get("CHAINBOX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "chainbox"
    )
    code = (
        "import chainbox, sys\n"
        "chainbox.configure(cache_dir=sys.argv[1], max_concurrent_chains=2)\n"
        "print(chainbox.Engine().run('1 + 1').output)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, cache], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "2"
