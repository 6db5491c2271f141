# Tidying a report's text with the str methods agents reach for.
notes = (await read_file("/reports/notes.txt"))["content"]
lines = [line for line in notes.splitlines() if line.strip()]
head = lines[0]
words = head.lower().strip(" .").split()
out = {
    "upper": head.upper(),
    "lstrip": "  padded  ".lstrip(),
    "rstrip": "tail...".rstrip("."),
    "strip_chars": "--x--".strip("-"),
    "rsplit": "a.b.c".rsplit(".", 1),
    "split_sep": "k=v=w".split(sep="=", maxsplit=1),
    "joined": " | ".join(words),
    "rfind": head.rfind("e"),
    "index": head.index(head[1]),
    "rindex": "abcabc".rindex("b"),
    "alnum": ["abc1".isalnum(), "a b".isalnum(), "x".islower(), "12".isdecimal(), "Ⅻ".isnumeric()],
    "casefold": "Straße".casefold(),
    "just": ["ab".ljust(5, "."), "ab".rjust(5), "7".zfill(3)],
    "rpartition": "key:value:extra".rpartition(":"),
    "prefix": ["v1.2".removeprefix("v"), "report.csv".removesuffix(".csv")],
    "format": "{0}-{name}".format("a", name="b"),
    "encode": "héllo".encode("utf-8"),
    "decode": b"caf\xc3\xa9".decode("utf-8", errors="strict"),
    "title_words": [w.capitalize() for w in words],
}
out
