# timedelta(hours=1.5): float components as CPython's delta_new adds them
# (int parts exact, fractions rounded half to even once), and arithmetic that
# leaves the date range raising OverflowError.
import math
from datetime import date, datetime, timedelta

out = []
cases = [
    lambda: timedelta(hours=1.5),
    lambda: timedelta(days=0.5, seconds=1.25),
    lambda: timedelta(minutes=-2.75),
    lambda: timedelta(seconds=1e-7),
    lambda: timedelta(microseconds=0.5),
    lambda: timedelta(microseconds=1.5),
    lambda: timedelta(microseconds=-2.5),
    lambda: timedelta(milliseconds=1.0005),
    lambda: timedelta(weeks=0.1, days=1 / 3),
    lambda: timedelta(1.5, 0.25, 0.75),
    lambda: timedelta(hours=math.nan),
    lambda: timedelta(days=float('inf')),
    lambda: datetime(2024, 1, 1) + timedelta(hours=36.5),
    lambda: datetime(9999, 12, 31) + timedelta(days=1),
    lambda: datetime(1, 1, 1) - timedelta(seconds=1),
    lambda: date(1, 1, 1) - timedelta(days=1),
    lambda: timedelta(days=1) + date(9999, 12, 31),
    lambda: timedelta(days=999999999) + timedelta(days=1),
    lambda: timedelta(days=-999999999) - timedelta(days=1),
    lambda: timedelta(hours='1'),
    lambda: timedelta(None),
    lambda: timedelta(seconds=[1], days='x'),
]
for f in cases:
    try:
        out.append(repr(f()))
    except (ValueError, OverflowError, TypeError) as e:
        out.append([type(e).__name__, str(e)])
out
