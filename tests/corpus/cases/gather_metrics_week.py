import asyncio

days = [f"2024-05-{d:02d}" for d in range(1, 8)]
metrics = await asyncio.gather(*[get_metrics("checkout", day) for day in days])
error_rate = [m["errors"] / m["requests"] for m in metrics]
worst = max(range(len(days)), key=lambda i: error_rate[i])
p99 = [m["latency_ms"]["p99"] for m in metrics]
{
    "service": "checkout",
    "worst_day": days[worst],
    "worst_error_rate": round(error_rate[worst] * 100, 3),
    "p99_avg": round(sum(p99) / len(p99), 1),
    "requests": sum(m["requests"] for m in metrics),
}
