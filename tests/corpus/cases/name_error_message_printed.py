# The script catches a misspelled tool name and reports the error text.
try:
    w = await get_wether(city="Paris")
except NameError as e:
    print(f"tool missing: {e}")
    w = await get_weather(city="Paris")
w["conditions"]
