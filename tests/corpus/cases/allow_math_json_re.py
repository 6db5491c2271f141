# Parsing a log with re, scoring it with math, reporting in JSON.
import json
import math
import re

log = "2024-05-01 ERROR disk 91%\n2024-05-01 warn cpu 75%\n2024-05-02 ERROR disk 97%"
pattern = re.compile(r"(?P<day>\d{4}-\d\d-\d\d) (?P<level>\w+) (?P<what>\w+) (?P<pct>\d+)%")
rows = [m.groupdict() for m in pattern.finditer(log)]
errors = re.findall(r"error \w+", log, flags=re.IGNORECASE)
first = re.search(r"(\w+) (\d+)%", log)
whole = re.fullmatch(r"\d+", "123")
pcts = [int(r["pct"]) for r in rows]
report = {
    "rows": rows,
    "errors": errors,
    "first": [first.group(0), first.group(1, 2), first.groups(), first.start(), first.end(), first.span(2)],
    "whole": whole is not None,
    "masked": re.sub(r"\d", "#", "a1b22", count=2),
    "split": re.split(r"[;,]\s*", "a, b;c"),
    "match": bool(re.match("2024", log)),
    "pattern_sub": pattern.sub(lambda m: m.group("level").lower(), log).splitlines(),
    "escape": re.escape("a.b"),
    "math": [math.floor(2.7), math.ceil(2.1), math.sqrt(16), round(math.pi, 5), math.isclose(0.1 + 0.2, 0.3)],
    "more_math": [math.fsum([0.1] * 10), math.prod([1, 2, 3]), math.gcd(12, 18), math.exp(0), math.fabs(-1.5), math.trunc(-2.5)],
    "checks": [math.isnan(math.nan), math.isinf(math.inf), math.log(100, 10), math.log2(8), math.hypot(3, 4)],
    "mean": sum(pcts) / len(pcts),
}
text = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False)
compact = json.dumps({"b": 1, "a": [1, 2]}, separators=(",", ":"))
back = json.loads(text)
{"same": back == json.loads(json.dumps(report)), "compact": compact, "keys": list(back)[:3], "lines": len(text.splitlines())}
