# f-string conversions and format specs a model reaches for.
w = await get_weather("Lima")
m = await get_metrics("api", "2024-05-03")
err_pct = m["errors"] / m["requests"]
print(f"{w['city']!r} is {w['conditions']!s}")
print(f"error rate: {err_pct:.2%}, requests: {m['requests']:,}")
print(f"humidity {w['humidity']:03d} / wind {w['wind_kph']:5.1f} / temp {w['temp']:e}")
print(f"{'centered':*^20}|{42:#x}|{42:b}|{7:>4}")
label = "p99"
print(f"{label}={m['latency_ms'][label]}ms {m['latency_ms']=}")
f"{w['city']}: {w['temp']}°C"
