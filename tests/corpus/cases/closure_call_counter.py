# A closure counts calls with nonlocal; a global tracks errors.
errors = 0

def make_counter():
    count = 0
    async def counted(city):
        nonlocal count
        count += 1
        return await get_weather(city)
    def total():
        return count
    return counted, total

async def try_city(fetch, city):
    global errors
    try:
        return (await fetch(city))["temp"]
    except RuntimeError:
        errors += 1
        return None

fetch, total = make_counter()
temps = [await try_city(fetch, c) for c in ["Paris", "Nowhere", "Tokyo"]]
{"temps": temps, "calls": total(), "errors": errors}
