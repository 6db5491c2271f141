# An OSError the system raises keeps CPython's fields: `args` is
# `(errno, strerror)`, `repr()` shows them, and `errno`, `strerror`,
# `filename` and `filename2` read as in CPython, for relative and absolute
# paths, a rename's two names, a descriptor, and a re-raised error.
import os

def fields(e):
    return [type(e).__name__, e.args, repr(e), str(e), e.errno, e.strerror, e.filename, e.filename2]

out = []
for attempt in [
    lambda: open("missing.txt"),
    lambda: open("/workspace/missing.txt"),
    lambda: os.listdir("nodir"),
    lambda: os.rename("nope", "other"),
    lambda: os.stat(99),
    lambda: os.chdir(""),
    lambda: open("data.txt", "rb").seek(-1),
]:
    try:
        open("data.txt", "w").close()
        out.append(attempt())
    except OSError as e:
        out.append(fields(e))

def reraise():
    try:
        os.remove("gone")
    except FileNotFoundError as e:
        raise e

try:
    reraise()
except OSError as e:
    out.append(fields(e))

# A script's own OSError has no such fields but answers them with None.
try:
    raise OSError("disk full")
except OSError as e:
    out.append(fields(e))
errors = []
try:
    os.remove("a/b/c")
except OSError as e:
    errors.append(e)
out.append([e.filename for e in errors])
out
