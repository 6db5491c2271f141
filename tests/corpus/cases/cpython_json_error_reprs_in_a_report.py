# Parse every payload a tool returns and keep the failures' reprs in the
# report. monty names a JSONDecodeError `json.JSONDecodeError` in its repr;
# CPython prints `JSONDecodeError(...)`, so `auto` runs this on CPython.
import json

payloads = {}
for path in ["/config/app.json", "/reports/notes.txt"]:
    f = await read_file(path)
    payloads[path] = f["content"]
payloads["inline"] = '{"retries": 3, "name": }'

parsed, failures = {}, []
for source, text in payloads.items():
    try:
        parsed[source] = json.loads(text)
    except ValueError as e:
        failures.append((source, e))

print(f"{len(parsed)} parsed, {len(failures)} failed")
for source, err in failures:
    print(f"  {source}: {err!r}")
{"ok": sorted(parsed), "failed": [repr(err) for _, err in failures]}
