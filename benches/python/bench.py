"""chainbox's Python package against pydantic-monty, one process, one run.

Usage: python -I bench.py [--quick] [--json FILE]   (benches/python/run.sh sets it up)

Measures, with time.perf_counter_ns, warm-up first, medians of many runs:

- direct: a call of the same trivial Python function, in Python;
- per call: (a chain of N awaited calls of a trivial tool - the same loop
  with no call) / N, sampled in alternating pairs, for a sync and an
  `async def` tool, on each guest, and for pydantic-monty's external
  functions (its sync `Monty` pool, sync function; its `AsyncMonty` pool,
  async function);
- start: a trivial chain (`1 + 1`) from the call to its answer, back to
  back: `Engine.run` on each guest, given the one tool (its registry is
  made per run) and given none; `Monty` checkout + `feed_run`.

Prints a markdown table; `--json FILE` writes the raw figures.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Awaitable, Callable

import chainbox
import pydantic_monty

QUICK = "--quick" in sys.argv
N = 1000  # calls per chain for the per-call figures
PAIRS = 5 if QUICK else 15  # (N-call chain, 0-call chain) pairs per figure
STARTS = 200 if QUICK else 2000  # trivial chains per start figure (CPython guest: a quarter)

CALLS = f"for i in range({N}):\n    x = await noop()\n'done'"
EMPTY = f"for i in range({N}):\n    x = None\n'done'"
TRIVIAL = "1 + 1"

perf = time.perf_counter_ns


def noop() -> None:
    return None


async def anoop() -> None:
    return None


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def timed(fn: Callable[[], Any]) -> int:
    t = perf()
    fn()
    return perf() - t


def per_call(chain: Callable[[str], Any]) -> dict[str, float]:
    """(N calls - no call) / N, pairs alternating so drift hits both."""
    chain(CALLS)
    chain(EMPTY)
    calls, empty = [], []
    for _ in range(PAIRS):
        calls.append(timed(lambda: chain(CALLS)))
        empty.append(timed(lambda: chain(EMPTY)))
    return {
        "per_call_us": (statistics.median(calls) - statistics.median(empty)) / N / 1000,
        "chain_calls_ms": statistics.median(calls) / 1e6,
        "chain_empty_ms": statistics.median(empty) / 1e6,
    }


def start(chain: Callable[[str], Any], n: int) -> dict[str, float]:
    for _ in range(max(20, n // 20)):
        chain(TRIVIAL)
    samples = [timed(lambda: chain(TRIVIAL)) for _ in range(n)]
    return {
        "start_us": median_us(samples),
        "start_p10_us": statistics.quantiles(samples, n=10)[0] / 1000,
        "start_p90_us": statistics.quantiles(samples, n=10)[-1] / 1000,
        "starts": n,
    }


def direct() -> dict[str, float]:
    loops = 100_000
    samples = []
    for _ in range(7 if QUICK else 21):
        t = perf()
        for _ in range(loops):
            noop()
        samples.append(perf() - t)
    return {"per_call_us": statistics.median(samples) / loops / 1000}


def chainbox_figures(python: str) -> dict[str, Any]:
    engine = chainbox.Engine({"max_tool_calls": N + 10}, python=python)
    sync_tool = chainbox.tool(noop)
    async_tool = chainbox.tool(anoop, name="noop")

    def run(tool: chainbox.Tool) -> Callable[[str], Any]:
        def chain(script: str) -> Any:
            r = engine.run(script, tools=[tool])
            if not r.ok or r.output != ("done" if script != TRIVIAL else 2):
                raise SystemExit(f"chainbox {python}: {r.status} {r.output!r} {r.error}")
            return r

        return chain

    out: dict[str, Any] = {"sync": per_call(run(sync_tool)), "async": per_call(run(async_tool))}
    starts = STARTS if python == "monty" else STARTS // 4
    out.update(start(run(sync_tool), starts))

    def bare(script: str) -> Any:
        r = engine.run(script)
        if r.output != 2:
            raise SystemExit(f"chainbox {python}: {r.status} {r.output!r} {r.error}")

    out["bare"] = start(bare, starts)
    loop = asyncio.new_event_loop()
    try:
        out["run_async"] = run_async_figures(loop, engine, async_tool, python)
    finally:
        loop.close()
    return out


def run_async_figures(loop: asyncio.AbstractEventLoop, engine: Any, tool: Any, python: str) -> dict[str, Any]:
    """The async tool under `run_async`: the chain awaited on this loop, the
    tool run on it too (timed from outside the loop, as a caller sees it)."""

    async def one(script: str) -> None:
        r = await engine.run_async(script, tools=[tool])
        if not r.ok:
            raise SystemExit(f"chainbox {python} run_async: {r.status} {r.error}")

    def chain(script: str) -> None:
        loop.run_until_complete(one(script))

    out = per_call(chain)
    out.update(start(chain, (STARTS if python == "monty" else STARTS // 4) // 2))
    return out


def pydantic_monty_figures() -> dict[str, Any]:
    """One warm worker process, never recycled (the best case for the peer)."""
    out: dict[str, Any] = {}
    # The sync pool: a sync function, answered inline on this thread; its
    # externals are plain calls (no `await`).
    with pydantic_monty.Monty(min_processes=1, max_checkouts_per_worker=None) as pool:

        def chain(script: str) -> Any:
            with pool.checkout() as session:
                return session.feed_run(script.replace("await noop()", "noop()"), external_lookup={"noop": noop})

        if chain(TRIVIAL) != 2 or chain(CALLS) != "done":
            raise SystemExit("pydantic-monty: unexpected answer")
        out["sync"] = per_call(chain)
        out.update(start(chain, STARTS))

    # The asyncio pool: an `async def` function, awaited by the script.
    async def amain() -> dict[str, Any]:
        async with pydantic_monty.AsyncMonty(min_processes=1, max_checkouts_per_worker=None) as apool:

            async def one(script: str) -> Any:
                async with apool.checkout() as session:
                    return await session.feed_run(script, external_lookup={"noop": anoop})

            if await one(CALLS) != "done":
                raise SystemExit("pydantic-monty async: unexpected answer")
            return {**(await per_call_async(one)), **(await start_async(one, STARTS // 2))}

    out["async"] = asyncio.run(amain())
    return out


async def per_call_async(chain: Callable[[str], Awaitable[Any]]) -> dict[str, float]:
    await chain(CALLS)
    await chain(EMPTY)
    calls, empty = [], []
    for _ in range(PAIRS):
        t = perf()
        await chain(CALLS)
        calls.append(perf() - t)
        t = perf()
        await chain(EMPTY)
        empty.append(perf() - t)
    return {
        "per_call_us": (statistics.median(calls) - statistics.median(empty)) / N / 1000,
        "chain_calls_ms": statistics.median(calls) / 1e6,
        "chain_empty_ms": statistics.median(empty) / 1e6,
    }


async def start_async(chain: Callable[[str], Awaitable[Any]], n: int) -> dict[str, float]:
    for _ in range(max(20, n // 20)):
        await chain(TRIVIAL)
    samples = []
    for _ in range(n):
        t = perf()
        await chain(TRIVIAL)
        samples.append(perf() - t)
    return {
        "start_us": median_us(samples),
        "start_p10_us": statistics.quantiles(samples, n=10)[0] / 1000,
        "start_p90_us": statistics.quantiles(samples, n=10)[-1] / 1000,
        "starts": n,
    }


def main() -> None:
    gc.collect()
    began = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_start = os.getloadavg()
    results: dict[str, Any] = {"direct": direct()}
    print(f"direct: {results['direct']}", file=sys.stderr)
    for python in ("monty", "cpython"):
        results[f"chainbox_{python}"] = chainbox_figures(python)
        print(f"chainbox {python}: {results[f'chainbox_{python}']}", file=sys.stderr)
    results["pydantic_monty"] = pydantic_monty_figures()
    print(f"pydantic-monty: {results['pydantic_monty']}", file=sys.stderr)
    results["meta"] = {
        "began": began,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_start": load_start,
        "load_end": os.getloadavg(),
        "python": platform.python_version(),
        "chainbox": getattr(chainbox, "__version__", "?"),
        "pydantic_monty": pydantic_monty.__version__,
        "quick": QUICK,
        "n": N,
        "pairs": PAIRS,
    }
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(results, f, indent=1)
    report(results)


def report(r: dict[str, Any]) -> None:
    d = r["direct"]["per_call_us"]
    m, c, p = r["chainbox_monty"], r["chainbox_cpython"], r["pydantic_monty"]

    def f(x: float) -> str:
        return f"{x:.2f} µs" if x < 100 else f"{x:.0f} µs"

    print("| figure (median) | chainbox monty | chainbox CPython | pydantic-monty | direct call |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| per call, sync tool | {f(m['sync']['per_call_us'])} | {f(c['sync']['per_call_us'])} | {f(p['sync']['per_call_us'])} | {f(d)} |")
    print(f"| per call, async tool (`run`) | {f(m['async']['per_call_us'])} | {f(c['async']['per_call_us'])} | {f(p['async']['per_call_us'])} (AsyncMonty) | — |")
    print(f"| per call, async tool (`run_async`) | {f(m['run_async']['per_call_us'])} | {f(c['run_async']['per_call_us'])} | — | — |")
    print(f"| start `1 + 1` (`run`, one tool) | {f(m['start_us'])} | {f(c['start_us'])} | {f(p['start_us'])} (Monty) | — |")
    print(f"| start `1 + 1` (`run`, no tool) | {f(m['bare']['start_us'])} | {f(c['bare']['start_us'])} | — | — |")
    print(f"| start `1 + 1` (`run_async`) | {f(m['run_async']['start_us'])} | {f(c['run_async']['start_us'])} | {f(p['async']['start_us'])} (AsyncMonty) | — |")
    meta = r["meta"]
    print(
        f"\n{meta['began']} to {meta['ended']}; load {meta['load_start']} -> {meta['load_end']}; "
        f"Python {meta['python']}, pydantic-monty {meta['pydantic_monty']}; N={meta['n']}, {meta['pairs']} pairs"
    )


if __name__ == "__main__":
    main()
