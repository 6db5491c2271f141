import asyncio

# Coroutines created, only some of them gathered: the others never run.
calls = [get_weather(c) for c in ["Paris", "Tokyo", "Lima"]]
first_two = await asyncio.gather(*calls[:2])
[w["city"] for w in first_two]
