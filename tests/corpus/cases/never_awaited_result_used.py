# Using the result of a call that was not awaited: TypeError, and the tool never runs.
w = get_weather("Paris")
w["temp"]
