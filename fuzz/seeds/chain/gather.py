import asyncio
r = await asyncio.gather(add(1, 2), echo("x"), sleep(seconds=0.01))
r