# Coroutines created first and awaited later, in the opposite order:
# each tool runs when it is awaited, so Lima's call comes first.
paris = get_weather("Paris")
lima = get_weather("Lima")
print("created both")
first = await lima
second = await paris
[first["city"], second["city"]]
