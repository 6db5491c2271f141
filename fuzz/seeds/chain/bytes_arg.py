async def g(x):
    return await echo(text=x)
await g(b"\x00\xff")