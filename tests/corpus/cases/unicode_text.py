# Non-ASCII city names, translations and accents, through print and output.
w = await get_weather("São Paulo")
t = await translate("goodbye", "es")
d = await translate("goodbye", "de")
line = f"{w['city']} — {w['conditions']} — {t['text']} / {d['text']}"
print(line)
print(line.upper(), len(line))
{"line": line, "emoji": "☀️" if w["conditions"] == "sunny" else "⛈", "ascii": line.encode("ascii", "replace").decode()}
