# `{*a, *b}` merges a set as CPython's SET_UPDATE does (presized), and a set
# combined in place with itself: `s |= s` keeps it, `s -= s` and `s ^= s`
# empty it (a fresh table, so later adds land where CPython's do).
a = set(range(0, 40, 8))
b = set([64, 1, 128])
merged = {*a, *b}
spread = {*[16, 1, 2], *a}
s = set(range(20))
s |= s
t = set(range(20))
t -= t
t.update([32, 1, 64])
u = set(range(20))
u ^= u
u.add(16)
u.add(0)
[list(merged), list(spread), list(s), list(t), list(u), list({*{}, *{8: 0, 16: 1, 0: 2}})]
