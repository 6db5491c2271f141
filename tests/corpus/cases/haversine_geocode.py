import math, asyncio

def haversine(a, b):
    r = 6371.0
    p1, p2 = math.radians(a["lat"]), math.radians(b["lat"])
    dp = p2 - p1
    dl = math.radians(b["lon"] - a["lon"])
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(h))

places = ["10 Downing St, London", "1600 Pennsylvania Ave, Washington", "Shibuya Crossing, Tokyo"]
coords = await asyncio.gather(*[geocode(p) for p in places])
dist = {f"{i}->{j}": round(haversine(coords[i], coords[j]), 1) for i in range(3) for j in range(i + 1, 3)}
dist
