# A `re` flag used as a value is CPython's RegexFlag: its repr and str name
# it (`re.IGNORECASE|re.MULTILINE`), it keeps its int value and arithmetic;
# the scan sends such scripts to CPython (monty's flags are plain ints).
import re

FLAGS = re.I | re.M
pattern = re.compile(r"^ab+", FLAGS)
[
    repr(re.I),
    str(FLAGS),
    repr(re.NOFLAG),
    re.I.name,
    int(FLAGS),
    FLAGS == 10,
    FLAGS & re.M == re.M,
    type(re.S).__name__,
    repr(pattern),
    pattern.findall("ABB\nabx\ncab"),
    [repr(f) for f in (re.A, re.S, re.X)],
]
