from collections import OrderedDict

# A tiny least-recently-used cache in front of the geocoder.
cache = OrderedDict()
calls = 0

async def locate(address):
    global calls
    if address in cache:
        cache.move_to_end(address)
        return cache[address]
    calls += 1
    g = await geocode(address)
    cache[address] = (g["lat"], g["lon"])
    if len(cache) > 2:
        cache.popitem(last=False)
    return cache[address]

for a in ["1 Main St", "2 Elm St", "1 Main St", "3 Oak Ave", "2 Elm St"]:
    await locate(a)
{"calls": calls, "cached": list(cache)}
