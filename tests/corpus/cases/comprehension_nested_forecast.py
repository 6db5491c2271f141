# A matrix of forecast highs built with nested comprehensions.
cities = ["Paris", "Tokyo", "Oslo"]
forecasts = {}
for c in cities:
    forecasts[c] = (await get_forecast(c, 4))["days"]
matrix = [[d["high"] for d in forecasts[c]] for c in cities]
transposed = [[row[i] for row in matrix] for i in range(4)]
daily_max = [max(col) for col in transposed]
flat = [h for row in matrix for h in row if h > 10]
{"matrix": matrix, "daily_max": daily_max, "above_10": len(flat)}
