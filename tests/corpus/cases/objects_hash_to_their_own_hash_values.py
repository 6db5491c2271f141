# A `__hash__` written in Python returns an int; CPython keeps it as the
# object's hash when it fits in 64 bits (-1 becomes -2) and hashes the int
# only beyond. A `__hash__` returning `hash((self.x, self.y))` (any 64-bit
# value) orders a set of its objects by that value.
class Key:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __hash__(self):
        return hash((self.x, self.y))

    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Key({self.x}, {self.y})"


class Raw:
    def __init__(self, h):
        self.h = h

    def __hash__(self):
        return self.h

    def __repr__(self):
        return f"Raw({self.h})"


values = [-1, 0, 2**61 - 1, 2**61, 2**63 - 1, -(2**63), 2**63, 2**64 + 5, -(10**30), True]
keys = {Key(i % 4, i // 4) for i in range(10)}
[
    [hash(Raw(v)) for v in values],
    repr(set(Raw(v) for v in values)),
    repr(keys),
    hash(Key(1, 2)) == hash((1, 2)),
    Key(3, 1) in keys,
]
