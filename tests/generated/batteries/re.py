PRELUDE = """import re
def M(m):
    return m if m is None else (m, m.groups(), m.groupdict(), m.span(), m.lastindex, m.lastgroup, m.group(0), m.start(), m.end())"""
P = ["r'(a)(b)?'", "r'(?P<w>\\w+)\\s(?P<n>\\d+)'", "r'\\d+'", "r'a*'", "''", "r'(?i)abc'", "r'^\\w+$'", "r'(\\w)\\1'", "r'(?P<x>a)(?P=x)'",
     "r'a|b'", "r'(?<=a)b'", "r'(?<!a)b'", "r'a(?=b)'", "r'a(?!b)'", "r'.+?'", "r'a{2,3}'", "r'[^a-c]+'", "r'\\bfoo\\b'", "r'(?:ab)+'",
     "r'(a|(b))+'", "r'\\s*'", "r'x*'", "r'(\\d+)-(\\d+)'", "r'[é\\w]+'", "r'(?x) a  b # c'", "r'\\Aab\\Z'", "r'(?m)^\\w'", "r'(?s).+'",
     "r'\\W'", "r'[.]'", "r'a++'", "r'(?>a+)b'", "r'(a)|(b)'", "r'(?P<first>\\w)(?P<rest>\\w*)'", "r'$'", "r'\\b'", "r'(?<w>x)'",
     "r'[\\d-]+'", "r'(\\w+)@(\\w+)\\.com'", "r'.'", "r'^'", "r'\\n'", "r'(?i:A)b'", "r'[A-Z]'", "r'(?:(a)|b)*'", "r'a??'", "r'\\u00e9'",
     "r'\\x41'", "r'[[:alpha:]]'", "r'\\0'", "r'\\S+'", "r'(a)(?(1)b|c)'", "r'ß'", "r'(?a)\\w+'", "r'\\Z'", "r'a{,2}'", "r'{1}'", "r'(?i)[k-s]+'", "r'(?ai)[a-z]+'",
     "r'(?P<w>a)|(?P<n>\\d)'", "r'\\w+' * 3", "r'(?i)σ+'", "r'(?s:.)\\B.'", "r'[^\\W\\d]+'", "r'(?=(\\w\\w))'"]
BAD = ["r'('", "r'[a'", "r'a**'", "r'(?P<1>a)'", "r'\\1'", "r'(?P<n>a)(?P<n>b)'", "r'*a'", "r'a{3,2}'", "r'(?<=a+)b'", "r'\\p'",
       "r'(?z)'", "r'[z-a]'", "r')'", "r'(?P=nope)'", "r'\\x'", "r'\\u12'", "r'a)'", "r'(?P<>a)'", "r'\\g'", "r'(?'", "r'x{2'", "r'(?i'",
       "r'a(?i)b'", "r'[\\w-z]'", "r'\\N{LATIN SMALL LETTER A}'", "r'(?<!a*)b'", "r'\\q'", "r'\\8'"]
S = ["'ab'", "'aab abb'", "'foo 12 bar 345'", "''", "'AbC abc'", "'line1\\nline2\\nLINE3'", "'ééa'", "'a-b_c d'", "'xaxbxc'", "'12-34 56-78'",
     "'aaaa'", "'Straße STRASSE'", "'ﬁ'", "'İi k K'", "'a\\nb\\n'", "'joe@mail.com, ann@x.com'", "'foo.bar foo'", "'b'", "'ba'", "'x'",
     "'ab' * 3", "'  lead  trail  '", "'A1b2C3'", "'\\t\\r\\x0b'", "'٣4'", "'a' * 60", "'ſ K ǅ σς ΣΑΣ'"]
F = ["0", "re.I", "re.M", "re.S", "re.X", "re.A", "re.I | re.M", "re.S | re.A", "re.I | re.A", "re.U", "re.NOFLAG", "re.IGNORECASE | re.DOTALL"]
R = ["'-'", "r'<\\1>'", "r'\\g<0>'", "r'[\\g<1>]'", "lambda m: m.group(0).upper()", "lambda m: str(m.start())", "''", "r'\\2'",
     "r'\\n'", "lambda m: repr(m.groups())", "r'\\\\'", "r'\\g<w>'", "r'\\9'", "r'\\g<x'", "lambda m: None", "lambda m: 1", "r'\\q'",
     "'$1'", "r'\\g<-1>'", "r'\\0'", "r'\\t'", "r'\\g<01>'", "'\\\\'"]
N = ["0", "1", "2", "-1", "5"]
def expr(rng):
    k = rng.choice
    p = k(P) if rng.random() < 0.85 else k(BAD)
    s, f, r, n = k(S), k(F), k(R), k(N)
    return k([
        f"M(re.match({p}, {s}, {f}))", f"M(re.search({p}, {s}, {f}))", f"M(re.fullmatch({p}, {s}, {f}))", f"re.findall({p}, {s}, {f})",
        f"[M(m) for m in re.finditer({p}, {s}, {f})]", f"re.sub({p}, {r}, {s})", f"re.sub({p}, {r}, {s}, count={n}, flags={f})",
        f"re.subn({p}, {r}, {s})", f"re.subn({p}, {r}, {s}, {n})", f"re.split({p}, {s})", f"re.split({p}, {s}, maxsplit={n}, flags={f})",
        f"re.compile({p}, {f})", f"(lambda c: (c.pattern, c.flags, c.groups))(re.compile({p}, {f}))",
        f"M(re.compile({p}, {f}).search({s}))", f"M(re.compile({p}).match({s}))", f"re.compile({p}).findall({s})", f"re.compile({p}, {f}).sub({r}, {s})",
        f"re.escape({s})", f"re.escape({p})", f"re.compile(re.escape({s})).fullmatch({s}) is not None", f"{f}", f"repr({f})", f"int({f})",
        f"(lambda m: m and (m.group(1), m[0], m.start(1), m.end(1), m.span(1)))(re.search({p}, {s}))",
        f"(lambda m: m and (m.groups('d'), m.groupdict('d'), m.group(0, 1)))(re.search({p}, {s}))",
        f"(lambda m: m and m.expand({r}))(re.search({p}, {s}))", f"(lambda m: m and m.group({k(['2', '3', chr(39)+'w'+chr(39), chr(39)+'nope'+chr(39), '-1', '1.0'])}))(re.search({p}, {s}))",
        f"(lambda m: m and (m.re, m.string, m.regs))(re.search({p}, {s}))", f"re.findall(({p}).encode(), ({s}).encode())",
        f"re.compile({p}).split({s}, {n})", f"M(re.compile({p}, {f}).fullmatch({s}))", f"re.compile({p}) == re.compile({p}, {f})",
        f"(lambda m: m and (m.start('w'), m.end('w'), m.span('n'), m['w']))(re.search({p}, {s}))", f"str({f})", f"re.split({p}, {s}, {n})", f"re.findall({p}, {s}, flags={f})", f"re.search({p}, {n})",
        f"re.sub({p}, {r}, {s}, flags={f})", f"re.compile(re.compile({p}), {f})", f"re.compile({p}).subn({r}, {s}, {n})", f"[m.span() for m in re.finditer({p}, {s})]",
    ])
