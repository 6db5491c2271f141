# Dates from a tool and files in the workspace.
import datetime
import os
import pathlib
from datetime import date, datetime as dt, timedelta

user = await get_user(user_id=1)
joined = date.fromisoformat(user["joined"])
stamp = dt(2024, 3, 9, 14, 5, 7)
later = stamp + timedelta(days=1, hours=2)
parsed = dt.strptime("2024-01-02 03:04", "%Y-%m-%d %H:%M")
now_type = type(dt.now()).__name__
today_type = type(date.today()).__name__
dates = {
    "joined": [joined.year, joined.month, joined.day, joined.weekday(), joined.isoweekday()],
    "stamp": [stamp.hour, stamp.minute, stamp.second, stamp.strftime("%d/%m/%Y %H:%M"), stamp.isoformat()],
    "later": later.isoformat(),
    "gap": (later - stamp).total_seconds(),
    "replaced": stamp.replace(year=2025, day=1).date().isoformat(),
    "parsed": parsed.isoformat(),
    "types": [now_type, today_type],
    "delta": str(timedelta(minutes=90)),
    "utc": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc).isoformat(),
}
folder = pathlib.Path("reports")
folder.mkdir(exist_ok=True)
target = folder / "summary.txt"
target.write_text("line one\nline two\n")
with open(os.path.join("reports", "extra.txt"), mode="w") as f:
    f.write("extra\n")
with open("reports/extra.txt") as f:
    extra = f.read()
paths = {
    "name": [target.name, target.suffix, target.stem, str(target.parent)],
    "exists": [target.exists(), os.path.exists("reports/missing.txt"), os.path.isdir("reports")],
    "text": target.read_text().splitlines(),
    "extra": extra,
    "split": [os.path.basename("a/b/c.txt"), os.path.splitext("c.tar.gz"), os.path.dirname("a/b/c.txt")],
    "listing": sorted(os.listdir("reports")),
}
{"dates": dates, "paths": paths}
