# Three `slow_echo` calls at once with asyncio.gather: they run concurrently on
# the host, so the chain takes about as long as one call, not three.
#
#   chainbox run examples/chains/gather.py --tools examples/tools/manifest.toml --json
import asyncio

words = ["alpha", "beta", "gamma"]
replies = await asyncio.gather(*[slow_echo(text=w, seconds=0.5) for w in words])
[r["text"] for r in replies]
