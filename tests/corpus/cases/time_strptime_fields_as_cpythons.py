# time.strptime returns the fields CPython's `_strptime` reads: a leap
# second (60, 61) accepted, a parsed weekday or day of the year kept as read
# even where the date disagrees, `tm_isdst` 0 for a `UTC`/`GMT` zone name
# and -1 without one, the week directives' day of the year.
import time

out = []
for text, fmt in [
    ("2024-06-30 23:59:60", "%Y-%m-%d %H:%M:%S"),
    ("2016-12-31 23:59:61", "%Y-%m-%d %H:%M:%S"),
    ("Mon 2024-06-30", "%a %Y-%m-%d"),
    ("2024-06-30 100", "%Y-%m-%d %j"),
    ("2024 100", "%Y %j"),
    ("12:30 UTC", "%H:%M %Z"),
    ("gmt 1999", "%Z %Y"),
    ("2024 23 Wed", "%Y %U %a"),
    ("2024 23 3", "%Y %W %w"),
    ("Feb 29", "%b %d"),
    ("7 PM", "%I %p"),
    ("2024-06-30 23:59:62", "%Y-%m-%d %H:%M:%S"),
]:
    try:
        t = time.strptime(text, fmt)
        out.append([list(t), t.tm_zone, t.tm_gmtoff])
    except ValueError as e:
        out.append(str(e))
out
