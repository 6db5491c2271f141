import asyncio

# One call of the fan-out fails (after the others have answered) and nothing catches it.
temps = await asyncio.gather(
    get_weather("Paris"),
    fail(message="upstream weather provider is down", delay_ms=1500),
    get_weather("Lima"),
)
{"temps": [t["temp"] for t in temps]}
