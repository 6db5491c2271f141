# CPython's errors for int methods given bad arguments (to_bytes,
# from_bytes, the no-argument methods) and for writing an int's attributes.
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e)]

errors = [
    attempt(lambda: (300).to_bytes(1, "big")),
    attempt(lambda: (-1).to_bytes(1, "big")),
    attempt(lambda: (128).to_bytes(1, "big", signed=True)),
    attempt(lambda: (5).to_bytes(1, "middle")),
    attempt(lambda: (5).to_bytes(1, 5)),
    attempt(lambda: (5).to_bytes(-1)),
    attempt(lambda: (5).to_bytes("a")),
    attempt(lambda: (5).to_bytes(1.0)),
    attempt(lambda: (5).to_bytes(2**70)),
    attempt(lambda: (5).to_bytes(1, "big", True)),
    attempt(lambda: (5).to_bytes(1, length=1)),
    attempt(lambda: (5).bit_length(1)),
    attempt(lambda: (5).bit_count(x=1)),
    attempt(lambda: True.as_integer_ratio(2)),
    attempt(lambda: int.from_bytes()),
    attempt(lambda: int.from_bytes("ab")),
    attempt(lambda: int.from_bytes(5)),
    attempt(lambda: int.from_bytes(None)),
    attempt(lambda: int.from_bytes([1, 256])),
    attempt(lambda: int.from_bytes([1, "a"])),
    attempt(lambda: int.from_bytes(b"a", "x")),
    attempt(lambda: int.from_bytes(b"a", 3)),
    attempt(lambda: int.from_bytes(b"a", "big", True)),
    attempt(lambda: (5).hex()),
    attempt(lambda: True.nope()),
    attempt(lambda: (2**70).nope),
]
x, flag, big = 5, True, 2**80
writes = []
for f in [lambda: setattr(x, "real", 1), lambda: setattr(flag, "numerator", 2), lambda: setattr(big, "bit_length", 1)]:
    try:
        f()
        writes.append("ok")
    except AttributeError as e:
        writes.append(str(e))
try:
    del flag.real
except AttributeError as e:
    writes.append(str(e))
try:
    del x.denominator
except AttributeError as e:
    writes.append(str(e))
{"errors": errors, "writes": writes}
