w = await get_weather("Tokyo")
u = await get_user(1)
(w["temp"], u["name"], (1, 2), [])
