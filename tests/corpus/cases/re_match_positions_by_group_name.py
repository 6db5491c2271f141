# Where a named group matched: `m.start('year')`, `m.span('day')` take a
# group's name as CPython does (monty took only numbers: IndexError), and
# `m.groups('?')` fills the groups that did not match.
import re
m = re.search(r"(?P<year>\d{4})-(?P<month>\d\d)(?P<day>-\d\d)?", "on 2024-03 and")
out = [m.groups("?"), m.groups(), m.start("year"), m.end("month"), m.span("year"), m.start("day"), m.span("day"), m.start(1), m.span()]
for bad in ["nope", 7, -1, 1.5]:
    try:
        m.start(bad)
    except Exception as e:
        out.append(type(e).__name__ + ": " + str(e))
out
