# Files opened for exclusive creation ('x') or update ('+') work as in
# CPython: the scan sends them to the CPython guest (monty's files refuse
# these modes with a ValueError).
from pathlib import Path

out = []
with open("new.txt", "x") as f:
    out.append(f.write("first\n"))
try:
    open("new.txt", "x")
except FileExistsError as e:
    out.append([type(e).__name__, str(e)])
with open("new.txt", "r+") as f:
    f.seek(0, 2)
    f.write("second\n")
    f.seek(0)
    out.append(f.read())
with open("log.txt", "w+") as f:
    f.write("a\nb\n")
    f.seek(0)
    out.append(f.readlines())
with Path("log.txt").open("a+") as f:
    f.write("c\n")
    f.seek(0)
    out.append(f.read())
with open("data.bin", "wb+") as f:
    f.write(b"\x00\x01\x02")
    f.seek(1)
    out.append(f.read())
out
