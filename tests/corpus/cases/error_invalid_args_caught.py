# Wrong argument type: the call is refused with a ValueError, which the script handles.
try:
    fc = await get_forecast(city="Paris", days="three")
except ValueError as e:
    print("bad arguments:", type(e).__name__)
    fc = await get_forecast(city="Paris", days=3)
[d["high"] for d in fc["days"]]
