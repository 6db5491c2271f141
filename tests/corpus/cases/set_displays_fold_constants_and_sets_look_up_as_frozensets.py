# Status codes and sizes written as expressions: CPython folds `2**31`,
# `24 * 3600` and `1 << 20` into constants before building the set, which
# decides the order the set lists its members in.
limits = {1, -17, 2**31, 42, -1}
sizes = {1 << 20, 1 << 30, 1 << 10, -(1 << 40)}
edges = {frozenset(e) for e in [(1, 2), (2, 3), (3, 1)]}
seen = {frozenset([1])}
seen.discard({1})
try:
    seen.remove({9})
except KeyError as e:
    missing = repr(e)
[list(limits), list(sizes), {2, 1} in edges, {4, 1} in edges, seen, missing]
