# A timedelta divided by a float (monty: TypeError), `replace` with
# positional fields (monty: keyword-only), `strptime` ignoring a weekday
# beside a full date and a week number without a weekday, as CPython does.
# Errors by type: their wording changed after 3.11, the reference here
# (tests/it/cpython.rs `date_errors_read_as_in_cpython` has 3.14's).
import math
from datetime import date, datetime, time, timedelta
out = [timedelta(hours=3) / 2.5, timedelta(microseconds=7) / 2.0, timedelta(days=3) / -0.7, timedelta(hours=1) * 1.5]
for divisor in [0.0, float("inf"), math.nan, 1e-300]:
    try:
        out.append(timedelta(hours=3) / divisor)
    except (ZeroDivisionError, OverflowError, ValueError) as e:
        out.append(type(e).__name__)
out += [date(2024, 1, 2).replace(2025), date(2024, 1, 2).replace(2025, 3), datetime(2024, 1, 2, 3).replace(2023, 5, 6, 7, 8), time(1, 2).replace(5)]
for text, fmt in [("2024-02-30", "%Y-%m-%d"), ("2023-02-29", "%Y-%m-%d"), ("31/04/24", "%d/%m/%y"), ("Mon 2024-03-07", "%a %Y-%m-%d"), ("2024 10", "%Y %U"), ("2024-13-01", "%Y-%m-%d")]:
    try:
        out.append(datetime.strptime(text, fmt))
    except ValueError as e:
        out.append("ValueError")
out
