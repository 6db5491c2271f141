# Retry a flaky service until it answers, logging each failure.
url = "https://api.example.com/report"
result = None
for attempt in range(5):
    try:
        result = await flaky_fetch(url=url, attempt=attempt)
        break
    except RuntimeError as e:
        print(f"attempt {attempt} failed: {e}")

{"status": result["status"], "attempts": attempt + 1, "bytes": result["bytes"]}
