import asyncio

# Each task catches its own tool error, so the fan-out always completes.
async def safe_weather(city):
    try:
        w = await get_weather(city)
        return {"city": city, "temp": w["temp"]}
    except RuntimeError as e:
        return {"city": city, "error": str(e)}

results = await asyncio.gather(*[safe_weather(c) for c in ["Oslo", "Gotham", "Cairo"]])
ok = [r for r in results if "error" not in r]
{"results": results, "ok": len(ok), "failed": [r["city"] for r in results if "error" in r]}
