# Updating, popping and re-inserting keys moves them as in CPython.
w = await get_weather("Tokyo")
view = dict(w)
view.pop("units")
view["units"] = "°C"           # re-inserted: now last
view.update({"city": "Tōkyō"})  # existing key: position kept
view.pop("wind_kph", None)
view.setdefault("source", "get_weather")
view.setdefault("city", "ignored")
view
