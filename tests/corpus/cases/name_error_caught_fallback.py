# The script guards against a tool that may not exist.
try:
    data = await get_weather_v2(city="Oslo")
except NameError:
    print("get_weather_v2 is not available, using get_weather")
    data = await get_weather(city="Oslo")
data["temp"]
