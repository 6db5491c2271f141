# `del container[key]` on dicts, lists (indexes, slices, extended slices),
# deques and the collections dicts, with the errors CPython raises.
from collections import Counter, defaultdict, deque


def attempt(label, fn):
    try:
        print(label, "ok", fn())
    except Exception as e:
        print(label, type(e).__name__, e)


def drop(container, key):
    del container[key]
    return container


inventory = {"apples": 3, "pears": 0, "plums": 7}
del inventory["pears"]
print(inventory)
attempt("missing key", lambda: drop({"a": 1}, "zz"))
attempt("missing int key", lambda: drop({"a": 1}, 5))
nested = {"user": {"name": "ann", "token": "x"}}
del nested["user"]["token"]
print(nested)

for key in [0, -1, 2, True]:
    attempt(f"list[{key!r}]", lambda: drop([10, 20, 30], key))
attempt("list[3]", lambda: drop([10, 20, 30], 3))
attempt("list[-4]", lambda: drop([10, 20, 30], -4))
attempt("list['a']", lambda: drop([10, 20, 30], "a"))
for piece in [slice(2, 5), slice(None, None, 2), slice(None, None, -3), slice(8, 2, -2),
              slice(5, 2), slice(-3, None), slice(100, None), slice(1, 8, 3)]:
    attempt(repr(piece), lambda: drop(list(range(10)), piece))
attempt("step 0", lambda: drop(list(range(10)), slice(None, None, 0)))
rows = list(range(8))
del rows[1], rows[1]
print(rows)
del rows[::2]
print(rows)
del rows[:]
print(rows)
grid = [[1, 2], [3, 4]]
del grid[0][1]
print(grid)

attempt("tuple", lambda: drop((1, 2), 0))
attempt("str", lambda: drop("abc", 1))
attempt("int", lambda: drop(5, 0))
attempt("None", lambda: drop(None, "a"))

groups = defaultdict(list)
groups["x"].append(1)
del groups["x"]
print(dict(groups))
attempt("defaultdict missing", lambda: drop(defaultdict(int), "q"))
counts = Counter("aab")
del counts["a"]
del counts["zz"]
print(counts)
queue = deque([1, 2, 3, 4])
del queue[1]
del queue[-1]
print(queue)
attempt("deque[9]", lambda: drop(deque([1]), 9))
list(queue)
