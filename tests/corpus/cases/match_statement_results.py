# Structural pattern matching on tool results.
def describe(w):
    match w:
        case {"conditions": "sunny", "temp": t} if t > 30:
            return "hot and sunny"
        case {"conditions": "sunny"}:
            return "sunny"
        case {"conditions": "rain" | "storm" as c}:
            return f"wet ({c})"
        case _:
            return "other"

out = {}
for city in ["Cairo", "Tokyo", "Oslo", "São Paulo", "Paris"]:
    out[city] = describe(await get_weather(city))
out
