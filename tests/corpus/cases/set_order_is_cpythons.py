# Sets iterate in CPython's hash-table order: ints past the table size,
# tuples, floats and big ints, after deletions, pops and set algebra, and a
# constant display (which CPython builds as a frozenset constant, merged).
pairs = {(i % 7, i // 7) for i in range(20)}
s = set()
for i in range(60):
    s.add(i * 37 % 101)
for i in range(0, 60, 4):
    s.discard(i * 37 % 101)
s.add(2**70)
popped = [s.pop() for _ in range(3)]
a = {1, 2, 3, 40, 50}
b = set([3, 40, 99, 1000])
c = set(range(0, 90, 7))
c -= {14, 21, 35}
c |= {512, 1024, 2048}
c ^= {7, 8, 9}
floats = {1.5, 2.25, -0.5, 100.0, 1e10, 0.1}
print(list(pairs)[:8], {16, 1, 2, 3, 4}, floats)
[list(s), popped, list(a | b), list(b | a), list(a & b), list(a ^ b), list(b - a),
 list(c), list(set({16: 0, 1: 0, 2: 0, 3: 0, 4: 0})), [x for x in {16, 1, 2, 3, 4}],
 list(a.union([64, 1, 128])), list(frozenset([(1, 2), (3, 4), (0, 0)])),
 [hash((1, 2)), hash(2**64), hash(0.5), hash(frozenset({1, 2}))]]
