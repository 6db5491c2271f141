"""Peer runner: smolagents' `LocalPythonExecutor`, the AST-walking evaluator
its CodeAgent runs model code with by default.

Usage: python -I smolagents_runner.py
Prints a JSON array with one peer result on stdout.

The executor has no `async`: scripts are adapted to sync calls (`await f()`
becomes `f()`, and the gather becomes a list of calls, so the ten 50 ms
sleeps run one after another). Tools are plain sync Python functions passed
with `send_tools`. One executor is reused across chains, as an agent does
across steps; it keeps its default 30 s timeout and operation limits.
"""

from __future__ import annotations

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder out
from _common import NAMES, emit, log, sample, workloads  # noqa: E402

from smolagents import LocalPythonExecutor  # noqa: E402
from smolagents import __version__ as smolagents_version  # noqa: E402


def noop() -> None:
    return None


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def to_sync(src: str) -> str:
    """The minimal rewrite for an interpreter without async."""
    src = re.sub(r'^import asyncio\n', '', src, flags=re.M)
    src = re.sub(r'await asyncio\.gather\(\*(.*)\)$', r'list(\1)', src, flags=re.M)
    return src.replace('await ', '')


def main() -> None:
    executor = LocalPythonExecutor(additional_authorized_imports=[])
    executor.send_tools({'noop': noop, 'sleep': sleep})
    results = {}
    for name, src in workloads().items():
        code = to_sync(src)
        executor(code)  # fails loudly if the adapted script does not run; also the first warm-up
        # The CPU workloads take seconds each here: no more warm-up, three samples.
        slow = name in ('fib25', 'loop_1e6')
        note = 'sequential (no async)' if name == 'gather_10x50ms' else None
        results[name] = sample(
            lambda: executor(code), scale=0.0 if slow else 1.0, min_warmup=0 if slow else 1, note=note
        )
        log(f'smolagents {name}: {results[name]}')
    assert list(results) == NAMES
    emit(
        [
            {
                'peer': 'smolagents',
                'version': f'smolagents {smolagents_version}',
                'how': 'LocalPythonExecutor reused across chains, sync tools via send_tools',
                'workloads': results,
            }
        ]
    )


if __name__ == '__main__':
    main()
