"""Module-heavy expressions for the generated differential check:
`re` (patterns, flags, replacement templates, match objects), `collections`
(Counter, defaultdict, deque, namedtuple), `datetime`, `itertools`,
`functools`, `bisect`, `decimal` and `json`, as models use them on tool
results. `generate.py --modules` writes scripts of these.

Stop 26 found with them: the CPython guest lacked the modules the stdlib
imports on first use (`_strptime`, every codec but UTF-8), monty's `re`
took replacement templates loosely (a reference to a missing group gave
`''`, `\\n` stayed two characters) and lacked `Pattern.groups` and
`Match.expand`, methods of these types monty lacks were not routed,
and some TypeError and JSONDecodeError messages were monty's own. Stop 28
found with them that monty's `re` read patterns with `fancy_regex`'s
syntax, not Python's (`$`, `\\Z`, `\\w`, error messages), lost empty matches
after non-empty ones, and left inline flags out of `Pattern.flags`.
"""

R = None  # the generator's Random, set by `generate.py`


def pick(xs):
    return R.choice(xs)


# Left out unless `--all`: what the scan sends to CPython anyway
# (`cmp_to_key`). Stop 28 made the rest agree (invalid patterns,
# `Decimal.as_tuple()`'s type, strptime's leftover text) and gave monty
# `re.subn`; stop 29 `json.dumps(default=)`.
KNOWN = ["cmp_to_key"]


TEXTS = [
    "'Order #123 shipped to alice@example.com on 2024-03-05'",
    "'ERROR 2024-01-02 10:11:12 disk full; WARN cpu 93%; ERROR net down'",
    "'The quick brown fox jumps over the lazy dog'",
    "'a1b22c333'", "''", "'  spaced   out  words '", "'x=1, y=22, z=-3'",
    "'Café Ünïcode naïve 日本 ２０２４'", "'line one\\nline two\\n\\nline four'",
    "'CamelCaseStringHere'", "'snake_case_here_too'", "'price: $1,234.56 and $7.5'",
    "'tel: +1 (555) 123-4567, alt 555.987.6543'", "'<b>bold</b> and <i>it</i>'",
    "'aaa bbb aaa ccc aaa'", "'key1=val1;key2=val2;;key3='", "'A-B_C d.e'",
]
PATTERNS = [
    r"r'\d+'", r"r'\w+'", r"r'[A-Z][a-z]+'", r"r'(\w+)@(\w+)\.com'", r"r'\s+'", r"r'^\w+'", r"r'\w+$'",
    r"r'\b\w{3}\b'", r"r'(?P<y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)'", r"r'(\w+)=(\w*)'", r"r'.*?a'", r"r'a+'", r"r'(a)(b)?'",
    r"r'[aeiou]'", r"r'(?i)error'", r"r'ERROR|WARN'", r"r'\$([\d,]+(?:\.\d+)?)'", r"r'<(\w+)>'", r"r'<[^>]+>'",
    r"r'(?<=#)\d+'", r"r'\d+(?=%)'", r"r'[^\w\s]'", r"r'(\d)(\d)?'", r"r'x*'", r"r'\d{3}'", r"r'(?:ab)+'",
    r"r'[.\-_ ]'", r"r'([a-z])([A-Z])'", r"r'\W+'", r"r'(\w)\1'", r"r'^$'", r"r'(?m)^line'", r"r'(?s)one.two'",
    r"r'[\u4e00-\u9fff]+'", r"r'\D+'", r"r'\S+'", r"r'(a|b)*'", r"r'('", r"r'[z-a]'", r"r'\p{L}'", r"r'a{2,}'",
]
FLAGS = ["", ", re.I", ", re.M", ", re.S", ", re.I | re.M", ", flags=re.IGNORECASE"]
REPLS = [r"r'#'", r"r'\1'", r"r'<\g<0>>'", r"r'\2-\1'", r"''", r"r'\g<1>_\g<2>'", r"'-'", r"r'\\'", r"r'\n'", r"r'\g<y>'"]

LISTS = ["[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]", "['a', 'b', 'a', 'c', 'b', 'a']", "[]", "['x']", "[1, 2, 3]", "['apple', 'banana', 'avocado', 'blueberry', 'cherry']",
         "list('mississippi')", "[('a', 1), ('b', 2), ('a', 3)]", "[0, -1, 2, -3, 4]", "['ERROR', 'WARN', 'ERROR', 'INFO', 'ERROR', 'WARN']"]
DATES = ["date(2024, 1, 31)", "date(2024, 2, 29)", "date(2023, 12, 31)", "date(2000, 1, 1)", "date(1999, 12, 31)", "date.fromisoformat('2024-03-10')"]
DTS = ["datetime(2024, 3, 5, 14, 30)", "datetime(2024, 1, 1, 0, 0, 0, 500000)", "datetime(2023, 12, 31, 23, 59, 59)",
       "datetime.fromisoformat('2024-03-10T08:15:00')", "datetime(2024, 6, 1, 12, tzinfo=timezone.utc)", "datetime.fromisoformat('2024-03-10T08:15:00+02:00')",
       "datetime(2024, 3, 5, 14, 30, 15, 123)"]
TDS = ["timedelta(days=1)", "timedelta(hours=36)", "timedelta(minutes=-90)", "timedelta(seconds=3661)", "timedelta(weeks=2, days=3)",
       "timedelta(days=-1, seconds=5)", "timedelta(milliseconds=1500)", "timedelta(0)", "timedelta(days=400, hours=5, microseconds=7)"]
FMTS = ["'%Y-%m-%d'", "'%d/%m/%y %H:%M'", "'%A %B %d, %Y'", "'%a %b %e'", "'%j %U %W'", "'%I:%M %p'", "'%Y-%m-%dT%H:%M:%S.%f'", "'%s'", "'%%Y'", "'%z %Z'", "'%c'", "'%x %X'", "'%G-W%V-%u'"]


def re_expr():
    t, p, f = pick(TEXTS), pick(PATTERNS), pick(FLAGS)
    forms = [
        lambda: f"re.findall({p}, {t}{f})", lambda: f"re.search({p}, {t}{f})", lambda: f"re.match({p}, {t}{f})",
        lambda: f"re.fullmatch({p}, {t}{f})", lambda: f"re.sub({p}, {pick(REPLS)}, {t}{f})", lambda: f"re.sub({p}, {pick(REPLS)}, {t}, count={R.randint(0, 2)})",
        lambda: f"re.split({p}, {t}{f})", lambda: f"re.split({p}, {t}, maxsplit={R.randint(0, 2)})", lambda: f"re.subn({p}, {pick(REPLS)}, {t})",
        lambda: f"[m.group() for m in re.finditer({p}, {t}{f})]", lambda: f"[m.span() for m in re.finditer({p}, {t}{f})]",
        lambda: f"(lambda m: m and (m.group(0), m.groups(), m.start(), m.end(), m.span(), m.lastindex))(re.search({p}, {t}{f}))",
        lambda: f"(lambda m: m and (m.groupdict(), m.group({R.randint(0, 2)}), m[0]))(re.search({p}, {t}{f}))",
        lambda: f"re.compile({p}{f}).findall({t})", lambda: f"re.compile({p}).pattern", lambda: f"re.escape({t})",
        lambda: f"re.compile({p}{f}).sub({pick(REPLS)}, {t})", lambda: f"bool(re.search({p}, {t}))", lambda: f"re.findall({p}, {t})[:{R.randint(0, 3)}]",
        lambda: f"re.compile({p}).groups", lambda: f"re.compile({p}).groupindex", lambda: f"re.compile({p}{f})",
        lambda: f"re.search({p}, {t}).expand(r'[\\g<0>]')",
    ]
    return pick(forms)()


def coll_expr():
    l, l2 = pick(LISTS), pick(LISTS)
    forms = [
        lambda: f"Counter({l})", lambda: f"Counter({l}).most_common({R.randint(0, 3)})", lambda: f"Counter({l}).most_common()",
        lambda: f"Counter({l})[{pick(['1', repr('a'), repr('zz'), '5'])}]", lambda: f"Counter({l}) + Counter({l2})", lambda: f"Counter({l}) - Counter({l2})",
        lambda: f"Counter({l}) | Counter({l2})", lambda: f"Counter({l}) & Counter({l2})", lambda: f"sorted(Counter({l}).elements())", lambda: f"Counter({l}).total()",
        lambda: f"dict(Counter({l}))", lambda: f"list(Counter({l}).items())", lambda: f"Counter(word for word in {pick(TEXTS)}.split())",
        lambda: f"Counter({pick(TEXTS)}).most_common(3)", lambda: f"(lambda c: (c.update({l2}), c)[1])(Counter({l}))", lambda: f"(lambda c: (c.subtract({l2}), c)[1])(Counter({l}))",
        lambda: f"Counter(a=3, b=-1)", lambda: f"+Counter(a=3, b=-1, c=0)", lambda: f"Counter({{'x': 2, 'y': 2, 'z': 5}}).most_common(2)", lambda: f"str(Counter({l}))",
        lambda: f"(lambda d: [d[k].append(v) for k, v in {pick(['[(1, 2), (1, 3), (2, 4)]', '[]', '[(0, 0)]'])}] and d)(defaultdict(list))",
        lambda: f"(lambda d: ([d.update({{x: d[x] + 1}}) for x in {l}], d)[1])(defaultdict(int))", lambda: f"defaultdict(list)", lambda: f"defaultdict(int, {{'a': 1}})",
        lambda: f"dict(defaultdict(list, {{'k': [1]}}))", lambda: f"defaultdict(lambda: 'n/a')['missing']", lambda: f"(lambda d: (d['x'], dict(d), len(d)))(defaultdict(int))",
        lambda: f"deque({l})", lambda: f"deque({l}, maxlen={R.randint(0, 3)})", lambda: f"(lambda q: (q.appendleft(0), q.rotate({R.randint(-3, 3)}), q)[2])(deque({l}))",
        lambda: f"(lambda q: (q.popleft(), q.pop(), list(q)))(deque({l}))", lambda: f"(lambda q: (q.extend({l2}), q)[1])(deque({l}, maxlen=4))", lambda: f"list(reversed(deque({l})))",
        lambda: f"namedtuple('Point', ['x', 'y'])(1, 2)", lambda: f"namedtuple('P', 'x y z')(1, 'b', [3])._asdict()", lambda: f"namedtuple('P', 'x y')(1, 2)._replace(y=5)",
        lambda: f"namedtuple('P', 'x y', defaults=[0])(7)", lambda: f"namedtuple('P', 'x y')._fields", lambda: f"tuple(namedtuple('P', 'x y')(3, 4))",
        lambda: f"namedtuple('P', 'x y')(1, 2) == (1, 2)", lambda: f"namedtuple('P', 'x y')(x=1, y=2).x + 1",
    ]
    return pick(forms)()


def dt_expr():
    d, dt, td, fm = pick(DATES), pick(DTS), pick(TDS), pick(FMTS)
    forms = [
        lambda: f"{d} + {td}", lambda: f"{d} - {pick(DATES)}", lambda: f"({d} - {pick(DATES)}).days", lambda: f"{d}.isoformat()", lambda: f"str({d})",
        lambda: f"{d}.strftime({fm})", lambda: f"{d}.weekday()", lambda: f"{d}.isoweekday()", lambda: f"{d}.isocalendar()", lambda: f"{d}.replace(day=1)",
        lambda: f"{d}.toordinal()", lambda: f"{d}.timetuple().tm_yday", lambda: f"{d} < {pick(DATES)}", lambda: f"{d}.year * 100 + {d}.month",
        lambda: f"{dt}", lambda: f"str({dt})", lambda: f"{dt}.isoformat()", lambda: f"{dt}.isoformat(sep=' ', timespec='minutes')", lambda: f"{dt}.strftime({fm})",
        lambda: f"{dt} + {td}", lambda: f"{dt} - {td}", lambda: f"{dt}.date()", lambda: f"{dt}.time()", lambda: f"{dt}.replace(hour=0, minute=0)",
        lambda: f"({dt} - {pick(DTS)})", lambda: f"({dt} - {pick(DTS)}).total_seconds()", lambda: f"{dt}.timestamp()", lambda: f"{dt}.tzinfo",
        lambda: f"{dt}.astimezone(timezone.utc)", lambda: f"{dt}.utcoffset()", lambda: f"datetime.strptime('2024-03-05 14:30', '%Y-%m-%d %H:%M')",
        lambda: f"datetime.strptime({pick(['12/31/99', '2024-13-01', '1/2/2024'])!r}, {pick(['%m/%d/%y', '%Y-%m-%d', '%d/%m/%Y'])!r})",
        lambda: f"{td}", lambda: f"str({td})", lambda: f"{td}.total_seconds()", lambda: f"{td} * {pick(['2', '0.5', '-1', '3'])}", lambda: f"{td} / {pick(TDS)}",
        lambda: f"{td} // {pick(['2', '3', 'timedelta(hours=1)'])}", lambda: f"({td}).days, ({td}).seconds, ({td}).microseconds", lambda: f"abs({td})", lambda: f"-{td}",
        lambda: f"{td} + {pick(TDS)}", lambda: f"{td} < {pick(TDS)}", lambda: f"divmod({td}, timedelta(hours=1))", lambda: f"{td} % timedelta(hours=5)",
        lambda: f"sorted([{pick(DATES)}, {pick(DATES)}, {pick(DATES)}])", lambda: f"max({pick(DTS)}, {pick(DTS)})", lambda: f"date(2024, {R.randint(0, 13)}, {R.randint(0, 32)})",
        lambda: f"timezone(timedelta(hours={R.randint(-12, 14)}))", lambda: f"{dt}.weekday()", lambda: f"repr({td})", lambda: f"{d}.ctime()",
        lambda: f"datetime.combine({d}, time(9, 30))", lambda: f"time(9, 30, 5).isoformat()", lambda: f"time(23, 5)", lambda: f"str(time(0, 0, 0, 250))",
    ]
    return pick(forms)()


def it_expr():
    l, l2 = pick(LISTS), pick(LISTS)
    forms = [
        lambda: f"list(itertools.chain({l}, {l2}))", lambda: f"list(itertools.chain.from_iterable([{l}, {l2}]))",
        lambda: f"[(k, list(g)) for k, g in itertools.groupby({l})]", lambda: f"[(k, len(list(g))) for k, g in itertools.groupby(sorted({l}))]",
        lambda: f"list(itertools.islice({l}, {R.randint(0, 4)}))", lambda: f"list(itertools.islice({l}, 1, None, 2))", lambda: f"list(itertools.product('ab', repeat=2))",
        lambda: f"list(itertools.permutations({l}[:3]))", lambda: f"list(itertools.combinations({l}[:4], 2))", lambda: f"list(itertools.combinations_with_replacement('abc', 2))",
        lambda: f"list(itertools.accumulate({pick(['[1, 2, 3, 4]', '[]', '[5, -1, 3]'])}))", lambda: f"list(itertools.accumulate([3, 1, 4, 1, 5], max))",
        lambda: f"list(itertools.accumulate([1, 2, 3], initial=100))", lambda: f"list(itertools.zip_longest({l}, {l2}, fillvalue='-'))",
        lambda: f"list(itertools.pairwise({l}))", lambda: f"list(itertools.batched({l}, {R.randint(1, 4)}))", lambda: f"list(itertools.starmap(pow, [(2, 3), (3, 2)]))",
        lambda: f"list(itertools.takewhile(lambda x: x != 'b' and x != 5, {l}))", lambda: f"list(itertools.dropwhile(lambda x: x != 'b' and x != 5, {l}))",
        lambda: f"list(itertools.compress({l}, [1, 0, 1, 1, 0]))", lambda: f"list(itertools.islice(itertools.cycle('ab'), 5))", lambda: f"list(itertools.repeat('z', 3))",
        lambda: f"list(zip(itertools.count(10, 5), 'abc'))", lambda: f"list(itertools.filterfalse(None, [0, 1, '', 'a', None]))",
        lambda: f"functools.reduce(lambda a, b: a * b, {pick(['[1, 2, 3, 4]', '[]', '[7]'])})", lambda: f"functools.reduce(lambda a, b: a + b, {l}, {pick(['0', repr(''), '[]'])})",
        lambda: f"functools.partial(int, base=2)('1011')", lambda: f"sorted({l}, key=functools.cmp_to_key(lambda a, b: (a > b) - (a < b)))",
        lambda: f"(lambda f: [f(x) for x in range(5)])(functools.lru_cache(maxsize=None)(lambda n: n * n))", lambda: f"list(enumerate({l}, start={R.randint(-1, 3)}))",
        lambda: f"list(zip({l}, {l2}, strict=True))", lambda: f"max({l}, default=None)", lambda: f"min({l}, key=str, default='none')", lambda: f"sum({pick(['[[1], [2, 3]]', '[(1,), (2,)]'])}, {pick(['[]', '()'])})",
        lambda: f"list(map(lambda a, b: a * b, [1, 2, 3], [4, 5]))", lambda: f"sorted({l}, key=lambda x: (str(type(x)), x), reverse=True)", lambda: f"list(reversed(range(0, 10, 3)))",
        lambda: f"bisect.bisect_left(sorted({l}), {pick(['3', repr('b'), '0'])})", lambda: f"(lambda s: (bisect.insort(s, 4), s)[1])(sorted({pick(['[1, 5, 9]', '[]', '[4, 4]'])}))",
    ]
    return pick(forms)()


def dec_expr():
    ds = ["Decimal('1.10')", "Decimal('2.205')", "Decimal('0.1')", "Decimal(3)", "Decimal('-0.5')", "Decimal('1e3')", "Decimal(0.1)", "Decimal('100.00')", "Decimal('NaN')"]
    a, b = pick(ds), pick(ds)
    forms = [lambda: f"{a} + {b}", lambda: f"{a} * {b}", lambda: f"{a} / {b}", lambda: f"{a} - {b}", lambda: f"str({a})", lambda: f"{a}.quantize(Decimal('0.01'))",
             lambda: f"{a}.quantize(Decimal('1'), rounding=ROUND_HALF_UP)", lambda: f"float({a})", lambda: f"round({a}, 1)", lambda: f"{a} < {b}", lambda: f"sum([{a}, {b}])",
             lambda: f"{a}.normalize()", lambda: f"int({a})", lambda: f"format({a}, '.2f')", lambda: f"{a} == {b}", lambda: f"{a} ** 2", lambda: f"{a}.as_tuple()", lambda: f"-{a}"]
    return pick(forms)()


def json_expr():
    objs = ["{'a': 1, 'b': [1, 2.5, None, True], 'c': {'d': 'é'}}", "[1e100, 1.0, -0.0, 123456789012345678901234567890]", "{'z': 1, 'a': 2, 3: 'int key', None: 4}",
            "(1, 2)", "{'k': (1, 'x')}", "'\\u2028 \\x00 \\\\ \"q\"'", "(float('inf') * 0)", "{True: 1, 1.5: 2}", "[[], {}, '']"]
    texts = ["'{\"a\": 1, \"b\": [1, 2.0, 1e400, null]}'", "'[1, 2,]'", "'NaN'", "'{\"a\": 1, \"a\": 2}'", "'  \"x\"  '", "'123456789012345678901234567890'", "'1.0e2'",
             "'{\"n\": -0}'", "'\"\\\\ud83d\\\\ude00\"'", "'{'", "'[1] x'", "'tru'", "'{\"a\":{\"b\":[1,{\"c\":2}]}}'"]
    forms = [lambda: f"json.dumps({pick(objs)})", lambda: f"json.dumps({pick(objs)}, sort_keys={pick(['True', 'False'])}, indent={pick(['None', '1', '4', repr(chr(9))])})",
             lambda: f"json.dumps({pick(objs)}, ensure_ascii=False)", lambda: f"json.dumps({pick(objs)}, default=str)", lambda: f"json.loads({pick(texts)})",
             lambda: f"json.dumps({pick(objs)}, separators=(',', ':'), allow_nan={pick(['True', 'False'])})", lambda: f"json.dumps({pick(objs)}, skipkeys=True)"]
    return pick(forms)()


def bytes_expr():
    bs = ["b''", "b'hi'", "b'\\x00\\xff\\x10'", "bytes([104, 105])", "bytes(range(5))", "'é'.encode()", "b'a,b,,c'", "bytes(3)", "b'  pad  '", "b'ABC def'"]
    ints = ["[104, 105, 33]", "range(3)", "[256]", "[-1]", "['a']", "(x * 2 for x in range(4))", "{1: 2}", "[True, 7]", "[]", "2.5", "None", "5"]
    a, b = pick(bs), pick(bs)
    forms = [lambda: f"bytes({pick(ints)})", lambda: f"list({a})", lambda: f"{a} + {b}", lambda: f"{a}.decode({pick(['', repr('utf-8'), repr('latin-1'), repr('ascii')])})",
             lambda: f"{a}.split({pick(['', repr(b','), 'None'])})", lambda: f"{a}.upper()", lambda: f"{a}.strip()", lambda: f"{a}.replace(b'a', b'xy')", lambda: f"{a}.find(b'i')",
             lambda: f"{a}[{R.randint(-3, 3)}]", lambda: f"{a}[1:]", lambda: f"len({a})", lambda: f"{a} * {R.randint(0, 3)}", lambda: f"{a}.startswith(b'h')",
             lambda: f"b'-'.join([{a}, {b}])", lambda: f"sum({a}) % 256", lambda: f"{a} < {b}", lambda: f"{a}.count(b'a')", lambda: f"bytes({a})", lambda: f"{a} == {b}",
             lambda: f"int.from_bytes({a}, 'big')", lambda: f"str({a})", lambda: f"{a}.isalpha()", lambda: f"bytes(c ^ 32 for c in {a})"]
    return pick(forms)()


def callback_expr():
    texts = ["'a1b22c333'", "'Hello big World'", "''", "'x-y_z'", "'2024-05-01 and 2025-12-31'"]
    t = pick(texts)
    fns = ["lambda m: m.group().upper()", "lambda m: str(len(m.group()))", "lambda m: None", "lambda m: m.group()[::-1]", "lambda m: 5", "lambda m: f'<{m.start()}>'"]
    pats = ["r'\\d+'", "r'[a-z]+'", "r'(\\w)(\\w)?'", "''", "r'(?P<y>\\d{4})-(?P<m>\\d\\d)'"]
    objs = ["[date(2024, 1, 2), Decimal('1.5')]", "{'when': datetime(2024, 5, 1, 9, 30), 'n': 1}", "[b'x', timedelta(days=2)]", "{'s': {1, 2}}" if False else "{'t': time(8, 5)}"]
    defaults = ["str", "repr", "lambda o: o.isoformat()", "lambda o: [o]", "lambda o: None", "float"]
    forms = [lambda: f"re.sub({pick(pats)}, {pick(fns)}, {t})", lambda: f"re.subn({pick(pats)}, {pick(fns)}, {t}, count={R.randint(0, 2)})",
             lambda: f"re.compile({pick(pats)}).sub({pick(fns)}, {t})", lambda: f"json.dumps({pick(objs)}, default={pick(defaults)})",
             lambda: f"json.dumps({pick(objs)}, default={pick(defaults)}, sort_keys=True, indent=1)"]
    return pick(forms)()


def text_expr():
    ss = ["'a,b,,c'", "'  Hello World  '", "'x\\ty'", "'line1\\nline2\\r\\nline3'", "'ǅungla straße'", "'0042'", "'-17'", "'ff'", "'0x1F'", "'1_000'", "''", "'a-b_c d'", "'İstanbul'"]
    a = pick(ss)
    nums = ["3.14159", "-2.5", "1234567.891", "0.000123", "1e21", "42", "-7", "2**40", "True", "(float('inf') * 0)"]
    specs = ["'>10'", "'<8.2f'", "'^9'", "'+,d'", "'08.3f'", "'.3e'", "'.2%'", "'x'", "'#o'", "'_b'", "',.2f'", "'g'", "'.0f'", "'=+8'", "'*^12,'", "'n'", "'c'", "'10.4s'"]
    forms = [lambda: f"{a}.split({pick(['', repr(','), 'None'])}, {R.randint(-1, 2)})", lambda: f"{a}.rsplit(None, 1)", lambda: f"{a}.partition({pick([repr(','), repr(' '), repr('zz')])})",
             lambda: f"{a}.center({R.randint(0, 20)}, {pick([repr('*'), repr('-')])})", lambda: f"{a}.zfill({R.randint(0, 8)})", lambda: f"{a}.expandtabs({R.randint(0, 8)})",
             lambda: f"{a}.title()", lambda: f"{a}.capitalize()", lambda: f"{a}.swapcase()", lambda: f"{a}.casefold()", lambda: f"{a}.splitlines({pick(['', 'True'])})",
             lambda: f"{a}.removeprefix({pick([repr('a'), repr('  '), repr('')])})", lambda: f"{a}.strip({pick(['', repr(' H'), repr('ac')])})", lambda: f"{a}.isdigit()",
             lambda: f"{a}.isnumeric()", lambda: f"{a}.isidentifier()", lambda: f"{a}.istitle()", lambda: f"{a}.ljust(12, '.')", lambda: f"{a}.rfind('l')", lambda: f"{a}.count('')",
             lambda: f"int({a}, {pick(['0', '10', '16', '2', '36'])})", lambda: f"int({a})", lambda: f"float({a})", lambda: f"format({pick(nums)}, {pick(specs)})",
             lambda: f"'{{:{pick(['>6', '<6', '^6', ''])}}}|{{!r}}|{{0}}'.format({a}, {pick(nums)})", lambda: f"f'{{{pick(nums)}:{pick(specs)[1:-1]}}}'",
             lambda: f"'%s|%5.1f|%-4d|%x|%r' % ({a}, {pick(nums)}, 7, 255, {a})", lambda: f"{a}.encode({pick([repr('utf-8'), repr('ascii'), repr('latin-1')])}, 'replace')",
             lambda: f"sorted({a}.split(), key=str.lower)" if False else f"sorted({a}.split(), key=len)", lambda: f"{a}[::-1].upper()", lambda: f"{a}.replace(' ', '', {R.randint(-1, 2)})"]
    return pick(forms)()


FAMILIES = [re_expr, coll_expr, dt_expr, it_expr, dec_expr, json_expr, bytes_expr, callback_expr, text_expr]


def script(all_forms=False):
    lines = ["import re", "import json", "import itertools", "import functools", "import bisect",
             "from collections import Counter, defaultdict, deque, namedtuple", "from datetime import date, datetime, time, timedelta, timezone",
             "from decimal import Decimal, ROUND_HALF_UP", "", "results = []"]
    fam = [pick(FAMILIES) for _ in range(3)]
    for n in range(15):
        expr = pick(fam)()
        for _ in range(50):
            if all_forms or not any(k in expr for k in KNOWN):
                break
            expr = pick(fam)()
        else:
            expr = "0"
        lines += ["try:", f"    v = {expr}", "    results.append(repr(v))", f"    print({n}, type(v).__name__, repr(v), str(v))",
                  "except Exception as e:", f"    print({n}, 'raised', type(e).__name__, str(e))"]
    lines.append("results")
    return "\n".join(lines) + "\n"


