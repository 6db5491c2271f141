# Bytes built from integers, as a checksum or packet script does; and the
# errors CPython gives for bad items.
codes = [104, 105, 33]
raw = bytes(codes)
parts = [list(bytes(range(4))), bytes(c ^ 0x20 for c in raw).decode(), list(bytes({7: "x", 8: "y"}))]
checksum = sum(raw) % 256
frame = bytes([0x02, len(raw)]) + raw + bytes([checksum, 0x03])
errors = []
for bad in ([300], [-1], ["a"], 2.5):
    try:
        bytes(bad)
    except (TypeError, ValueError) as e:
        errors.append(f"{type(e).__name__}: {e}")
latin = "café £5".encode("latin-1")
extra = [latin, latin.decode("latin1"), float(b" 2.50 "), "x€".encode("latin-1", "replace")]
{"text": raw.decode(), "hex": [frame.hex(), frame.hex(":"), bytes.fromhex(frame.hex()) == frame], "extra": [repr(x) for x in extra], "frame": list(frame), "size": len(frame), "parts": parts, "errors": errors}
