PRELUDE = ""
S = ["'hello world'", "'  Mixed Case  '", "'a,b,,c'", "'ß straße'", "'ǅungla'", "'İstanbul'", "'tab\\tsep\\tx'", "'line1\\r\\nline2\\rline3\\n'",
     "''", "'123'", "'١٢٣'", "'½'", "'x²'", "'Ⅻ'", "'abc\\x00def'", "'\\u2028a\\x1cb\\x85c'", "'ﬁne'", "'ŉ'", "'ΣΑΣ σας'", "'a_b-c d'",
     "'hello_World-foo bar'", "'  '", "'\\u3000x\\u00a0y'", "'Ab12'", "'aaa'", "'mississippi'", "'日本語テキスト'", "'e\\u0301'", "'ÅÉÎ'",
     "'{0}-{1}'", "'%s=%d'", "'3.14'", "'-0'", "'+42'", "'1_000'", "' 12 '", "'0x1f'", "'1e5'", "'inf'", "'nan'"]
ARG = ["'a'", "'s'", "'ss'", "','", "' '", "''", "'l'", "'ab'", "'is'", "'x'", "'Σ'", "'\\n'"]
N = ["0", "1", "2", "-1", "5", "20", "3", "-3", "None"]
M = ["upper()", "lower()", "casefold()", "title()", "capitalize()", "swapcase()", "strip()", "lstrip({a})", "rstrip({a})", "strip({a})",
     "split()", "split({a})", "split({a}, {n})", "rsplit({a}, {n})", "rsplit(None, {n})", "splitlines()", "splitlines(True)", "partition({a})",
     "rpartition({a})", "find({a})", "rfind({a})", "find({a}, {n})", "find({a}, {n}, {n})", "index({a})", "rindex({a})", "count({a})",
     "count({a}, {n}, {n})", "replace({a}, {b})", "replace({a}, {b}, {n})", "startswith({a})", "endswith({a})", "startswith(({a}, {b}))",
     "startswith({a}, {n})", "endswith({a}, {n}, {n})", "isalpha()", "isdigit()", "isdecimal()", "isnumeric()", "isalnum()", "isspace()",
     "isupper()", "islower()", "istitle()", "isidentifier()", "isprintable()", "isascii()", "center({n})", "center({n}, {c})",
     "ljust({n}, {c})", "rjust({n})", "zfill({n})", "expandtabs()", "expandtabs({n})", "encode()", "encode('ascii', 'replace')",
     "encode('latin-1', 'ignore')", "encode('utf-16')", "encode('ascii', 'xmlcharrefreplace')", "encode('ascii', 'backslashreplace')",
     "removeprefix({a})", "removesuffix({a})", "join([{a}, {b}])", "format(1, 2)", "translate({{97: 'A', 98: None}})",
     "translate(str.maketrans({a}, {b2}))", "translate(str.maketrans('ab', 'xy', 'c'))", "__mod__((1, 2))", "__contains__({a})",
     "__getitem__(slice({n}, {n}, {n}))", "__mul__({n})", "__len__()", "__hash__() == hash({s})", "__eq__({a})", "__lt__({a})",
     "encode('utf-8', 'surrogateescape')", "format_map({{}})"]
def expr(rng):
    k = rng.choice
    s = k(S); a = k(ARG)
    m = k(M).format(a=a, b=k(ARG), n=k(N), c=k(["'*'", "'ab'", "' '", "'é'"]), b2=a, s=s)
    form = k(["{s}.{m}", "str.{m0}", "list(map(ord, {s}.{m}))" if "upper" in m else "{s}.{m}", "[x.{m} for x in ({s}, {s2})]"])
    if form == "str.{m0}":
        return f"str.{m.replace('(', '(' + s + ', ', 1).replace(', )', ')')}"
    return form.format(s=s, m=m, s2=k(S))
