# The model guesses a field name the tool does not return.
w = await get_weather("Paris")
print("got keys:", sorted(w))
{"city": w["city"], "temperature": w["temperature"]}
