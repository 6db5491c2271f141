"""Shared by the Python peer runners: the workload scripts and the sampling
rule, the same as in benches/peers.rs and pyodide_runner.mjs (warm up for
PEERS_WARMUP_S, at least 2 runs; then sample until PEERS_BUDGET_S has passed,
at least 3 and at most 2000 samples; report the median in µs)."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

WORKLOADS_DIR = Path(__file__).resolve().parent / 'workloads'
# The order of the table; the same names as the files.
NAMES = ['start', 'call_1', 'calls_100', 'fib25', 'loop_1e6', 'gather_10x50ms']
MIN_SAMPLES = 3
MAX_SAMPLES = 2000


def workloads() -> dict[str, str]:
    """Workload name -> script text, read from benches/peers/workloads/."""
    return {name: (WORKLOADS_DIR / f'{name}.py').read_text() for name in NAMES}


def _env(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def budget(scale: float = 1.0) -> tuple[float, float]:
    """(warm-up seconds, sampling seconds); `scale` shortens both for peers
    whose slow workloads would otherwise dominate the run."""
    return _env('PEERS_WARMUP_S', 0.3) * scale, _env('PEERS_BUDGET_S', 2.0) * scale


def _finish(times: list[float], note: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {'median_us': statistics.median(times), 'samples': len(times)}
    if note:
        out['note'] = note
    return out


def sample(run: Callable[[], Any], scale: float = 1.0, min_warmup: int = 2, note: str | None = None) -> dict[str, Any]:
    """Times the synchronous `run` after a warm-up."""
    warmup, total = budget(scale)
    start, runs = time.perf_counter(), 0
    while runs < min_warmup or time.perf_counter() - start < warmup:
        run()
        runs += 1
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MIN_SAMPLES or (time.perf_counter() - start < total and len(times) < MAX_SAMPLES):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1e6)
    return _finish(times, note)


async def sample_async(
    run: Callable[[], Awaitable[Any]], scale: float = 1.0, min_warmup: int = 2, note: str | None = None
) -> dict[str, Any]:
    """Times the coroutine function `run` after a warm-up, on the running loop."""
    warmup, total = budget(scale)
    start, runs = time.perf_counter(), 0
    while runs < min_warmup or time.perf_counter() - start < warmup:
        await run()
        runs += 1
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MIN_SAMPLES or (time.perf_counter() - start < total and len(times) < MAX_SAMPLES):
        t = time.perf_counter()
        await run()
        times.append((time.perf_counter() - t) * 1e6)
    return _finish(times, note)


def log(msg: str) -> None:
    """Progress goes to stderr; stdout carries only the JSON result."""
    print(msg, file=sys.stderr, flush=True)


def emit(peers: list[dict[str, Any]]) -> None:
    """Prints the result: a JSON array with one object per peer."""
    print(json.dumps(peers))
