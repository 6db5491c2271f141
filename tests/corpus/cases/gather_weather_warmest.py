import asyncio
cities = ["Paris", "Tokyo", "Lima"]
weather = await asyncio.gather(*[get_weather(city=c) for c in cities])   # concurrent on the host
warmest = max(weather, key=lambda w: w["temp"])
{"warmest": warmest["city"], "temp_c": warmest["temp"]}
