# PEP 495's `fold` on a datetime (monty accepted it and dropped it: the
# repr, `.fold`, `.time()`, `combine` and `replace` lost it): stored, shown,
# carried to the time; ignored by equality and hash; arithmetic answers 0.
# Errors by type only (3.11 words them without the value).
from datetime import datetime, date, time, timezone, timedelta
IST = timezone(timedelta(hours=5, minutes=30))
d = datetime(2024, 2, 29, 0, 0, fold=1)
out = [repr(d), d.fold, repr(d.time()), repr(d.timetz()), repr(datetime.combine(date(2021, 1, 3), time(7, 8, 9, fold=1), IST)),
       repr(d.replace(fold=0)), repr(d.replace(hour=3)), d == d.replace(fold=0), hash(d) == hash(d.replace(fold=0)),
       repr(d + timedelta(1)), str(d), d.isoformat(), repr(datetime(2020, 1, 1, 1, 2, 3, 4, IST, fold=1)),
       repr(datetime(2020, 1, 1, tzinfo=timezone.utc, fold=1).astimezone(IST)), datetime(2020, 1, 1, fold=1) < datetime(2020, 1, 1, 0, 0, 1)]
for bad in [lambda: datetime(2020, 1, 1, fold=2), lambda: d.replace(fold=-1), lambda: datetime(2020, 13, 1, fold=2)]:
    try:
        bad()
    except ValueError as e:
        out.append(type(e).__name__)
out
