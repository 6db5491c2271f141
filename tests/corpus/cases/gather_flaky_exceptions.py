import asyncio

# Fan out over flaky services and keep going when some fail.
urls = ["https://a.example.com", "https://b.example.com", "https://c.example.com"]
results = await asyncio.gather(
    *[flaky_fetch(u, attempt=i) for i, u in enumerate(urls)],
    rate_limited("alpha", attempt=1),
    return_exceptions=True,
)
report = []
for r in results:
    if isinstance(r, BaseException):
        report.append(("error", type(r).__name__, str(r)[:20]))
    else:
        report.append(("ok", r.get("status", r.get("value"))))
report
