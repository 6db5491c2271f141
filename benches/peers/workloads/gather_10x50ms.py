# Concurrency: 10 host tools that each sleep 50 ms, gathered (about 50 ms if concurrent).
import asyncio

await asyncio.gather(*[sleep(seconds=0.05) for _ in range(10)])
