# int (small, big, bool) methods and attributes a packing or bit-twiddling
# script uses, and CPython's errors for bad arguments. (`int.is_integer`
# is 3.12+, so it is checked in tests/it/cpython.rs, not here.)
def attempt(f):
    try:
        return f()
    except Exception as e:
        return [type(e).__name__, str(e)]

values = [0, 1, -1, 255, -256, 2**63 - 1, -2**63, 2**64 + 5, -(10**30), True, False]
rows = []
for n in values:
    rows.append([n.bit_length(), n.bit_count(), n.as_integer_ratio(), n.conjugate(), n.real, n.imag, n.numerator, n.denominator, type(n.real).__name__, type(n.conjugate()).__name__])
packed = []
for n in [0, 128, 255, -1, -129, 65535, 2**64 - 1]:
    for order in ["big", "little"]:
        for signed in [False, True]:
            b = attempt(lambda: n.to_bytes(3 if n < 2**64 - 1 else 9, order, signed=signed))
            back = int.from_bytes(b, order, signed=signed) if isinstance(b, bytes) else None
            packed.append([repr(b), back])
header = (513).to_bytes(2, "little") + (7).to_bytes() + True.to_bytes(length=2)
parsed = [int.from_bytes(header[:2], "little"), int.from_bytes(header[2:3]), int.from_bytes([1, 2, 3]), int.from_bytes((255, 254), signed=True), int.from_bytes(b""), bool.from_bytes(b"\x00\x02"), bool.from_bytes(b"\x00"), (5).from_bytes(b"\x01\x00", byteorder="little")]
{"rows": rows, "packed": packed, "header": repr(header), "parsed": parsed, "has": [hasattr(5, "real"), hasattr(True, "denominator"), getattr(2**70, "imag")]}
