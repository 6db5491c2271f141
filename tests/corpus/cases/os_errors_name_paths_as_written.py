# An OSError from a file operation names the path as the script wrote it,
# relative or not: `[Errno 2] No such file or directory: 'missing.txt'`
# (monty's host saw the path joined to the workspace).
import os
from pathlib import Path

out = []
for attempt in [
    lambda: open("missing.txt"),
    lambda: open("./sub/../missing.txt"),
    lambda: os.listdir("nodir"),
    lambda: os.mkdir("."),
    lambda: Path("missing.txt").read_text(),
    lambda: Path("x/y").mkdir(),
    lambda: os.remove("nope"),
    lambda: os.rename("nope", "other"),
]:
    try:
        out.append(attempt())
    except OSError as e:
        out.append([type(e).__name__, str(e)])
try:
    with open("data.txt", "w") as f:
        f.write("x")
    os.mkdir("data.txt")
except OSError as e:
    out.append(f"{e}")
out
