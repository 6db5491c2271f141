# Dict with int keys built in the script: JSON keys become strings, order kept.
temps = {}
for i, city in enumerate(["Oslo", "Cairo", "Lima"]):
    w = await get_weather(city)
    temps[30 - i * 10] = w["temp"]
temps[True] = "flag"
temps[None] = "none"
print(temps)
temps
