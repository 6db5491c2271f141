# A file nobody has read yet can be consumed by the builtins and the
# itertools and collections constructors that take an iterable (list(f),
# enumerate(f), zip(f, g), sorted(f), islice(f, 2), Counter(f), ...), as in
# CPython; monty loads it from the host first (it used to refuse with
# NotImplementedError unless a for loop or next() read it first).
import itertools, collections
open("a.txt", "w").write("x\ny\nx\n")
open("b.txt", "w").write("1\n2\n3\n")
out = []
f = open("a.txt")
out.append([(i, line.strip()) for i, line in enumerate(f, 1)])
with open("a.txt") as f:
    out.append(list(f))
with open("a.txt") as f, open("b.txt") as g:
    out.append(list(zip(f, g)))
with open("b.txt") as g:
    out.append(sum(int(x) for x in g))
with open("b.txt") as g:
    out.append(sorted(g, reverse=True))
with open("a.txt") as f:
    out.append(list(itertools.islice(f, 2)))
with open("a.txt") as f:
    out.append(collections.Counter(f).most_common(1))
with open("a.txt") as f:
    out.append(max(f, key=len))
with open("a.txt") as f:
    out.append(list(map(lambda l: l.strip(), f)))
with open("a.txt") as f:
    out.append(set(f) == {"x\n", "y\n"})
with open("b.txt", "rb") as g:
    out.append(tuple(g))
with open("a.txt") as f:
    f.readline()
    out.append(list(f))
with open("a.txt") as f:
    out.append(list(filter(lambda l: l.startswith("x"), f)))
with open("a.txt") as f:
    out.append(any(["y" in l for l in f]))
f = open("a.txt"); f.close()
try:
    list(f)
except ValueError as e:
    out.append(str(e))
out
