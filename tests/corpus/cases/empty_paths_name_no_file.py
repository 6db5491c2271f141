# An empty path names no file: every file call given one is
# `FileNotFoundError: [Errno 2] No such file or directory: ''` (both names
# for a rename), the `os.path` predicates are False, `os.walk('')` walks
# nothing, and `os.makedirs(os.path.dirname('a.txt'), exist_ok=True)` fails
# as in CPython. `os.path.abspath('')` and `Path('')` are the working
# directory. (WASI and the host take `''` for the directory itself.)
import os
from pathlib import Path

open("a.txt", "w").close()
out = []
for attempt in [
    lambda: os.listdir(""),
    lambda: os.stat(""),
    lambda: open(""),
    lambda: open("", "w"),
    lambda: os.mkdir(""),
    lambda: os.remove(""),
    lambda: os.rmdir(""),
    lambda: os.rename("", "b.txt"),
    lambda: os.rename("a.txt", ""),
    lambda: os.makedirs(os.path.dirname("a.txt"), exist_ok=True),
    lambda: [os.path.exists(""), os.path.isdir(""), os.path.isfile("")],
    lambda: list(os.walk("")),
    lambda: os.path.abspath("") == os.getcwd(),
    lambda: [Path("").exists(), str(Path(""))],
    lambda: sorted(os.listdir()),
]:
    try:
        out.append(attempt())
    except OSError as e:
        out.append([type(e).__name__, str(e), e.errno, e.filename, e.filename2])
out
