import asyncio

# Results come back in argument order, whatever finishes first.
delays = [300, 10, 150, 60]
results = await asyncio.gather(*[slow_echo(text=f"job-{i}", ms=ms) for i, ms in enumerate(delays)])
order = [r["text"] for r in results]
print(order)
{"order": order, "slept": [r["slept_ms"] for r in results]}
