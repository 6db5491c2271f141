# The answer is a markdown string (output_text is the text itself).
import asyncio
cities = ["Paris", "Oslo", "Cairo"]
ws = await asyncio.gather(*[get_weather(c) for c in cities])
rows = ["| city | temp | sky |", "|---|---:|---|"]
rows += [f"| {w['city']} | {w['temp']:.1f} | {w['conditions']} |" for w in ws]
"\n".join(rows)
