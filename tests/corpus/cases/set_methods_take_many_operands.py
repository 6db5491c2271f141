# The in-place set methods and several operands at once, in CPython's order.
a = set(range(0, 100, 3))
a.difference_update([3, 6], {9, 12, 64})
b = set(range(0, 100, 3))
b.intersection_update(range(50), {3, 6, 9, 12, 15, 99})
c = set(range(0, 40, 3))
c.symmetric_difference_update([3, 64, 128, 6, 1])
d = {1, 2}
d.update([3], [64, 4], {128})
e = {1, 2, 3}
e.difference_update(e)
e.add(9)
f = frozenset(range(20))
pairs = {(1, 2), (3, 4)}
pairs.intersection_update([(1, 2), (5, 6)])
[list(a), list(b), list(c), list(d), list(e), list({1, 2}.union([64, 3], (128, 1), {256, 2})),
 list(set(range(30)).intersection(range(10, 100), [12, 11, 10, 64])),
 list(set(range(30)).difference([1, 2], {3, 4}, range(20, 25))),
 list({5}.union()), list(f.union([64, 1], [100])), list(f.difference({1}, [2])), pairs]
