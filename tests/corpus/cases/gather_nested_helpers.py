import asyncio

async def city_report(city):
    now = await get_weather(city)
    fc = await get_forecast(city, days=3)
    highs = [d["high"] for d in fc["days"]]
    return {"city": city, "now": now["temp"], "max_high": max(highs), "rainy_days": sum(1 for d in fc["days"] if d["rain_mm"] > 5)}

reports = await asyncio.gather(city_report("Oslo"), city_report("Cairo"), city_report("Nairobi"))
for r in reports:
    print(r["city"], r["now"], r["max_high"], r["rainy_days"])
{r["city"]: r for r in reports}
