"""Peer runner: `pydantic-monty` from PyPI, the same interpreter as chainbox's
guest (monty 1.4) packaged for Python: each session runs in a pooled `monty`
worker subprocess, and every external call is a round trip to this process.

Usage: python -I pydantic_monty_runner.py
Prints a JSON array with one peer result on stdout.

Tools are plain async Python functions given as `external_lookup`. One chain
is one fresh session checked out of a warm pool (`min_processes=1`), then
`feed_run(script)`: the closest match to chainbox's fresh sandbox per chain.
The same scripts run unchanged (monty has top-level `await` and `asyncio`).
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder out
from _common import emit, log, sample_async, workloads  # noqa: E402

import pydantic_monty  # noqa: E402


async def noop() -> None:
    return None


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


TOOLS = {'noop': noop, 'sleep': sleep}


async def main() -> None:
    results = {}
    async with pydantic_monty.AsyncMonty(min_processes=1) as pool:

        async def chain(src: str) -> None:
            async with pool.checkout() as session:
                await session.feed_run(src, external_lookup=TOOLS)

        for name, src in workloads().items():
            await chain(src)  # fails loudly if the chain does
            results[name] = await sample_async(lambda: chain(src))
            log(f'pydantic_monty {name}: {results[name]}')
    emit(
        [
            {
                'peer': 'pydantic_monty',
                'version': f'pydantic-monty {pydantic_monty.__version__}',
                'how': 'AsyncMonty pool (1 warm worker process), fresh session per chain, async tools',
                'workloads': results,
            }
        ]
    )


if __name__ == '__main__':
    asyncio.run(main())
