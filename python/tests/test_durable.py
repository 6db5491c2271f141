"""Durable chains from Python: a run kept in a chain store suspends at a call
that waits on a human's decision, the decision is recorded (by any process
on the store), and a resume finishes the chain, every tool call made once.
Then artifacts: offloaded results read back as bytes."""

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import chainbox

SCRIPT = "a = await bump(n=1)\nr = await wire(amount=5)\nb = await bump(n=2)\n[a, r, b]"


class Counted:
    """`bump(n)` (safe) and `wire(amount)` (critical), counting their runs."""

    def __init__(self) -> None:
        self.bumps = 0
        self.wires: list[int] = []

        @chainbox.tool
        def bump(n: int) -> int:
            """Ten times n."""
            self.bumps += 1
            return n * 10

        @chainbox.tool(risk="critical")
        def wire(amount: int) -> str:
            """Sends money."""
            self.wires.append(amount)
            return f"sent {amount}"

        self.tools = [bump, wire]


def test_a_durable_chain_suspends_is_approved_and_resumed_by_a_fresh_engine_each_call_once(tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    t = Counted()
    r = chainbox.Engine(python="monty").run(SCRIPT, tools=t.tools, state=state)
    assert r.status == "suspended" and r.suspended and not r.ok, r
    assert r.error is None
    assert r.chain_id and r.chain_id.startswith("chain_")
    p = r.pending
    assert p is not None
    assert (p.chain_id, p.seq, p.tool, p.arguments, p.risk) == (r.chain_id, 2, "wire", {"amount": 5}, "critical")
    assert p.requested_at
    assert [c.tool for c in r.calls] == ["bump"], "only the finished call is in the trace"
    assert (t.bumps, t.wires) == (1, [])
    with pytest.raises(chainbox.ChainSuspended):
        r.raise_for_status()

    # Listed, decided and resumed through other Engine objects.
    listed = chainbox.Engine().approvals(state)
    assert [(c.chain_id, c.seq, c.tool, c.owner) for c in listed] == [(r.chain_id, 2, "wire", None)]
    decision = chainbox.Engine().decide(state, listed[0], approve=True, decided_by="alice")
    assert (decision.chain_id, decision.seq, decision.decision, decision.decided_by) == (
        r.chain_id,
        2,
        "approved",
        "alice",
    )
    assert chainbox.Engine().approvals(state) == []

    events: list[chainbox.ChainEvent] = []
    done = chainbox.Engine(python="monty").resume(state, r.chain_id, tools=t.tools, on_event=events.append)
    assert done.ok, done
    finished = [e.record for e in events if e.kind == "call_finished" and e.record]
    assert [(c.tool, c.replayed) for c in finished] == [("bump", True), ("wire", False), ("bump", False)]
    assert done.output == [10, "sent 5", 20]
    assert done.chain_id == r.chain_id and done.pending is None
    assert [c.replayed for c in done.calls] == [True, False, False], "the trace covers the whole chain"
    assert (t.bumps, t.wires) == (2, [5]), "each tool call made exactly once"

    # A finished chain resumed again gives its result, running nothing.
    again = chainbox.Engine().resume(state, r.chain_id, tools=t.tools)
    assert again.output == done.output
    assert (t.bumps, t.wires) == (2, [5])
    with pytest.raises(chainbox.NotPending):
        chainbox.Engine().decide(state, r.chain_id, approve=True)


def test_a_denied_call_is_the_scripts_permission_error_and_its_tool_never_runs(engine, tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    t = Counted()
    script = "try:\n    await wire(amount=9)\nexcept PermissionError as e:\n    out = str(e)\nout"
    r = engine.run(script, tools=t.tools, state=state)
    assert r.suspended and r.pending is not None, r
    d = engine.decide(state, r.pending.chain_id, approve=False, reason="not today")
    assert (d.decision, d.reason) == ("denied", "not today")
    done = engine.resume(state, r.pending.chain_id, tools=t.tools)
    assert done.ok, done
    assert "not today" in done.output
    assert [(c.tool, c.status) for c in done.calls] == [("wire", "denied")]
    assert t.wires == []

    # Uncaught, the denial ends the chain as the script's PermissionError.
    r = engine.run("await wire(amount=1)", tools=t.tools, state=state)
    assert r.chain_id
    engine.decide(state, r.chain_id, approve=False)
    failed = engine.resume(state, r.chain_id, tools=t.tools)
    assert failed.status == "error" and failed.error is not None
    assert failed.error.type == "PermissionError", failed.error
    with pytest.raises(chainbox.ScriptError):
        failed.raise_for_status()
    assert t.wires == []


def test_approved_with_other_arguments_runs_the_call_with_them(engine):
    t = Counted()
    r = engine.run("await wire(amount=1000)", tools=t.tools, state="memory:")
    assert r.suspended and r.pending is not None
    d = engine.decide("memory:", r.pending, approve=True, arguments={"amount": 10})
    assert (d.decision, d.arguments) == ("modified", {"amount": 10})
    done = engine.resume("memory:", r.pending.chain_id, tools=t.tools)
    assert done.output == "sent 10", done
    assert t.wires == [10]


def test_decisions_name_the_pending_call_and_a_missing_chain_is_chain_not_found(engine, tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    t = Counted()
    r = engine.run(SCRIPT, tools=t.tools, state=state)
    assert r.chain_id
    with pytest.raises(chainbox.NotPending) as stale:
        engine.decide(state, r.chain_id, approve=True, seq=1)
    assert stale.value.kind == "not_pending"
    with pytest.raises(chainbox.ChainNotFound):
        engine.decide(state, "chain_nope", approve=True)
    with pytest.raises(chainbox.ChainNotFound):
        engine.resume(state, "chain_nope", tools=t.tools)
    with pytest.raises(chainbox.DurableError):
        engine.run("1", state="ftp://nowhere")
    with pytest.raises(ValueError):
        engine.decide(state, r.chain_id, approve=True, reason="approvals have no reason")
    # Resumed before any decision, it suspends again at the same call.
    again = engine.resume(state, r.chain_id, tools=t.tools)
    assert again.suspended and again.pending is not None and again.pending.seq == 2, again
    assert (t.bumps, t.wires) == (1, [])


def test_a_durable_chain_decided_in_the_run_finishes_there_and_stays_finished(engine):
    t = Counted()
    r = engine.run(SCRIPT, tools=t.tools, state="memory:", approve=lambda call: call.arguments["amount"] < 10)
    assert r.ok and r.chain_id and r.pending is None, r
    assert r.output == [10, "sent 5", 20]
    assert engine.resume("memory:", r.chain_id, tools=t.tools).output == r.output
    assert (t.bumps, t.wires) == (2, [5])


def test_a_chain_another_resume_holds_is_being_resumed(engine, tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    entered, release = threading.Event(), threading.Event()
    runs: list[int] = []

    @chainbox.tool(risk="critical")
    def wire(amount: int) -> str:
        runs.append(amount)
        entered.set()
        release.wait(30)
        return "sent"

    r = engine.run("await wire(amount=3)", tools=[wire], state=state)
    assert r.suspended and r.chain_id, r
    engine.decide(state, r.chain_id, approve=True)
    results: list[chainbox.ChainResult] = []
    first = threading.Thread(target=lambda: results.append(engine.resume(state, r.chain_id, tools=[wire])))
    first.start()
    try:
        assert entered.wait(30), "the first resume runs the call"
        with pytest.raises(chainbox.BeingResumed) as held:
            chainbox.Engine().resume(state, r.chain_id, tools=[wire])
        assert held.value.kind == "being_resumed"
    finally:
        release.set()
        first.join(30)
    assert results and results[0].output == "sent", results
    assert runs == [3], "run once"


def test_a_durable_chain_under_asyncio(engine, tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    made: list[int] = []

    async def bump(n: int) -> int:
        made.append(n)
        return n * 10

    @chainbox.tool(risk="high")
    async def wire(amount: int) -> str:
        made.append(-amount)
        return f"sent {amount}"

    async def main() -> chainbox.ChainResult:
        r = await engine.run_async(SCRIPT, tools=[bump, wire], state=state)
        assert r.suspended and r.chain_id, r
        await engine.decide_async(state, r.chain_id, approve=True)
        return await engine.resume_async(state, r.chain_id, tools=[bump, wire])

    done = asyncio.run(main())
    assert done.output == [10, "sent 5", 20], done
    assert made == [1, -5, 2]


def test_another_process_decides_and_resumes_the_chain(engine, tmp_path: Path):
    """The run here, the decision and the resume in a second Python process
    on the same SQLite store: the tool's runs are counted in a file."""
    state = f"sqlite:{tmp_path / 'chains.db'}"
    log = tmp_path / "runs.log"
    tools_src = textwrap.dedent(
        f"""
        import chainbox

        def bump(n: int) -> int:
            with open({str(log)!r}, "a") as f:
                f.write(f"bump {{n}}\\n")
            return n * 10

        @chainbox.tool(risk="critical")
        def wire(amount: int) -> str:
            with open({str(log)!r}, "a") as f:
                f.write(f"wire {{amount}}\\n")
            return f"sent {{amount}}"
        """
    )
    namespace: dict = {}
    exec(tools_src, namespace)
    r = engine.run(SCRIPT, tools=[namespace["bump"], namespace["wire"]], state=state)
    assert r.suspended and r.chain_id, r
    other = tools_src + textwrap.dedent(
        f"""
        import json
        engine = chainbox.Engine()
        (pending,) = engine.approvals({state!r})
        engine.decide({state!r}, pending, approve=True, decided_by="ops")
        r = engine.resume({state!r}, pending.chain_id, tools=[bump, wire])
        print(json.dumps([r.status, r.output]))
        """
    )
    # In tmp_path: `-c` puts the working directory first on sys.path, and
    # python/ holds the package's source folder, not the installed wheel.
    out = subprocess.run(
        [sys.executable, "-c", other], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=dict(os.environ)
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["ok", [10, "sent 5", 20]]
    assert log.read_text().splitlines() == ["bump 1", "wire 5", "bump 2"], "each call made once, in all"
    # Here, the finished chain's result, nothing run again.
    assert engine.resume(state, r.chain_id, tools=[namespace["bump"], namespace["wire"]]).output == [10, "sent 5", 20]
    assert len(log.read_text().splitlines()) == 3


# --------------------------------------------------------------------------
# Artifacts


def rows(n: int) -> dict:
    """n rows of 100 bytes: offloaded past max_inline_result_bytes (4096)."""
    return {"rows": [f"row {i:03} " + "x" * 92 for i in range(n)]}


def test_an_offloaded_result_is_read_back_as_bytes(engine):
    r = engine.run("big = await rows(n=50)\nload_artifact(big)['rows'][49][:7]", tools=[rows])
    assert r.ok, r
    assert r.output == "row 049"
    ref = r.calls[0].artifact_ref
    assert ref and ref.startswith("sha256:")
    (artifact,) = r.artifacts
    assert artifact.artifact_ref == ref
    assert artifact.media_type == "application/json"
    data = artifact.read()
    assert len(data) == artifact.size
    assert json.loads(data) == rows(50)
    assert engine.read_artifact(ref) == data
    with pytest.raises(chainbox.ArtifactError):
        engine.read_artifact("sha256:" + "0" * 64)
    with pytest.raises(chainbox.ArtifactError):
        engine.read_artifact("not a ref")


def test_a_run_offloads_to_the_artifact_store_it_names(engine, tmp_path: Path):
    store = f"file:{tmp_path / 'artifacts'}"
    r = engine.run("big = await rows(n=60)\n1", tools=[rows], artifacts=store)
    assert r.ok, r
    (artifact,) = r.artifacts
    assert json.loads(artifact.read()) == rows(60)
    assert engine.read_artifact(artifact.artifact_ref, artifacts=store) == artifact.read()
    assert any((tmp_path / "artifacts").iterdir()), "written to the directory"
    with pytest.raises(chainbox.ArtifactError):
        engine.run("1", artifacts="ftp://nowhere")
    with pytest.raises(chainbox.ArtifactError):
        asyncio.run(engine.run_async("1", artifacts="ftp://nowhere"))


def test_a_durable_chain_in_sqlite_keeps_its_artifacts_beside_the_database(tmp_path: Path):
    state = f"sqlite:{tmp_path / 'chains.db'}"
    t = Counted()
    script = "big = await rows(n=50)\nr = await wire(amount=1)\n[r, load_artifact(big)['rows'][0][:7]]"
    r = chainbox.Engine().run(script, tools=[rows, *t.tools], state=state)
    assert r.suspended and r.chain_id, r
    assert (tmp_path / "chains.db.artifacts").is_dir()
    (artifact,) = r.artifacts
    chainbox.Engine().decide(state, r.chain_id, approve=True)
    done = chainbox.Engine().resume(state, r.chain_id, tools=[rows, *t.tools])
    assert done.output == ["sent 1", "row 000"], done
    assert done.calls[0].replayed and done.calls[0].artifact_ref == artifact.artifact_ref
    assert json.loads(done.artifacts[0].read()) == rows(50)
    assert chainbox.Engine().read_artifact(artifact.artifact_ref, artifacts=f"file:{tmp_path / 'chains.db.artifacts'}")
