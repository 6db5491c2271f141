# The latency object arrives as {p99, p50, p90}; echo it back untouched.
m = await get_metrics(service="search", day="2024-06-01")
lat = m["latency_ms"]
print("keys:", list(lat.keys()))
{"service": m["service"], "latency": lat, "ratio_p99_p50": round(lat["p99"] / lat["p50"], 2)}
