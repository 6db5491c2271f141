# Two attempts are not enough for the flaky service: the last error escapes.
last_error = None
for attempt in range(2):
    try:
        page = await flaky_fetch("https://api.example.com/slow", attempt)
        break
    except RuntimeError as e:
        last_error = e
        print("retrying after:", e)
else:
    raise last_error
page
