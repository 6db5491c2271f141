# A grid search routed to CPython (a dataclass, a generator) whose answer
# lists sets of coordinate tuples, float readings, millisecond timestamps
# and frozensets of edges: their order is the hashes', and the CPython
# guest (a 32-bit build) has 64-bit CPython's numeric hashes spliced into
# its libpython.
from collections import deque
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Reading:
    at: tuple
    value: float


def neighbours(r, c):
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        yield r + dr, c + dc


grid = ["S..#....", ".#...#..", ".#.#.#.#", "...#...E", "#.....#."]
start = (0, 0)
seen, queue = {start}, deque([start])
while queue:
    r, c = queue.popleft()
    for nr, nc in neighbours(r, c):
        if 0 <= nr < len(grid) and 0 <= nc < len(grid[0]) and grid[nr][nc] != "#" and (nr, nc) not in seen:
            seen.add((nr, nc))
            queue.append((nr, nc))
walls = {(r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "#"}
readings = {Reading((r, c), round(r * 1.25 + c / 8, 3)) for r, c in list(seen)[:6]}
values = {x.value for x in readings} | {0.1, 2.5e-7, 1e300}
stamps = {1_700_000_000_000 + 3_600_000 * i for i in range(8)}
# Fraction's hash is Python, modulo the guest's 64-bit `fractions` modulus.
ratios = {Fraction(n, d) for n in range(-3, 4) for d in (2, 3, 7)}
# Undirected edges: frozensets hash as 64-bit CPython's too.
order = sorted(seen)
edges = {frozenset((a, b)) for a in order for b in order if abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1}
[
    list(seen),
    walls,
    sorted(readings, key=lambda x: x.at),
    values,
    list(stamps),
    {(0.5, 1.5), (10**10, 2), ((1, 2), 2.75)},
    list(ratios),
    list(edges)[:10],
    len(edges),
    {(1, 0), (0, 0)} in edges,
    [{Fraction(3, 2): "a"}.get(1.5), 2.5 in {Fraction(5, 2)}, hash(Fraction(10**12, 1)) == hash(10**12)],
]
