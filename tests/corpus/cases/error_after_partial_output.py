# Work done and printed before the failure is still reported.
for city in ["Tokyo", "Lima"]:
    w = await get_weather(city)
    print(f"{city}: {w['temp']}")
cfg = await get_config("limits")
ratio = cfg["max_upload_mb"] / cfg["alpha"]   # alpha is None
ratio
