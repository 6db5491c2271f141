# Point at where a config file stops being JSON: the script reads the
# JSONDecodeError's `msg`, `lineno`, `colno` and `doc`, which monty's
# exceptions do not have (only `args`), so `auto` runs this on CPython.
import json

drafts = [
    (await read_file("/config/app.json"))["content"],
    '{\n  "retries": 3,\n  "name": "demo"\n  "debug": true\n}',
    '{"retries": 3}',
]
report = []
for number, text in enumerate(drafts, 1):
    try:
        cfg = json.loads(text)
        report.append({"draft": number, "keys": len(cfg)})
    except json.JSONDecodeError as err:
        line = err.doc.splitlines()[err.lineno - 1]
        report.append({"draft": number, "error": err.msg, "at": [err.lineno, err.colno], "line": line.strip()})
report
