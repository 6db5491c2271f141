# Timestamps from tools come in many shapes; strptime fills what the format
# leaves out with 1900-01-01 00:00 as CPython does. monty (chrono) dropped
# a lone `%H`'s hour (`'2024-03-07 13'` read as midnight), refused formats
# without a whole date or an hour without minutes, and read `%y` 69 as 2069.
from datetime import datetime

samples = [
    ("2024-03-07 13", "%Y-%m-%d %H"),
    ("2024-03", "%Y-%m"),
    ("13:05", "%H:%M"),
    ("12:30 PM", "%I:%M %p"),
    ("12:30", "%I:%M"),
    ("2024-067", "%Y-%j"),
    ("Mar 2024", "%b %Y"),
    ("69-01-01", "%y-%m-%d"),
    ("68-01-01", "%y-%m-%d"),
    ("PM 2024", "%p %Y"),
    ("2024-03-07T13:05:09.5", "%Y-%m-%dT%H:%M:%S.%f"),
    ("07/03/2024", "%d/%m/%Y"),
    ("2024-02-30", "%Y-%m-%d"),
    ("2024-03-07 13:05 +0100", "%Y-%m-%d %H:%M %z"),
    ("13 +0100", "%H %z"),
]
out = []
for text, fmt in samples:
    try:
        out.append(datetime.strptime(text, fmt).isoformat())
    except ValueError as e:
        out.append("ValueError")
out
