# Try the requested city, fall back to a default when the tool rejects it.
requested = ["Atlantis", "Oslo"]
report = []
for city in requested:
    try:
        w = await get_weather(city)
        report.append(f"{city}: {w['temp']}°C, {w['conditions']}")
    except RuntimeError as e:
        print(f"warning: {e}")
        w = await get_weather("Paris")
        report.append(f"{city} unavailable, Paris instead: {w['temp']}°C")
"\n".join(report)
