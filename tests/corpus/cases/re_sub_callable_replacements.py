import re

# Replacement functions as models write them: reformat, count, redact, and
# what CPython does with None, non-str results, counts and subn.
text = "Order 12 shipped 3 items to alice@example.com; order 7 had 1 item (bob@example.org)."

doubled = re.sub(r"\d+", lambda m: str(int(m.group()) * 2), text)

seen = []
def redact(m):
    seen.append(m.group("user"))
    return m.group("user")[0] + "***@" + m.group("domain")

redacted = re.sub(r"(?P<user>\w+)@(?P<domain>[\w.]+)", redact, text)

class Numberer:
    def __init__(self):
        self.n = 0

    def __call__(self, m):
        self.n += 1
        return f"<{self.n}:{m.group().lower()}>"

numberer = Numberer()
numbered, made = re.compile(r"[Oo]rder").subn(numberer, text)

dropped = re.sub(r"\s*\(.*?\)", lambda m: None, text)
first_two = re.sub(r"\d+", lambda m: "#", text, count=2)
spans = re.sub(r"i", lambda m: f"[{m.start()}]", "mississippi", 3)
empty = re.sub(r"x*", lambda m: "-", "abxd")
groups = re.sub(r"(a)|(b)", lambda m: f"{m.lastindex}{m.group(2)!r}", "ab")

errors = []
for repl in [lambda m: 5, lambda m: m, 1, None, lambda: "z"]:
    try:
        re.sub("a", repl, "xaxa")
    except TypeError as e:
        errors.append(str(e))
try:
    re.sub("a", lambda m: 1 / 0, "xa")
except ZeroDivisionError as e:
    errors.append(type(e).__name__)

{
    "doubled": doubled,
    "redacted": redacted,
    "seen": seen,
    "numbered": numbered,
    "made": made,
    "calls": numberer.n,
    "dropped": dropped,
    "first_two": first_two,
    "spans": spans,
    "empty": empty,
    "groups": groups,
    "errors": errors,
}
