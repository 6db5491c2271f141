# Silent differences found by the seq, dt and re batteries (stop 35):
# enumerate's count wrapped past 2**63 - 1 and refused a big start;
# `timedelta.min.total_seconds()` was rounded twice (-86399999913599.98);
# `re.compile('') == re.compile('', re.U)` compared the flags as given, not
# as CPython sees them; and comparing a naive with an aware time said
# "not supported" instead of CPython's own message.
import re
from datetime import time, timedelta, timezone
out = [list(enumerate("abc", 2**63 - 2)), list(enumerate("ab", -2**70)), list(enumerate("ab", 2**64))]
out.append([timedelta.min.total_seconds(), timedelta.max.total_seconds(), timedelta(days=1, microseconds=3).total_seconds(), (timedelta.max - timedelta(days=10**8)).total_seconds()])
out.append([re.compile("") == re.compile("", re.U), re.compile(r"\w+", re.I) == re.compile(r"\w+", re.I | re.U), re.compile("a", re.A) == re.compile("a"), re.compile("(?i)a") == re.compile("a", re.I)])
try:
    time(1) < time(2, tzinfo=timezone.utc)
except TypeError as e:
    out.append(str(e))
out.append(time(1) == time(1, tzinfo=timezone.utc))
out
