# timedelta(days, seconds, microseconds, milliseconds, minutes, hours, weeks):
# all seven may be given by position, floats included.
from datetime import timedelta
spans = [
    timedelta(1, 2, 3, 4),
    timedelta(0, 0, 0, 0, 90),
    timedelta(0, 30, 0, 0, 0, 1.5),
    timedelta(1, 2, 3, 4, 5, 6, 7),
    timedelta(0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5),
]
try:
    timedelta(1, 2, 3, 4, 5, 6, 7, 8)
except TypeError as e:
    too_many = str(e)
try:
    timedelta(1, days=2)
except TypeError as e:
    twice = str(e)
[str(s) for s in spans] + [sum(spans, timedelta()).total_seconds(), too_many, twice]
