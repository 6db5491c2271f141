# Set operators on dict views give CPython's sets, in CPython's order: the
# left side made a set (a keys view from its dict), updated by the right.
d1 = {i * 8: i for i in range(10)}
d2 = {i * 16: i % 3 for i in range(8)}
d = {64: 1, 1: 2, 128: 3, 2: 4}
s = {5}
s |= d.keys()
[list(d1.keys() & d2.keys()), list(d1.keys() | d2.keys()), list(d1.keys() - d2.keys()), list(d1.keys() ^ d2.keys()),
 list(d1.items() & d2.items()), list(d1.items() | d2.items()), list(d1.items() - d2.items()), list(d1.items() ^ d2.items()),
 list([3, 1, 64] | d.keys()), list({3, 1, 200} | d.keys()), list(d.keys() - {1, 2}), list({1, 2, 128} - d.keys()),
 list(d.keys() & set([1, 2, 3, 4, 5, 6, 128])), list(d.keys() & [128, 1, 2]), list([128, 1, 2] & d.keys()), list({1, 5} ^ d.keys()),
 list(s), list({'a': [1]}.items() & {'a': [3]}.items())]
