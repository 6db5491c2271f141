import statistics

# Latency statistics over a week of metrics.
days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
p50s = []
errors = []
for day in days:
    m = await get_metrics(service="checkout", day=day)
    p50s.append(m["latency_ms"]["p50"])
    errors.append(m["errors"])
summary = {
    "mean_p50": statistics.mean(p50s),
    "median_p50": statistics.median(p50s),
    "stdev_p50": round(statistics.stdev(p50s), 3),
    "mode_errors": statistics.mode(errors),
    "max_errors_day": days[errors.index(max(errors))],
}
summary
