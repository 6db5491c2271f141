# A file consumed whole before anything read it, by a method (`''.join(f)`,
# `list.extend`, `set.update`, `dict.fromkeys`), an unpacking or `in`: the
# scan sends these to CPython (monty reads a file from the host only in a
# `for` loop, `next()` and the builtins that consume an iterable).
with open("notes.txt", "w") as f:
    f.write("alpha\nbeta\ngamma\n")

out = []
with open("notes.txt") as f:
    out.append("".join(f).upper())
with open("notes.txt") as f:
    lines = ["header\n"]
    lines.extend(f)
    out.append(lines)
with open("notes.txt") as f:
    out.append(sorted(set().union(f)))
with open("notes.txt") as f:
    out.append(list(dict.fromkeys(f)))
with open("notes.txt") as f:
    first, second, third = f
    out.append([third, first])
with open("notes.txt") as f:
    out.append([*f][1:])
with open("notes.txt") as f:
    out.append(["beta\n" in f, f.read()])
out
