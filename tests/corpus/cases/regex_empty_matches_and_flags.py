import re

# An empty match right after a non-empty one counts (Python 3.7+).
dashed = re.sub("x*", "-", "abxd")
starred = re.sub(r"a*", "*", "baac")
upto_three = re.findall(r"a{,3}", "xa b1 \n")
spans = [m.span() for m in re.finditer(r"\d*", "a12b")]
at_word_edges = re.split(r"\b", "ship it now")
around_digits = re.split(r"(\d*)", "ab12c")
before_b = re.split(r"(?=b)", "abcbd", maxsplit=1)
every_gap = re.split("", "abc")
ends = re.sub(r"$", "!", "line\n")
# After an empty match, the pattern's first non-empty way to match there.
alternatives = (re.findall(r"a*|b", "bab"), re.sub(r"a*|b", "-", "bab"), re.split(r"x*|y", "ayb"))

# subn counts what it replaced.
counted = (re.subn(r"\s+", " ", "a  b   c"), re.compile(r"\d+").subn("#", "a1b22c333", 2), re.subn("x*", "-", "abxd"))

# Named groups and backreferences to them, by name and by number.
repeated_years = re.findall(r"(?P<y>\d{4})-(?P=y)", "2020-2020 2021-2022 2023-2023")
doubled = re.sub(r"(?P<c>\w)(?P=c)", r"[\g<c>]", "aabbcd")
pair = re.match(r"(?P<first>\w+) (\w+) (?P<last>\w+)", "Jane Q Doe")
named = (pair.groupdict(), pair["last"], pair.group("first", 2), pair.groups())
# A tokenizer names its token kinds by group; lastindex is the group closed last.
tokens = [(m.lastgroup, m.group()) for m in re.finditer(r"(?P<num>\d+)|(?P<word>[a-z]+)|(?P<op>[+*])", "x+12*y")]
last = [re.match(p, s).lastindex for p, s in [(r"(a)(b)", "ab"), (r"((a)b)", "ab"), (r"(a)()", "a"), (r"(a())", "a"), (r"(a)|b", "b")]]
by_number = re.findall(r"(?P<open>['\"])(.*?)\1", "say 'hi' and \"bye\"")

# Flags: inline ones count, re.UNICODE is implied, the repr names them.
patterns = [re.compile("a"), re.compile("(?s)one.two", re.M), re.compile("(?i)err"),
            re.compile("x", re.I | re.A), re.compile("(?x) a b # c"),
            re.compile(r" \d+  # digits", re.VERBOSE), re.compile("u", re.U)]
flags = [(p.flags, repr(p)) for p in patterns]
verbose_match = re.compile(r" (\d+) [ ] (\w+)  # a number, a space, a word", re.X).match("42 apples").groups()

{"dashed": dashed, "starred": starred, "upto_three": upto_three, "spans": spans,
 "at_word_edges": at_word_edges, "around_digits": around_digits, "before_b": before_b,
 "every_gap": every_gap, "ends": ends, "alternatives": alternatives, "counted": counted, "repeated_years": repeated_years, "doubled": doubled,
 "named": named, "tokens": tokens, "last": last, "by_number": by_number, "flags": flags, "verbose_match": verbose_match}
