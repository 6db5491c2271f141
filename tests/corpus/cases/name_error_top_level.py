# Misspelled tool name at top level (get_wether instead of get_weather).
w = await get_wether(city="Paris")
w["temp"]
