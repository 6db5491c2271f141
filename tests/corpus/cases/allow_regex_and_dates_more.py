# A second pass over log lines and timestamps: the less common re and datetime parts.
import datetime
import json
import re
from collections import Counter, namedtuple

log = "ID=7 user=ada\nid=9 user=bob"
pat = re.compile(r"id=(?P<id>\d+) user=(?P<user>\w+)", re.I)
m = pat.search(log)
fixed, n = re.subn(r"\d", "#", log, count=1)
Point = namedtuple("Point", ["x", "y"])
p = Point(1, 2)._replace(y=5)
stamp = datetime.datetime(2024, 2, 29, 13, 45, 30, 250)
gap = datetime.timedelta(days=1, seconds=30, microseconds=7)
utc = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
out = {
    "expand": m.expand(r"\g<user>#\1"),
    "pattern": [pat.pattern],
    "subn": [fixed, n],
    "dotall": re.findall(r"a.b", "a\nb", re.S),
    "search_flags": bool(re.search("user", "USER", flags=re.IGNORECASE)),
    "split_flags": re.split("x", "aXbxc", flags=re.IGNORECASE),
    "idents": ["ok_name".isidentifier(), "1bad".isidentifier(), "Title Case".istitle(), "not Title".istitle()],
    "json": [json.dumps({"a": float("inf")}, allow_nan=True), json.dumps({(1, 2): 3, "k": 1}, skipkeys=True)],
    "dates": [stamp.replace(minute=0).isoformat(), utc.timestamp(), utc.tzinfo is datetime.timezone.utc],
    "gap": [gap.seconds, gap.microseconds],
    "zip": list(zip("ab", [1, 2], strict=True)),
    "counter": sorted(Counter(a=1, c=2).items()),
    "point": list(p),
}
out
