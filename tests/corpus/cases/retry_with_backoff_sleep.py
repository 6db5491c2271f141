import asyncio

async def fetch_with_backoff(key, max_attempts=4):
    delay = 0.01
    for attempt in range(max_attempts):
        try:
            return await rate_limited(key=key, attempt=attempt)
        except RuntimeError as err:
            if "429" not in str(err) or attempt == max_attempts - 1:
                raise
            print(f"{key}: rate limited, sleeping {delay:.2f}s")
            await asyncio.sleep(delay)
            delay *= 2

values = {}
for key in ["alpha", "beta"]:
    r = await fetch_with_backoff(key)
    values[key] = r["value"]
values
