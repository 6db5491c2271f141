# OSErrors read as on CPython on Linux: `[Errno 2] No such file or
# directory: 'missing.txt'`, `e.errno == errno.ENOENT`, the args and the
# file name as the script wrote it, whether the error comes from C (`open`)
# or from the stdlib's Python (`pathlib`, `shutil`), caught in a function or
# at the top. (`errno` sends the script to the CPython guest, a WASI build
# whose own numbers differ: ENOENT is 44 there.)
import errno
import os
import shutil
from pathlib import Path

out = []


def read(name):
    try:
        return open(name).read()
    except FileNotFoundError as e:
        out.append(["in read", e.errno, str(e)])
        raise


for attempt in [
    lambda: read("missing.txt"),
    lambda: os.listdir("nodir"),
    lambda: os.mkdir("."),
    lambda: open(".", "w"),
    lambda: Path("missing.txt").read_text(),
    lambda: Path("x/y").mkdir(),
    lambda: shutil.rmtree("nodir"),
    lambda: os.remove("nope"),
    lambda: os.path.getsize("nope"),
    lambda: Path("w.txt").write_text("hi") and Path("w.txt").mkdir(),
    lambda: os.makedirs("a/b") or os.makedirs("a/b"),
]:
    try:
        out.append(attempt())
    except OSError as e:
        out.append([type(e).__name__, str(e), repr(e), list(e.args), e.errno, e.strerror, e.filename])
out.append([os.path.exists("nowhere"), Path("nowhere").exists(), os.makedirs("c/d", exist_ok=True)])
try:
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "mine")
except OSError as e:
    out.append([str(e), e.errno])
out.append([errno.ENOENT, errno.EEXIST, errno.EACCES, errno.ENOTDIR, errno.errorcode[errno.EISDIR], os.strerror(errno.EEXIST)])
out
