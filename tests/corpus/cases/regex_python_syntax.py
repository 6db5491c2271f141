import re

# Lines read from a file keep their newline: Python's `$` matches before it.
lines = ["order 1234\n", "order 99x\n", "total 7\n"]
ids = [m.group(1) for line in lines if (m := re.match(r"order (\d+)$", line))]
digit_at_end = [bool(re.search(r"\d$", line)) for line in lines]
digit_at_very_end = [bool(re.search(r"\d\Z", line)) for line in lines]

# \s includes the information separators, \w is str.isalnum() or "_".
fields = re.split(r"\s+", "a\x1cb c\x1fd")
words = re.findall(r"\w+", "x² + y³ = naïve_total")
ascii_words = re.findall(r"\w+", "naïve café", re.ASCII)

# Verbose patterns keep the spaces inside classes.
phone = re.compile(r"""
    (\d{3})   # area
    [ -]?     # a space or a dash
    (\d{4})   # number
""", re.VERBOSE)
numbers = [phone.search(s).groups() for s in ["555 1234", "555-1234", "5551234"]]

# Brackets and ampersands inside a class are characters, {,n} is a repeat.
odd = re.findall(r"[&~|]+", "a&&b~~c||d")
upto = re.findall(r"x{,2}", "xxx")
octal = re.findall(r"\101\x42\u0043", "ABC")

# Invalid patterns fail as in CPython, with its messages.
problems = {}
for pattern in [r"(", r"[z-a]", r"\p{L}", r"a**", r"?", r"a)", r"[a", r"(?P<1>a)", r"(a)\2",
                r"a{3,1}", r"x(?i)", r"\q", r"(?<=a+)b", r"\h", r"(?<x>a)", r"\k<x>"]:
    try:
        re.compile(pattern)
        problems[pattern] = "ok"
    except re.error as e:
        problems[pattern] = str(e)

{"ids": ids, "digit_at_end": digit_at_end, "digit_at_very_end": digit_at_very_end, "fields": fields, "words": words, "ascii_words": ascii_words,
 "numbers": numbers, "odd": odd, "upto": upto, "octal": octal, "problems": problems}
