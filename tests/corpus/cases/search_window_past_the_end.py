# str/bytes searches whose start lies past the end, or whose window ends
# before it starts: CPython finds nothing there, not even the empty string
# (monty clamped the start and matched '' at the end). Also bytes(True).
texts = ["", "abc", "héllo"]
rows = []
for t in texts:
    for args in [(2,), (5,), (5, 5), (2, 1), (3, 3), (-10,), (0, 100)]:
        rows.append([t.startswith("", *args), t.endswith("", *args), t.find("", *args), t.rfind("", *args), t.count("", *args)])
blobs = []
for b in [b"", b"abc"]:
    for args in [(2,), (5,), (2, 1), (3, 3)]:
        blobs.append([b.startswith(b"", *args), b.endswith(b"", *args), b.find(b"", *args), b.count(b"", *args)])
{"str": rows, "bytes": blobs, "bytes_true": bytes(True)}
