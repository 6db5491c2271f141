"""Model-like programs for the generated differential check: several blocks
of statements around a tool result (`rows`, a list of dicts; `text`; `nums`),
each wrapped so that an exception is printed and the script goes on, then an
expression answer. `generate.py --programs` writes scripts of these.

The blocks: plain classes (`__init__`, methods, `__repr__`/`__eq__`/
`__contains__`/`__iter__`/`__getitem__`, class attributes), functions and
lambdas called with wrong arguments, closures/`nonlocal`/`global`, star
unpacking and its errors, the walrus, `match` (literal, sequence, mapping and
class patterns, guards), try/except/else/finally ordering and re-raising,
common built-in error messages, f-strings with format specs, `!r` and `=`,
and data handling (`sorted` with keys, comprehensions, `enumerate`, `zip`,
`min`/`max` with `key`/`default`, string methods). Nothing prints a default
object repr (an address), an id, a str hash or a set of strings, nor
`f'{10**12:c}'`: the CPython guest is 32-bit wasm, where that is "Python int
too large to convert to C long" (64-bit CPython and monty: "%c arg not in
range(0x110000)").

By default the blocks avoid what the scan sends to CPython (so that monty
runs most scripts); `--all` adds `__lt__`/`__len__`, `@property`,
`@staticmethod`/`@classmethod`, exception subclasses and `__cause__`/
`__context__`.
"""

import ast

R = None  # the generator's Random, set by `generate.py`
ALL = False  # `--all`, set by `generate.py`


def pick(xs):
    return R.choice(xs)


def some(xs, lo, hi):
    return R.sample(xs, min(len(xs), R.randint(lo, hi)))


NAMES = ["'alice'", "'Bob'", "'carol'", "'dave'", "'Eve'", "'ünal'", "''"]
SCORES = ["91.5", "78", "78.0", "100", "0", "-3.5", "None", "66.25", "1e3"]
TEXTS = ["'Name: Alice; Age: 31; City: Paris'", "'id,name,score\\n1,bob,7\\n2,eve,'", "'ERROR disk full | WARN cpu 93% | ERROR net'", "''",
         "'  The quick brown fox  '", "'a=1&b=2&&c'", "'https://example.com/a/b?q=1'", "'Ünïcode straße İ'", "'x-y_z w'", "'2024-03-05T10:00:00Z'"]
VALUES = ["None", "True", "0", "1", "-7", "2.5", "0.0", "''", "'42'", "'hello'", "[]", "[1]", "[1, 2]", "(1, 2)", "[1, 2, 3, 4]", "('a', 'b', 'c')",
          "{}", "{'type': 'user', 'name': 'ann', 'age': 3}", "{'type': 'order', 'id': 7}", "{'error': 'timeout', 'code': 504}", "{'id': '7', 'type': 'x'}",
          "'abc'", "[None, {'k': 1}]", "{'type': 'user', 'name': 5}", "range(3)", "10**20"]


def prelude():
    rows = []
    for i in range(R.randint(0, 5)):
        r = [f"'id': {i + 1}", f"'name': {pick(NAMES)}", f"'score': {pick(SCORES)}", f"'team': {pick(['red', 'blue', 'green'])!r}", f"'tags': {some(['x', 'y', 'vip'], 0, 2)!r}"]
        if R.random() < 0.25:
            r.pop(R.randint(2, 4))
        if R.random() < 0.3:
            r.append(f"'active': {pick(['True', 'False', 'None'])}")
        rows.append("{" + ", ".join(r) + "}")
    nums = "[" + ", ".join(pick(["3", "1", "4", "-1", "5", "9", "0", "2", "10", "7"]) for _ in range(R.randint(0, 6))) + "]"
    return [f"rows = [{', '.join(rows)}]", f"text = {pick(TEXTS)}", f"nums = {nums}", "log = []"]


def try_each(stmts, show="repr(v)"):
    """Each statement in its own try, then the value `v` it set (an
    expression becomes `v = expr`) or the exception."""
    out = []
    for k, s in enumerate(stmts):
        try:
            ast.parse(s, mode="eval")
            s = f"v = {s}"
        except SyntaxError:
            pass
        sets_v = any(line.startswith(("v =", "*v,")) for line in s.split("\n"))
        out += ["try:"] + ["    " + line for line in s.split("\n")] + [f"    print({k}, {show if sets_v else repr('done')})"]
        out += ["except Exception as e:", f"    print({k}, type(e).__name__, e)"]
    return out


def classes():
    eq = R.random() < 0.6
    lines = ["class Item:", "    unit = 'kg'", "    made = 0", f"    def __init__(self, name, qty=1, *, price={pick(['0.0', '1', 'None'])}):",
             "        self.name = name", "        self.qty = qty", "        self.price = price", "        Item.made += 1", "    def __repr__(self):",
             pick(["        return f'Item({self.name!r}, {self.qty})'", "        return 'Item(%s x%d)' % (self.name, self.qty)"]),
             "    def total(self, discount=0):", "        return self.qty * self.price * (1 - discount)"]
    if eq:
        lines += ["    def __eq__(self, other):", pick(["        return isinstance(other, Item) and (self.name, self.qty) == (other.name, other.qty)",
                                                          "        if not isinstance(other, Item):\n            return NotImplemented\n        return self.name == other.name"])]
    if R.random() < 0.5:
        lines += ["    def __str__(self):", "        return f'{self.qty} {self.unit} of {self.name}'"]
    if ALL and R.random() < 0.5:
        lines += ["    def __lt__(self, other):", "        return (self.qty, self.name) < (other.qty, other.name)", "    def __len__(self):", "        return self.qty"]
    if ALL and R.random() < 0.5:
        lines += ["    @property", "    def label(self):", "        return self.name.upper()", "    @staticmethod", "    def parse(s):",
                  "        n, q = s.split(':')", "        return Item(n, int(q))", "    @classmethod", "    def blank(cls):", "        return cls('?', 0)"]
    lines += [f"items = [Item('apple', 3, price=1.25), Item({pick(NAMES)}), Item('fig', {pick(['0', '2', '-1'])}, price=2)]"]
    ops = ["print(items, Item.made, items[0].unit, Item.unit)", "print(sorted(items, key=lambda i: (i.qty, i.name)), max(items, key=lambda i: i.qty))",
           "print([i.total() for i in items[::2]], items[0].total(0.5), items[0].total(discount=0.1))", "items[0].unit = 'g'\nprint(items[0].unit, Item.unit, items[1].unit)",
           "print(items[0] == Item('apple', 3), items[0] != items[1], items[0] == 'apple', Item('apple', 3) in items, items.index(items[2]))",
           "print(str(items[0]), f'{items[0]}|{items[1]!r}|{items[2]!s:>30}|', f'{items[0]=}', [str(i) for i in items])",
           "print({i.name: i.qty for i in items}, [i.name for i in items if i.qty])", "Item.unit = 'lb'\nprint(items[0].unit, items[2].unit, Item('z').unit)"]
    errs = ["items[0].total(1, 2)", "Item()", "Item('x', 1, 2)", "Item('x', prce=1)", "items[0].missing", "Item.total()", "items[0]()", "items[0] + 1",
            "items[0] < items[1]", "{items[0]: 1}", "len(items[0])", "items[0][0]", "list(items[0])", "Item.total(items[0])", "items[1].total()", "sorted(items)",
            "items[0].name.missing", "Item.made()", "items[0].total(discount='x')"]
    if ALL:
        errs += ["bool(items[2])", "items[0].label", "Item.parse('kiwi:4')", "Item.blank()", "Item.parse('bad')"]
    lines += some(ops, 2, 4)
    lines += try_each(some(errs, 3, 6))
    if R.random() < 0.6:
        box = ["class Basket:", "    def __init__(self, *items):", "        self.items = list(items)", "    def __repr__(self):", "        return f'Basket{tuple(self.items)!r}'",
               "    def add(self, x):", "        self.items.append(x)", "        return self"]
        for m in some(["iter", "contains", "getitem"], 1, 3):
            box += {"iter": ["    def __iter__(self):", "        return iter(self.items)"], "contains": ["    def __contains__(self, x):", "        return x in self.items"],
                    "getitem": ["    def __getitem__(self, i):", "        return self.items[i]"]}[m]
        lines += box + [f"b = Basket({', '.join(some(['1', repr('x'), '2.5', 'None', '[3]', '(4, 5)'], 0, 4))}).add({pick(['7', repr('y')])})"]
        lines += try_each(some(["list(b)", "'x' in b", "7 in b", "b[0]", "b[-1]", "b[1:]", "b[10]", "b['k']", "sorted(b, key=str)", "[x for x in b]", "len(b)",
                                "dict(enumerate(b))", "max(b, key=repr)", "b.add(1).add(2)", "tuple(reversed(list(b)))", "any(x is None for x in b)"], 3, 6))
    return lines + ["log.append(Item.made)"]


def calls():
    sig = pick(["a, b", "a, b=2", "a, /, b, *, c=3", "a, *args, key=None", "a, b=1, **kw", "*, a, b", "a, b, *rest, flag", "a=0, *args, **kwargs"])
    names = [p.strip(" *").split("=")[0] for p in sig.split(",") if p.strip(" */")]
    body = f"return ({', '.join(names)},)"
    nested = R.random() < 0.5
    inner = [f"def step({sig}):", f"    {body}"]
    lines = ["def make(tag):"] + ["    " + x for x in inner] + ["    return step", "step = make('t')"] if nested else inner
    args = ["", "1", "1, 2", "1, 2, 3", "a=1", "1, b=2", "1, a=1", "b=2", "1, 2, c=4", "1, z=9", "a=1, b=2, flag=0", "*[1, 2]", "**{'a': 1, 'b': 2}", "1, 2, flag=True", "*'xy'"]
    lam = ["(lambda x, y=2: x * y)(3, 4, 5)", "(lambda x: x)()", "(lambda: 1)(2)", "(lambda *a, **k: (a, sorted(k)))(1, z=2)", "list(map(lambda a, b: a + b, [1, 2]))",
           "sorted(nums, key=lambda a, b: a)", "sorted(['bb', 'a'], key=len, reverse=True)", "(lambda x, *, k: x + k)(1, 2)", "(lambda x, *, k: x + k)(1, k=2)",
           "list(filter(lambda x: x > 2, nums))", "list(map(lambda s: s.upper(), ['a', 1]))", "make(1, 2)" if nested else "step.missing",
           "sorted(nums, key=lambda x: -x)[:3]", "min(nums, key=lambda x: abs(x - 4), default=None)", "(lambda: undefined_name)()"]
    return lines + try_each([f"step({pick(args)})" for _ in range(R.randint(3, 6))] + some(lam, 2, 4))


def scopes():
    parts = [
        "def counter(start=0):\n    n = start\n    def inc(by=1):\n        nonlocal n\n        n += by\n        return n\n    return inc\nc1, c2 = counter(), counter(10)\nprint(c1(), c1(), c2(5), c1(by=3))",
        "total = 0\ndef add(x):\n    global total\n    total += x\n    return total\nprint([add(x) for x in nums], total)",
        "hits = 0\ndef bump():\n    hits += 1\nbump()",
        "fs = [lambda: i for i in range(3)]\ngs = [lambda i=i: i * 10 for i in range(3)]\nprint([f() for f in fs], [g() for g in gs])",
        "x = 'outer'\nys = [x for x in range(3)]\nprint(x, ys)",
        "def flatten(xs):\n    out = []\n    def walk(v):\n        if isinstance(v, (list, tuple)):\n            for w in v:\n                walk(w)\n        else:\n            out.append(v)\n    walk(xs)\n    return out\nprint(flatten([1, [2, (3, [4])], [], nums]))",
        "def outer():\n    v = 1\n    def mid():\n        def inner():\n            nonlocal v\n            v *= 3\n            return v\n        return inner() + inner()\n    return mid(), v\nprint(outer())",
        "print(undefined_name)",
        "def f():\n    print(later)\n    later = 1\nf()",
        "acc = []\ndef push(v, into=acc):\n    into.append(v)\n    return into\nprint(push(1), push(2), push(3, []), acc)",
        "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nprint(fact(20), [fact(k) for k in range(6)])",
    ]
    return try_each(some(parts, 2, 4))


PAIRED = ["{'ab': 1, 'cd': 2}", "{'abc': 1}", "[(1, 2), (3, 4, 5)]", "[[1, 2], 'xy']", "rows", "enumerate(nums)"]


def unpacking():
    seqs = ["[]", "[1]", "[1, 2]", "[1, 2, 3]", "'ab'", "'abc'", "range(4)", "(x for x in nums)", "{'k': 1, 'j': 2}", "5", "None", "iter([1, 2, 3])", "zip('ab', 'cd')", "nums", "text.split()"]
    stmts = [f"a, b = {pick(seqs)}\nv = (a, b)", f"a, b, c = {pick(seqs)}\nv = (a, b, c)", f"first, *mid, last = {pick(seqs)}\nv = (first, mid, last)",
             f"*init, tail = {pick(seqs)}\nv = (init, tail)", f"(a, b), c = {pick(seqs)}, 0\nv = (a, b, c)", f"v = [*{pick(seqs)}, *'xy']", f"v = dict(**{{'a': 1}}, a=2)",
             f"for k, v in {pick(PAIRED)}:\n    print(k, v)",
             "v = [(i, k, w) for i, (k, w) in enumerate({'a': 1, 'b': 2}.items(), 1)]", "a, b = 1, 2\na, b = b, a + b\nv = (a, b)", "*v, = text[:3]",
             "v = {**{'a': 1}, **{'a': 2, 'b': 3}}", f"print(*{pick(seqs)}, sep='|')\nv = 0",
             "if (n := len(nums)) > 2:\n    v = f'{n} items'\nelse:\n    v = n", "v = [y for x in nums if (y := x * 2) > 4]",
             "stack = list(nums)\nout = []\nwhile (top := stack.pop() if stack else None) is not None:\n    out.append(top)\nv = out",
             f"v = [m for r in rows if (m := r.get('score')) is not None and m > {pick(['50', '0', '90'])}]", "n = 0\nv = [n := n + x for x in nums]"]
    return try_each(some(stmts, 4, 7))


def matching():
    cases = [("None", "'none'"), ("True | False", "f'bool {v}'"), ("0", "'zero'"), ("int(n) if n < 0", "f'neg {n}'"), ("int() | float() as num", "f'num {num!r}'"),
             ("''", "'empty'"), ("str(s) if s.isdigit()", "f'digits {s}'"), ("str(s)", "f'str {s[:4]!r}'"), ("[]", "'empty list'"), ("[x]", "f'one {x!r}'"),
             ("[x, y]", "f'pair {x!r} {y!r}'"), ("(a, b, c)", "f'triple {a}{b}{c}'"), ("[first, *rest] if len(rest) > 1", "f'long {first!r} +{len(rest)}'"),
             ("[int(a), *_]", "f'starts int {a}'"), ("{'type': 'user', 'name': str(name), **rest}", "f'user {name} {sorted(rest)}'"),
             ("{'type': t, 'id': int(i)}", "f'{t}#{i}'"), ("{'error': msg, 'code': 500 | 504 as code}", "f'err {msg} {code}'"), ("{'type': _}", "'typed'"),
             ("{}", "'any mapping'"), ("Point(x=0, y=0)", "'origin'"), ("Point(x, y) if x == y", "f'diag {x}'"), ("Point(y=y)", "f'point y={y}'"),
             ("Limits.LOW", "'low'"), ("[Point() as p, *_]", "f'first point {p!r}'"), ("list() | tuple()", "'some sequence'"), ("dict(d) if len(d) > 2", "f'big {len(d)}'")]
    chosen = some(cases, 5, 9)
    lines = ["class Point:", f"    __match_args__ = {pick([repr(('x', 'y')), repr(('x',)), '()'])}", "    def __init__(self, x, y=0):", "        self.x = x",
             "        self.y = y", "    def __repr__(self):", "        return f'Point({self.x}, {self.y})'", "class Limits:", "    LOW = 1", "    HIGH = 100",
             "def describe(v):", "    match v:"]
    for pat, res in chosen + ([("_", "f'other {type(v).__name__}'")] if R.random() < 0.7 else []):
        lines += [f"        case {pat}:", f"            return {res}"]
    vals = some(VALUES + ["Point(0, 0)", "Point(2, 2)", "Point(1, 5)", "[Point(3, 4), 1]", "Limits.HIGH", "Point('a')"], 6, 10)
    return lines + [f"for v in [{', '.join(vals)}]:", "    try:", "        print(repr(v), '->', describe(v))", "    except Exception as e:",
                    "        print(repr(v), 'raised', type(e).__name__, e)", "log.append(describe(rows))"]


def exceptions():
    raises = ["raise ValueError('zero')", "return 'early'", "{}['missing']", "[][1]", "int('x')", pick(["raise KeyError('k', 2)", "raise RuntimeError('a', 'b')"]),
              "raise ValueError", "raise TypeError(f'bad {k!r}')", "assert k > 5, f'k={k} too small'", "assert k > 5", "1 / 0", "None.get('x')", "raise", "raise LookupError('deep') from None"]
    body = some(raises, 2, 4)
    lines = ["def step(k):", "    print('start', k)", "    try:"]
    lines += [f"        if k == {n}:\n            {r}" for n, r in enumerate(body)] + ["        print('body done', k)"]
    handlers = some([("ValueError as e", ["print('value', e, e.args, repr(e))", "return 'handled'"]),
                     ("(KeyError, IndexError) as e", ["print('lookup', type(e).__name__, repr(e), str(e), e.args)", f"raise RuntimeError(f'step {{k}} failed') from e"]),
                     ("LookupError as e", ["print('lookup base', repr(e))", "raise"]), ("ZeroDivisionError", ["print('div')", "x = undefined_name"]),
                     ("AssertionError as e", ["print('assert', repr(e), e.args)"]), ("Exception as e", ["print('other', type(e).__name__, e)", "err = e"])], 1, 3)
    for h, hb in handlers:
        lines += [f"    except {h}:"] + ["        " + x for x in hb]
    if R.random() < 0.6:
        lines += ["    else:", "        print('else', k)"] + (["        return 'from else'"] if R.random() < 0.3 else [])
    if R.random() < 0.7:
        lines += ["    finally:", "        print('finally', k)"] + (["        int('finally')"] if R.random() < 0.15 else [])
    lines += ["    print('after', k)", "    return k", f"for k in range({len(body) + 1}):", "    try:", "        print('->', repr(step(k)))",
              "    except Exception as e:", "        print('outer', type(e).__name__, e, e.args)"]
    if ALL:
        lines += ["        print('cause', repr(e.__cause__), 'context', repr(e.__context__), e.__suppress_context__)",
                  "class AppError(Exception):", "    pass", "try:", "    raise AppError('app', 1)", "except Exception as e:", "    print(repr(e), e, e.args, isinstance(e, Exception))"]
    if R.random() < 0.3:
        lines += ["try:", "    raise ValueError('first')", "except ValueError as e:", "    saved = e", "print(repr(saved), saved.args)", "print(e)"]
    return lines


ERRORS = [
    "None['key']", "None.get('k')", "rows[0]['missing']", "rows[0].name", "{'a': 1}['b']", "{'a': 1}[('x', 2)]", "[1, 2, 3][5]", "'abc'[10]", "(1, 2)[-3]",
    "'total: ' + 5", "5 + '5'", "'n' * 'm'", "[1] * 2.0", "None + 1", "len(5)", "len(None)", "int('x')", "int('3.5')", "int('')", "int(None)",
    "float('abc')", "float([1])", "'abc' < 1", "[1, 'a'] < ['a', 1]", "sorted([3, 'a', 1])", "max([])", "min([], key=len)", "sum(['a', 'b'])", "sum([[1], [2]])",
    "(5)()", "text()", "rows()", "[x for x in 5]", "list(None)", "dict([1, 2])", "dict(['ab', 'cde'])", "{}.pop('k')", "{'a': 1}.pop('b')", "[1, 2].index(3)",
    "text.index('#')", "'hello'.index('z')", "[].pop()", "[1].pop(5)", "[1, 2].remove(9)", "(1, 2).index(5)", "'abc'.split('')", "'x'.join([1, 2])",
    "', '.join(None)", "round('1.5')", "abs('x')", "-'x'", "1 / 0", "1 % 0", "1.0 // 0", "divmod(1, 0)", "math.sqrt(-1)", "math.log(0)", "chr(-1)", "ord('ab')",
    "'%d' % 'x'", "'%s %s' % ('a',)", "'%s' % ('a', 'b')", "'{} {}'.format('a')", "'{name}'.format(nm='x')", "format('x', 'd')", "format(None, '>5')",
    "format(1.5, 'd')", "t = (1, 2)\nt[0] = 5", "s = 'abc'\ns[0] = 'z'", "d = {}\nd[[1]] = 2", "v = undefined_name", "'abc'.foo()", "[1].push(2)", "None.append(1)",
    "rows.get('x')", "{1: 'a'}.sort()", "int('12', 1)", "xs = [1, 2]\nxs[5] = 1", "'x' in 5", "1 in 'abc'", "next(iter([]))", "range(1.5)",
    "isinstance(1, 'int')", "max(1)", "hash([])", "{**[1]}", "print(*5)", "'a'.startswith(['a'])", "'abc'.replace('a')", "len()", "sorted()", "[].append()",
    "{}.get()", "int('5', base=2)", "int(float('inf'))", "int((float('inf') * 0))", "10 ** 400 * 1.0", "math.factorial(-1)", "list(zip([1], [1, 2], strict=True))",
    "text.split(1)", "nums[1:2] = 5", "nums['a']", "int('1e3')", "float('1,5')", "'%.2f' % None", "[1, 2, 3][1.0]", "'ab'.center('x')",
    "dict(a=1) + {}", "[3] - [1]", "~1.5", "2 ** 'a'", "f'{nums:>10}'", "f'{None:d}'", "f'{text!r:>4.2}'", "{'a': 1}.items()[0]", "next(5)",
]


def builtin_errors():
    picks = some(ERRORS, 6, 11)
    return try_each(picks, show=pick(["repr(v)", "type(v).__name__, repr(v)"])) + [f"log.append({len(picks)})"]


def formatting():
    vals = {"name": pick(NAMES), "score": pick(["91.5", "78", "-0.0", "1234567.891", "0.125", "2.675", "1e-5", "float('inf')"]), "count": pick(["0", "7", "-42", "123456", "10**12", "True"]),
            "tags": pick(["['a', 'b']", "[]", "('x',)"]), "meta": pick(["{'k': 1}", "None", "{}"])}
    lines = [f"{k} = {v}" for k, v in vals.items()]
    fields = ["{name!r}", "{name:>10}", "{name:*^9}", "{name!r:<12}|", "{name=}", "{name!s:.3}", "{score:.2f}", "{score:08.3f}", "{score:,.1f}", "{score:.1%}", "{score:e}",
              "{score:g}", "{score = :.1f}", "{score:+}", "{score!r}", "{count:05d}", "{count:,}", "{count:_x}", "{count:#b}", "{count:>+8}", "{count=}", "{count:.2f}",
              "{tags!r}", "{tags}", "{tags=}", "{len(tags)=}", "{meta}", "{meta!r:>12}", "{meta=}", "{score:{len(name) + 4}.{len(tags)}f}", "{'lit'!r}",
              "{name.upper()!r}", "{score:>{len(tags) + 6}}", "{{braces}} {count}", "{count:x}{count:o}", "{name:=^7}", "{score:d}", "{meta:>5}", "{name:05}"]
    stmts = ['v = f"' + "".join(some(fields, 2, 4)) + '"' for _ in range(R.randint(3, 5))]
    stmts += some(["v = '{:>8}|{:<6}|{:^7.2f}'.format(name, count, score)", "v = '{0!r} {0} {1:.1f}'.format(name, score)", "v = '%-8s|%6.2f|%d' % (name, score, count)",
                   "v = format(score, '.3g'), format(count, ','), format(name, '^11')", "v = str(score), repr(score), str(count), str(tags)", "v = f'{rows[0]!r:.20}' if rows else f'{rows}'",
                   "v = '\\n'.join(f'{r[\"name\"]:<8}{r.get(\"score\", 0)!s:>6}' for r in rows)"], 1, 3)
    return lines + try_each(stmts)


def data():
    key = pick(["lambda r: r['score']", "lambda r: (r.get('score') or 0, r['name'])", "lambda r: r['name'].lower()", "lambda r: len(r.get('tags', []))",
                "lambda r: (-(r.get('score') or 0), r['id'])", "lambda r: r.get('team', '')"])
    stmts = [f"sorted(rows, key={key})", f"[r['id'] for r in sorted(rows, key={key}, reverse=True)]", f"max(rows, key={key}, default=None)", f"min(rows, key={key})",
             "{r['name']: r.get('score') for r in rows if r.get('active')}", "[(i, r['name']) for i, r in enumerate(rows, 1) if i % 2]", "any(r.get('score', 0) > 90 for r in rows)",
             "all(r['tags'] for r in rows)", "sum(r.get('score') or 0 for r in rows) / len(rows)", "round(sum(nums) / len(nums), 2)", "sorted(nums, reverse=True)[:3]",
             "list(zip(nums, text.split(), strict=True))", "list(zip(nums, reversed(nums)))", "dict(zip([r['name'] for r in rows], nums))", "list(reversed(rows))[:1]",
             "[r for r in rows if 'vip' in r.get('tags', [])]", "next((r['name'] for r in rows if r['id'] > 2), 'none')", "next(r for r in rows if r['id'] > 9)",
             "sorted({r.get('team', '?') for r in rows})", "len({n % 3 for n in nums})", "sorted(sum(1 for n in nums if n > k) for k in range(3))",
             "[(a, b) for a in range(3) for b in range(a) if a + b != 2]", "{k: [r['id'] for r in rows if r.get('team') == k] for k in ['red', 'blue']}",
             "max(nums, default='empty'), min(nums, default=None), max(nums or [0])", "sorted([(r.get('team'), r['id']) for r in rows])", "list(enumerate(text[:4], start=-1))",
             "[n for n in nums if n] == list(filter(None, nums))", "sorted(rows, key=lambda r: r['score'] if r.get('score') is not None else float('-inf'))[:1]",
             "groups = {}\nfor r in rows:\n    groups.setdefault(r.get('team'), []).append(r['id'])\nv = groups",
             "seen = []\nfor n in nums:\n    if n in seen:\n        continue\n    seen.append(n)\nelse:\n    seen.append('end')\nv = seen"]
    text_ops = ["text.split(';')", "[p.strip() for p in text.split(',')]", "text.partition(':')", "text.rpartition('/')", "text.strip().title()", "text.upper().center(30, '=')",
                "' '.join(reversed(text.split()))", "text.startswith(('Name', 'ERROR'))", "text.find('a'), text.count('a'), text.rfind('a')", "text.splitlines()", "text.replace(' ', '_', 2)",
                "dict(kv.split('=') for kv in text.split('&'))", "dict(p.split(': ', 1) for p in text.split('; '))", "'{}: {}'.format(*text.split(':', 1))",
                "text.removeprefix('https://').split('/')", "text.casefold() == text.lower()", "text[::-1][:8]", "text.zfill(5), text.ljust(4, '.')", "[w.capitalize() for w in text.split()]",
                "text.encode()", "text.isdigit(), text.isalpha(), text.isspace()", "[line.split(',') for line in text.splitlines()[1:]]", "text.split(None, 2)", "len(text), text[:5]"]
    return try_each(some(stmts, 4, 7) + some(text_ops, 2, 4)) + ["log.append(len(rows))"]


NUMBERS = ["7", "-7", "0", "3", "-2", "2.5", "-0.5", "0.1", "1e16", "10**20", "-(10**19)", "True", "1.0", "float('inf')", "(float('inf') * 0)", "-0.0", "255", "2**63"]


def numbers():
    """Arithmetic a model's script does on tool numbers: mixed int/float,
    negative floor division and modulo, rounding, big ints, conversions."""
    a, b = pick(NUMBERS), pick(NUMBERS)
    exprs = [f"{a} // {b}", f"{a} % {b}", f"divmod({a}, {b})", f"{a} / {b}", f"{a} ** {pick(['2', '-1', '0.5', '3', '0'])}", f"round({a})", f"round({a}, {pick(['1', '-1', '0', '2'])})",
             f"({a}) == ({b}), ({a}) < ({b}), ({a}) >= ({b})", f"max({a}, {b}), min({a}, {b})", f"abs({a})", f"int({a})", f"float({a})", f"str({a}), repr({a})",
             f"hex({a}), oct({a}), bin({a})", f"({a}).bit_length()", f"({a}).is_integer()", f"({a}).as_integer_ratio()", f"math.floor({a}), math.ceil({a})",
             f"math.trunc({a})", f"math.isclose({a}, {b})", f"math.gcd({a}, {b})", f"{a} & {b}, {a} | {b}, {a} ^ {b}", f"{a} << {pick(['1', '3', '70', '-1'])}",
             f"{a} >> {pick(['1', '3', '70'])}", f"-{a}, +{a}, ~{a}", f"sum([{a}, {b}, 0.1])", f"math.fsum([{a}, {b}, 0.1])", f"sorted([{a}, {b}, 1, 0.5])",
             f"{a} * {b}", f"{a} - {b}", f"{a} + {b}", f"pow({a}, {b}, 7)", f"hash({a}) == hash({b})", f"bool({a}), not {a}", f"{a} if {a} else {b}",
             "0.1 + 0.2, 0.1 + 0.2 == 0.3, round(0.1 + 0.2, 10)", "2.675 * 100, round(2.675, 2), round(2.5), round(3.5), round(-2.5)", "1e308 * 10, -1e308 * 10, 1e-320",
             "10**18 + 0.5, float(10**18 + 1), int(1e18)", "7 // -2, -7 // 2, 7 % -2, -7 % 2, -7.5 // 2, -7.5 % 2", "divmod(-7, 2), divmod(7.5, -2)",
             "int('  42\\n'), int('-0'), int('0x1f', 16), int('0b101', 0), int('1_000')", "float('  1.5 '), float('-inf'), float('1_0.5'), float('.5')",
             "str(1e16), str(1e15), str(1.5e-5), str(123456789.0), repr(1/3)", "format(1e16, ''), format(0.1, '.20f'), format(1/3, '.3')",
             "[n / 2 for n in nums], [n // 2 for n in nums]", "sum(nums) / (len(nums) or 1), max(nums, default=0) - min(nums, default=0)",
             "statistics_like = sorted(nums)\nv = statistics_like[len(statistics_like) // 2] if nums else None", "2 ** 100, 2 ** -2, (-8) ** (1 / 3)",
             "10 ** 20 // 3, 10 ** 20 % 7, -(10 ** 20) // 7", "int(2.9), int(-2.9), int('7'), int(7.0), float(7)", "1 == 1.0, 1 is 1.0, True + True, True * 3.0"]
    return try_each(some(exprs, 5, 9))


def containers():
    """Dict, list and set operations whose order and identity a script sees."""
    stmts = ["d = {'b': 1, 'a': 2}\nd['c'] = 3\ndel d['b']\nd['b'] = 4\nv = d", "d = dict.fromkeys('abca', 0)\nv = d", "d = {'x': 1}\nv = (d.setdefault('y', []), d)",
             "d = {'a': 1, 'b': 2}\nv = (d.pop('a'), d.pop('z', None), d)", "d = {'a': 1, 'b': 2}\nv = (d.popitem(), d)", "v = {'a': 1} | {'b': 2, 'a': 3}",
             "d = {'a': 1}\nd |= {'c': 3}\nd.update(b=2)\nd.update([('e', 5)])\nv = d", "v = list({'b': 1, 'a': 2}.items()), list({'b': 1}.keys()), list({'b': 1}.values())",
             "d = {1: 'a', True: 'b', 1.0: 'c'}\nv = d", "v = {k: v for k, v in zip('abc', range(3)) if v}", "d = {'a': [1]}\ne = d.copy()\ne['a'].append(2)\nv = (d, e)",
             "v = sorted({'b': 2, 'a': 1, 'c': 0}.items(), key=lambda kv: kv[1])", "v = dict(sorted({'b': 2, 'a': 1}.items()))", "v = {'a': 1} == {'a': 1.0}, {'a': 1}.get('b', 'dflt')",
             "xs = [3, 1, 2]\nxs.insert(-1, 9)\nxs.insert(100, 8)\nv = xs", "xs = list(range(6))\nxs[1:3] = ['a', 'b', 'c']\ndel xs[::2]\nv = xs", "xs = [1, 2, 3]\nv = (xs.pop(0), xs.pop(), xs)",
             "xs = [(1, 'b'), (0, 'a'), (1, 'a')]\nxs.sort(key=lambda t: t[0])\nv = xs", "xs = ['b', 'A', 'c']\nv = (sorted(xs), sorted(xs, key=str.lower), xs)",
             "xs = [1, 2, 2, 3]\nxs.remove(2)\nv = (xs, xs.count(2), xs.index(3))", "xs = [1, [2]]\nys = xs[:]\nys[1].append(3)\nv = (xs, ys, xs == ys, xs is ys)",
             "v = [1, 2] * 2, [[0] * 2] * 2, [0] * -1", "xs = [[0] * 2] * 2\nxs[0][0] = 1\nv = xs", "v = [1, 2, 3][::-1], [1, 2, 3][-2:], [1, 2, 3][5:], 'abc'[::2]",
             "v = {3, 1, 2} | {5}, {1, 2} & {2, 3}, {1, 2} - {2}, {1, 2} ^ {2, 3}", "s = {1, 2}\ns.add(2)\ns.discard(5)\nv = (sorted(s), len(s), 1 in s)",
             "v = frozenset([1, 2]) == {1, 2}, set(), frozenset(), {1: 2}.keys() & {1, 3}", "v = sorted({-1, 5, 3}), min({4, 2}), sorted(set('hello'))",
             "v = list(map(str, nums)), tuple(nums), set(nums) == set(reversed(nums))", "xs = nums[:]\nxs.reverse()\nxs.extend((7, 8))\nxs += [9]\nv = xs",
             "v = [r['id'] for r in rows], [r.get('tags') for r in rows]", "v = {r['id']: r for r in rows}.get(1, {}).get('name')",
             "xs = []\nfor i, n in enumerate(nums):\n    if n % 2:\n        xs.append((i, n))\nv = xs", "v = list(dict.fromkeys(nums)), sorted(set(nums), reverse=True)",
             "t = (1, [2])\nt[1].append(3)\nv = t", "v = (1, 2) + (3,), (1,) * 3, tuple('ab'), () == tuple()", "v = [x for x in [[1, 2], [3]] for x in x]",
             "import copy\na = {'k': [1, {'z': 2}]}\nb = copy.deepcopy(a)\nb['k'][1]['z'] = 9\nv = (a, b)", "v = list(zip(*[(1, 'a'), (2, 'b')]))"]
    return try_each(some(stmts, 5, 9))


def iteration():
    """Lazy iterators and itertools over tool-shaped data."""
    stmts = ["it = iter(nums)\nnext(it, None)\nv = list(it)", "it = iter([1, 2])\nv = (next(it), next(it), next(it, 'done'))", "v = list(enumerate('abc', 1)), list(zip('ab', 'xyz'))",
             "m = map(lambda n: n * 2, nums)\nv = (list(m), list(m))", "f = filter(None, [0, 1, '', 'a', None])\nv = list(f)", "r = range(2, 20, 3)\nv = (r, r[1], r[-1], r[1:3], len(r), 5 in r, list(r[::-2]))",
             "v = list(reversed(range(3))), list(reversed('ab')), list(reversed({'a': 1, 'b': 2}))", "import itertools\nv = list(itertools.chain([1], 'ab', (2,)))",
             "import itertools\nv = [(k, list(g)) for k, g in itertools.groupby('aabccca')]", "import itertools\nv = list(itertools.accumulate(nums))",
             "import itertools\nv = list(itertools.product('ab', range(2)))", "import itertools\nv = list(itertools.permutations([1, 2, 3], 2))[:4]",
             "import itertools\nv = list(itertools.combinations('abcd', 2))", "import itertools\nv = list(itertools.islice(itertools.count(5, 2), 4))",
             "import itertools\nv = list(itertools.zip_longest('ab', [1], fillvalue='-'))", "import itertools\nv = list(itertools.starmap(pow, [(2, 3), (3, 2)]))",
             "import itertools\nv = [list(c) for c in itertools.pairwise(nums)]", "import itertools\nv = list(itertools.takewhile(lambda n: n > 0, nums)), list(itertools.dropwhile(lambda n: n > 0, nums))",
             "import functools\nv = functools.reduce(lambda a, b: a * b, nums, 1)", "import functools\nv = functools.reduce(lambda a, b: a + b, [])",
             "from collections import Counter\nc = Counter(text.split())\nv = (c.most_common(2), c['zzz'], sorted(c))", "from collections import Counter\nv = Counter('abracadabra').most_common(3)",
             "from collections import defaultdict\nd = defaultdict(list)\nfor r in rows:\n    d[r.get('team')].append(r['id'])\nv = dict(d)", "from collections import deque\nq = deque(nums, maxlen=3)\nq.append(0)\nq.appendleft(-9)\nv = (list(q), q)",
             "from collections import namedtuple\nP = namedtuple('P', 'x y')\np = P(1, y=2)\nv = (p, p.x, p._asdict(), p._replace(x=5), tuple(p))",
             "v = sorted(rows, key=lambda r: r.get('team', ''))[:2]", "v = list(map(lambda a, b: a - b, nums, nums[1:]))", "v = dict(enumerate(text.split()[:3]))",
             "v = [i for i in range(10) if i % 3 == 0][::-1]", "v = sum(range(101)), sum(range(0)), sum([0.1] * 10)", "it = iter(range(3))\nv = [x for x in it if x != 1]",
             "z = zip([1, 2], [3, 4])\nv = (list(z), list(z))", "v = list(zip(*[[1, 2, 3], [4, 5, 6]]))", "v = all([]), any([]), all([0, 1]), any([0, ''])",
             "e = enumerate(['a', 'b'])\nv = (next(e), list(e))", "v = max('apple', 'fig', key=len), min([[3], [1, 2]]), sorted(['b', 'a'], reverse=True)"]
    return try_each(some(stmts, 5, 9))


def jsonish():
    """json round trips of tool-shaped data."""
    vals = ["rows", "{'b': 1, 'a': [1.0, 2.5, None, True]}", "{'n': 10**20, 'f': 1e16, 'neg': -0.0}", "{'u': 'ünïcode €', 't': 'tab\\tq'}", "[]", "{}", "{1: 'a', 2.5: 'b', None: 'c', True: 'd'}",
            "{'nested': {'deep': [{'x': 1}]}}", "(1, 2)", "'text'", "(float('inf') * 0)", "{'s': {1, 2}}", "{(1, 2): 'tuple key'}", "[1e100, 1.5e-7, 100.0]"]
    v = pick(vals)
    stmts = [f"json.dumps({v})", f"json.dumps({v}, indent=2)", f"json.dumps({v}, sort_keys=True)", f"json.dumps({v}, separators=(',', ':'))", f"json.dumps({v}, ensure_ascii=False)",
             f"json.loads(json.dumps({v}))", f"json.dumps({v}, indent='\\t', sort_keys=True)", f"json.dumps({v}, default=str)", f"json.dumps({v}, skipkeys=True)",
             f"json.dumps({v}, allow_nan=False)", "json.loads('{\"a\": 1, \"a\": 2}')", "json.loads('[1, 2.0, 1e2, -0, \"x\", null, true]')", "json.loads('{\"a\": }')",
             "json.loads('')", "json.loads('NaN'), json.loads('-Infinity')", "json.loads('  [1]  ')", "json.loads('[1] x')", "json.loads(\"{'a': 1}\")", "json.loads('\"\\\\u00e9\"')",
             "json.loads(b'[1]')", "json.loads(5)", "json.dumps(rows[0] if rows else None, indent=1)", "json.loads(json.dumps(text))"]
    return try_each(some(stmts, 4, 7))


FAMILIES = [classes, calls, scopes, unpacking, matching, exceptions, builtin_errors, formatting, data, numbers, containers, iteration, jsonish]


def script(all_forms=False, one=False):
    """A program of 4 to 6 family blocks, or of one (`one`: most programs
    then stay on monty under auto, which is what the differential checks)."""
    global ALL
    ALL = all_forms
    lines = ["import json", "import math", ""] + prelude() + [""]
    for n, fam in enumerate(R.sample(FAMILIES, 1 if one else R.randint(4, 6))):
        lines += [f"# block {n}: {fam.__name__}", "try:"] + ["    " + line for line in "\n".join(fam()).split("\n")]
        lines += ["except Exception as e:", f"    print('block {n} raised', type(e).__name__, e)", f"    log.append('block {n} ' + type(e).__name__)", ""]
    lines.append(pick(["log", "{'log': log, 'n': len(rows)}", "json.dumps(log)", "[log, text[:10], nums]", "(len(log), rows[:1])"]))
    return "\n".join(lines) + "\n"
