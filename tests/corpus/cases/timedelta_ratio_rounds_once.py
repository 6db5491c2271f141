# `td / td` past 2**53 microseconds (monty divided the two counts as floats,
# each already rounded: 2.1005208354338544e-08): one correctly rounded
# division, as CPython's int true division.
from datetime import timedelta
[timedelta(weeks=3, minutes=7.5) / timedelta(days=999999999), timedelta.max / timedelta(microseconds=3),
 timedelta(days=1) / timedelta(microseconds=7), timedelta.min / timedelta.max, timedelta(hours=1) / timedelta(minutes=7)]
