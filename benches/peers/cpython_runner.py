"""Peer runner: CPython, two ways a user might run a model's script without a
sandbox: `exec` in this process (no isolation at all), and a fresh
`python3 -I -c` subprocess per chain (process isolation only).

Usage: python -I -S cpython_runner.py [SUBPROCESS_PYTHON]
Prints a JSON array of two peer results on stdout.

Tools are plain async Python functions. Scripts keep their top-level `await`:
they are compiled with `PyCF_ALLOW_TOP_LEVEL_AWAIT` and the resulting
coroutine runs on an event loop, so `asyncio.gather` really overlaps.
"""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder out
from _common import NAMES, emit, log, sample, workloads  # noqa: E402


async def noop() -> None:
    return None


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


def run_in_process(loop: asyncio.AbstractEventLoop, src: str) -> None:
    """One chain: compile, fresh globals, run (awaiting if the script awaits)."""
    code = compile(src, '<chain>', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, {'noop': noop, 'sleep': sleep})
    if asyncio.iscoroutine(result):
        loop.run_until_complete(result)


# What the fresh subprocess runs: the same tools and the same top-level-await
# handling, then the workload itself (passed as a repr'd string). asyncio is
# imported only by scripts that await (it costs tens of ms to import), so the
# `start` row is the interpreter's own start-up; 0x2000 is
# `ast.PyCF_ALLOW_TOP_LEVEL_AWAIT`, spelled out to skip importing `ast`.
PRELUDE = """\
async def noop():
    return None
async def sleep(seconds):
    import asyncio
    await asyncio.sleep(seconds)
r = eval(compile({src!r}, '<chain>', 'exec', flags=0x2000), {{'noop': noop, 'sleep': sleep}})
if r is not None:
    import asyncio
    asyncio.run(r)
"""


def main() -> None:
    python = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    scripts = workloads()
    loop = asyncio.new_event_loop()
    in_process: dict[str, object] = {}
    for name in NAMES:
        src = scripts[name]
        in_process[name] = sample(lambda: run_in_process(loop, src))
        log(f'cpython_exec {name}: {in_process[name]}')

    subprocs: dict[str, dict[str, object]] = {'-I': {}, '-I -S': {}}
    for flags, results in subprocs.items():
        for name in NAMES:
            argv = [python, *flags.split(), '-c', PRELUDE.format(src=scripts[name])]
            subprocess.run(argv, check=True)  # fails loudly if the chain does
            results[name] = sample(lambda: subprocess.run(argv, check=True), scale=0.5)
            log(f'cpython_subprocess {flags} {name}: {results[name]}')

    version = sys.version.split()[0]
    emit(
        [
            {
                'peer': 'cpython_exec',
                'version': f'CPython {version}',
                'how': 'compile + exec in-process per chain, fresh globals, async tools on one event loop',
                'workloads': in_process,
            },
            {
                'peer': 'cpython_subprocess',
                'version': f'CPython {version}',
                'how': f'fresh `{os.path.basename(python)} -I -c` per chain (spawn to exit)',
                'workloads': subprocs['-I'],
            },
            {
                'peer': 'cpython_subprocess_nosite',
                'version': f'CPython {version}',
                'how': f'fresh `{os.path.basename(python)} -I -S -c` per chain (no site import)',
                'workloads': subprocs['-I -S'],
            },
        ]
    )


if __name__ == '__main__':
    main()
