import asyncio

cities = ["Paris", "Atlantis", "Tokyo", "El Dorado"]
results = await asyncio.gather(*[get_weather(c) for c in cities], return_exceptions=True)
ok, failed = {}, {}
for city, r in zip(cities, results):
    if isinstance(r, Exception):
        failed[city] = f"{type(r).__name__}: {r}"
    else:
        ok[city] = r["temp"]
{"ok": ok, "failed": failed}
