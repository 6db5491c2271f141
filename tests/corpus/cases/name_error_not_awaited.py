# Undefined name called without await, assigned, then used as the answer.
x = fetch_weather("Paris")
x
