from datetime import datetime

# The answer is not JSON: chainbox's `output` is its repr, like `output_text`.
res = await run_query("SELECT ts FROM events")
latest = max(datetime.fromisoformat(r["ts"]) for r in res["rows"])
latest
