# datetime.strptime reads what CPython's format expression reads: padding a
# number with a space, or a format space the input lacks, is refused;
# fields may be one digit wide; literals match whatever their case.
from datetime import datetime

inputs = [
    (" 2024-01-05", "%Y-%m-%d"), ("2024-01-05", "%Y-%m-%d "), ("2024- 1-05", "%Y-%m-%d"),
    ("10: 5", "%H:%M"), ("10:61", "%H:%M"), ("2024-01-05   10:30", "%Y-%m-%d %H:%M"),
    ("1958922", "%Y%m%d"), ("13751", "%H%M%S"), ("2024-01-05t10:30:00.12345", "%Y-%m-%dT%H:%M:%S.%f"),
    ("2019-w18-4", "%Y-W%W-%w"), ("2024 5 3", "%Y %U %w"), ("2024 060", "%Y %j"), ("12 am", "%I %p"),
    ("Jan  5 2024", "%b %d %Y"), ("FRIDAY 5 january 2024", "%A %d %B %Y"),
    ("2024-01-05 10:30 +0530", "%Y-%m-%d %H:%M %z"), ("2024-01-05Z", "%Y-%m-%d%z"), ("99", "%y"), ("2024 400", "%Y %j"),
]
out = []
for text, fmt in inputs:
    try:
        out.append(datetime.strptime(text, fmt).isoformat())
    except ValueError as e:
        out.append(f"ValueError: {e}")
out
