import math

# Mean and standard deviation of forecast highs, computed by hand (no statistics module).
fc = await get_forecast("Tokyo", days=7)
highs = [d["high"] for d in fc["days"]]
mean = sum(highs) / len(highs)
var = sum((h - mean) ** 2 for h in highs) / (len(highs) - 1)
std = math.sqrt(var)
median = sorted(highs)[len(highs) // 2]
{"mean": round(mean, 3), "std": round(std, 3), "median": median, "range": round(max(highs) - min(highs), 1), "ceil_mean": math.ceil(mean)}
