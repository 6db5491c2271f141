from datetime import datetime, timedelta

res = await run_query("SELECT ts, kind, user_id FROM events")
times = [datetime.fromisoformat(r["ts"]) for r in res["rows"]]
gaps = [(b - a).days for a, b in zip(times, times[1:])]
span = times[-1] - times[0]
deadline = times[-1] + timedelta(days=30, hours=6)
print(times[0].strftime("%d %b %Y %H:%M"), "->", times[-1].date().isoformat())
{"gaps": gaps, "span_days": span.days, "span_hours": span.total_seconds() / 3600, "deadline": deadline.isoformat(), "weekday": times[0].strftime("%A")}
