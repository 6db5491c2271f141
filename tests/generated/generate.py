#!/usr/bin/env python3
"""Random model-like Python scripts for the generated differential check.

    python3 tests/generated/generate.py OUT_DIR N [SEED] [--all] [--modules | --programs [--one]]

Each script assigns a few typed variables, evaluates 12 random expressions
over ints (big ones too), floats, strings, lists, dicts and sets (each
printed as its repr, or as `raised Type message`), runs three model-like
blocks of statements (functions with defaults and `*rest`, loops with
`break`/`else`, closures, grouping, exceptions and their messages,
formatting, `json`), mutates a list and a dict, and ends with an
expression answer. `tests/it/generated.rs` runs them
under `python = "auto"` and on the CPython guest and compares everything a
caller sees; `tests/generated/compare.py` does the same through the CLI for
any number of scripts.

By default the expressions avoid what the scan already sends to CPython
(sets, the methods monty lacks), so that most scripts run on monty and
test it; `--all` keeps them (most scripts then go to CPython, which tests
the scan's routing).

`--modules` writes scripts of expressions over the modules models use on
tool results instead (`re`, `collections`, `datetime`, `itertools`,
`functools`, `decimal`, `json`: `modules.py`).

`--programs` writes multi-statement programs instead: classes, calls with
wrong arguments, closures, unpacking, `match`, exception handling and
messages, f-strings, sorting and comprehensions over a tool result, in
blocks that each print what they did or what they raised, and numbers,
containers, iterators and `json` (`programs.py`). A program has 4 to 6
such blocks, so most go to CPython for one of them; `--one` writes
programs of one block, most of which run on monty. A NaN is written
`float('inf') * 0`: the scan sends `float('nan')` to CPython (stop 36),
and these scripts are to test monty.

Stop 25 found with it, in 1,300 scripts: set iteration order, methods and
method values monty lacks, `sum()` of floats without CPython 3.12's
compensation, math domain messages with Rust's float formatting, and
KeyError messages.
"""
import os
import random
import sys

R = random.Random()

INT_LITS = ["0", "1", "2", "3", "7", "-1", "-5", "10", "42", "100", "255", "1000", "-17", "2**31", "2**64", "10**20", "-(2**63)", "12345678901234567890"]
FLOAT_LITS = ["0.0", "0.1", "0.5", "1.5", "2.5", "-0.0", "-2.75", "3.14159", "1e20", "1e-7", "123456.789", "2.675", "1/3", "0.1 + 0.2", "1e16", "1.0", "100.0", "-1e-300", "float('inf')", "(float('inf') * 0)", "5e-324", "9007199254740993.0"]
STR_LITS = ["''", "'a'", "'hello'", "'Hello World'", "'  padded  '", "'a,b,,c'", "'x-y-z'", "\"it's\"", "'say \"hi\"'", "'tab\\there'", "'line1\\nline2'", "'ünïcödé'", "'日本語'", "'🙂 ok'", "'123'", "'-42'", "'3.5'", "'ABC def'", "'snake_case_name'", "'CamelCase'", "'a b  c'", "'\\\\back'", "'mississippi'", "'  '", "'0x1f'", "'1_000'", "'ß'", "'İ'", "'ﬁ'"]
NAMES = ["a", "b", "c"]


def pick(xs):
    return R.choice(xs)


class Gen:
    def __init__(self):
        self.vars = {"int": [], "float": [], "str": [], "list_int": [], "list_str": [], "dict": [], "set": []}

    def v(self, t):
        if t is None:
            have = [k for k, vs in self.vars.items() if vs]
            t = pick(have) if have else "int"
        if not self.vars.get(t):
            return pick(["7", "-1", "2**31", "0"] if t != "float" else ["2.5", "0.1", "1e20"])
        return pick(self.vars[t])

    def var(self, t):
        vs = self.vars.get(t)
        if vs and R.random() < 0.5:
            return pick(vs)
        return None

    def int_(self, d=0):
        v = self.var("int")
        if v and R.random() < 0.4:
            return v
        if d > 2 or R.random() < 0.25:
            return pick(INT_LITS)
        i, f, s, l = (lambda: self.int_(d + 1)), (lambda: self.float_(d + 1)), (lambda: self.str_(d + 1)), (lambda: self.list_int(d + 1))
        forms = [
            lambda: f"({i()} + {i()})", lambda: f"({i()} - {i()})", lambda: f"({i()} * {i()})",
            lambda: f"({i()} // {i()})", lambda: f"({i()} % {i()})", lambda: f"(-{i()})",
            lambda: f"abs({i()})", lambda: f"len({s()})", lambda: f"{s()}.count({s()})",
            lambda: f"{s()}.find({s()})", lambda: f"{s()}.rfind({s()})", lambda: f"int({f()})",
            lambda: f"int({pick(STR_LITS)})", lambda: f"sum({l()})", lambda: f"max({l()})",
            lambda: f"min({l()})", lambda: f"divmod({i()}, {i()})[0]", lambda: f"divmod({i()}, {i()})[1]",
            lambda: f"({i()} ** {R.randint(0, 5)})", lambda: f"({i()} & {i()})", lambda: f"({i()} | {i()})",
            lambda: f"({i()} ^ {i()})", lambda: f"({i()} << {R.randint(0, 70)})", lambda: f"({i()} >> {R.randint(0, 70)})",
            lambda: f"round({f()})", lambda: f"ord({s()}[0])", lambda: f"{l()}.index({i()})",
            lambda: f"sorted({l()})[{R.randint(-3, 3)}]", lambda: f"{l()}[{R.randint(-4, 4)}]",
            lambda: f"len({l()})", lambda: f"(True + {i()})", lambda: f"math.floor({f()})", lambda: f"math.ceil({f()})",
            lambda: f"math.gcd({i()}, {i()})", lambda: f"int({s()}, {pick(['2', '10', '16', '0', '36'])})",
            lambda: f"pow({i()}, {R.randint(0, 4)}, {i()})", lambda: f"(~{i()})", lambda: f"({i()}).bit_length()",
            lambda: f"math.isqrt({i()})", lambda: f"math.factorial({R.randint(0, 25)})", lambda: f"math.comb({R.randint(0, 30)}, {R.randint(0, 10)})",
            lambda: f"int({i()} / {i()})", lambda: f"len({self.dict_(d + 1)})", lambda: f"{self.dict_(d + 1)}.get({s()}, {i()})",
            lambda: f"{self.dict_(d + 1)}[{s()}]", lambda: f"len({self.set_(d + 1)})", lambda: f"hash({i()})",
            lambda: f"{s()}.index({s()})", lambda: f"int({self.bool_(d + 1)})", lambda: f"max({i()}, {i()}, key=abs)",
            lambda: f"sum(x * x for x in {l()})", lambda: f"len([x for x in {l()} if x > {i()}])",
        ]
        return pick(forms)()

    def float_(self, d=0):
        v = self.var("float")
        if v and R.random() < 0.4:
            return v
        if d > 2 or R.random() < 0.25:
            return pick(FLOAT_LITS)
        i, f, s = (lambda: self.int_(d + 1)), (lambda: self.float_(d + 1)), (lambda: self.str_(d + 1))
        forms = [
            lambda: f"({f()} + {f()})", lambda: f"({f()} - {i()})", lambda: f"({f()} * {f()})",
            lambda: f"({i()} / {i()})", lambda: f"({f()} / {f()})", lambda: f"({f()} // {f()})",
            lambda: f"({f()} % {f()})", lambda: f"float({i()})", lambda: f"float({pick(STR_LITS)})",
            lambda: f"math.sqrt({f()})", lambda: f"({f()} ** {pick(['0.5', '2', '-1', '3', '0.0'])})",
            lambda: f"sum([{f()}, {f()}, {f()}])", lambda: f"abs({f()})", lambda: f"max({f()}, {f()})",
            lambda: f"min({f()}, {i()})", lambda: "math.pi", lambda: "math.e", lambda: f"math.log({f()})",
            lambda: f"math.log10({f()})", lambda: f"math.log({f()}, 2)", lambda: f"math.exp({f()})", lambda: f"math.sin({f()})",
            lambda: f"math.fabs({f()})", lambda: f"math.fsum([{f()}, {f()}, {f()}])", lambda: f"math.hypot({f()}, {f()})",
            lambda: f"({i()} * 1.0)", lambda: f"(-{f()})", lambda: f"math.trunc({f()}) * 1.5",
            lambda: f"sum({self.list_int(d + 1)}) / len({self.list_int(d + 1)})", lambda: f"math.copysign({f()}, {f()})",
            lambda: f"divmod({f()}, {f()})[1]", lambda: f"math.fmod({f()}, {f()})",
        ]
        return pick(forms)()

    def str_(self, d=0):
        v = self.var("str")
        if v and R.random() < 0.4:
            return v
        if d > 2 or R.random() < 0.25:
            return pick(STR_LITS)
        i, f, s = (lambda: self.int_(d + 1)), (lambda: self.float_(d + 1)), (lambda: self.str_(d + 1))
        spec_f = pick([".2f", ".0f", ".3e", "e", "g", ".3g", ".1%", ",", ",.2f", "10.2f", "<10", ">12.3f", "+.1f", "^9", "08.3f", "", ".10g", "_.2f", " .2f"])
        spec_i = pick(["d", "05d", ",", "_", "x", "X", "#x", "o", "b", "#b", "+d", " d", ">8", "<6", "^7", "*^9", "08,", "e", ".2f", "c", "n"])
        spec_s = pick(["", ">10", "<10", "^10", "*>8", ".3", "10.2", "s"])
        forms = [
            lambda: f"({s()} + {s()})", lambda: f"({s()} * {R.randint(-1, 3)})", lambda: f"{s()}.upper()",
            lambda: f"{s()}.lower()", lambda: f"{s()}.strip()", lambda: f"{s()}.title()", lambda: f"{s()}.capitalize()",
            lambda: f"{s()}.swapcase()", lambda: f"{s()}.casefold()", lambda: f"{s()}.replace({s()}, {s()})",
            lambda: f"{s()}[{R.randint(-3, 3)}:{R.randint(-3, 5)}]", lambda: f"{s()}[::-1]", lambda: f"{s()}[::{pick(['2', '-2', '3'])}]",
            lambda: f"str({self.any_(d + 1)})", lambda: f"repr({self.any_(d + 1)})", lambda: f"f'{{{self.v('float')}:{spec_f}}}'",
            lambda: f"f'{{{self.v('int')}:{spec_i}}}'", lambda: f"f'{{{self.v('str')}:{spec_s}}}'", lambda: f"f'{{{self.v('str')}!r}} and {{{self.v('int')}}}'",
            lambda: f"f'{{{self.v(None)}}}'", lambda: f"f'{{{self.v(None)}=}}'", lambda: f"f'{{{self.v(None)}!s:>20}}|'",
            lambda: f"'%s|%d|%.3f|%r' % ({s()}, {i()}, {f()}, {s()})", lambda: f"'%5s|%-5d|%05.1f|%x' % ({s()}, {i()}, {f()}, {i()})",
            lambda: f"'{{}} {{}}'.format({self.any_(d + 1)}, {self.any_(d + 1)})", lambda: f"'{{:>8}}|{{:.2f}}'.format({s()}, {f()})",
            lambda: f"'{{0}}{{1}}{{0}}'.format({s()}, {i()})", lambda: f"'{{name}}!'.format(name={s()})",
            lambda: f"{s()}.join({self.list_str(d + 1)})", lambda: f"{s()}.zfill({R.randint(0, 8)})",
            lambda: f"{s()}.center({R.randint(0, 12)}, '*')", lambda: f"{s()}.ljust({R.randint(0, 10)}, '.')", lambda: f"{s()}.rjust({R.randint(0, 10)})",
            lambda: f"chr({pick(['65', '97', '955', '128512', '0x263A'])})", lambda: f"json.dumps({self.any_(d + 1)})",
            lambda: f"json.dumps({self.any_(d + 1)}, indent={pick(['2', '0', 'None'])})", lambda: f"json.dumps({self.dict_(d + 1)}, sort_keys=True)",
            lambda: f"json.dumps({self.any_(d + 1)}, ensure_ascii=False)", lambda: f"json.dumps({self.any_(d + 1)}, separators=(',', ':'))",
            lambda: f"{s()}.partition({s()})[{R.randint(0, 2)}]", lambda: f"{s()}.rpartition({s()})[{R.randint(0, 2)}]",
            lambda: f"{s()}.lstrip({s()})", lambda: f"{s()}.rstrip({s()})", lambda: f"{s()}.removeprefix({s()})", lambda: f"{s()}.removesuffix({s()})",
            lambda: f"hex({i()})", lambda: f"oct({i()})", lambda: f"bin({i()})", lambda: f"format({f()}, {pick(['.3g', '.2f', ',', 'e', '.1%'])!r})",
            lambda: f"format({i()}, {pick(['x', ',', '08b', '>5'])!r})", lambda: f"ascii({s()})", lambda: f"{s()}.expandtabs({R.randint(0, 8)})",
            lambda: f"str({i()})", lambda: f"str({f()})", lambda: f"repr({f()})", lambda: f"{s()}.split()[{R.randint(-2, 2)}]",
            lambda: f"{s()}.split({s()})[{R.randint(-2, 2)}]", lambda: f"' '.join(sorted({s()}))", lambda: f"''.join(reversed({s()}))",
            lambda: f"'-'.join(w.capitalize() for w in {s()}.split('_'))", lambda: f"{s()}.encode().hex()",
            lambda: f"'{{:,}}'.format({i()})", lambda: f"'{{:.{R.randint(0, 4)}f}}'.format({f()})", lambda: f"{s()}.center({R.randint(0, 9)})",
            lambda: f"str({self.bool_(d + 1)})", lambda: f"{s()}.strip({s()})", lambda: f"max({self.list_str(d + 1)})",
            lambda: f"min({self.list_str(d + 1)}, key=len)", lambda: f"{s()}.format({s()})", lambda: f"{s()}.translate({{ord('a'): 'A'}})",
        ]
        return pick(forms)()

    def bool_(self, d=0):
        i, f, s = (lambda: self.int_(d + 1)), (lambda: self.float_(d + 1)), (lambda: self.str_(d + 1))
        forms = [
            lambda: f"({i()} < {i()})", lambda: f"({f()} == {f()})", lambda: f"({s()} < {s()})", lambda: f"({i()} == {f()})",
            lambda: f"{s()}.startswith({s()})", lambda: f"{s()}.endswith(({s()}, {s()}))", lambda: f"{s()}.isdigit()",
            lambda: f"{s()}.isalpha()", lambda: f"{s()}.isalnum()", lambda: f"{s()}.isspace()", lambda: f"{s()}.isupper()",
            lambda: f"{s()}.islower()", lambda: f"{s()}.istitle()", lambda: f"{s()}.isnumeric()", lambda: f"{s()}.isdecimal()",
            lambda: f"{s()}.isidentifier()", lambda: f"({i()} in {self.list_int(d + 1)})", lambda: f"({s()} in {s()})",
            lambda: f"({s()} in {self.dict_(d + 1)})", lambda: f"(not {i()})", lambda: f"any({self.list_int(d + 1)})",
            lambda: f"all({self.list_int(d + 1)})", lambda: f"isinstance({self.any_(d + 1)}, {pick(['int', 'float', 'str', 'bool', 'list', 'dict', '(int, float)'])})",
            lambda: f"({f()}).is_integer()", lambda: f"math.isclose({f()}, {f()})", lambda: f"math.isnan({f()})", lambda: f"math.isinf({f()})",
            lambda: f"({self.list_int(d + 1)} == {self.list_int(d + 1)})", lambda: f"({self.list_int(d + 1)} < {self.list_int(d + 1)})",
            lambda: f"(({i()}, {s()}) < ({i()}, {s()}))", lambda: f"({self.set_(d + 1)} <= {self.set_(d + 1)})", lambda: f"bool({s()})",
            lambda: f"({i()} is None)", lambda: f"({self.dict_(d + 1)} == {self.dict_(d + 1)})", lambda: f"(1 < {i()} <= 10)",
        ]
        return pick(forms)()

    def list_int(self, d=0):
        v = self.var("list_int")
        if v and R.random() < 0.5:
            return v
        if d > 2 or R.random() < 0.3:
            return "[" + ", ".join(pick(INT_LITS[:14]) for _ in range(R.randint(0, 6))) + "]"
        i, l = (lambda: self.int_(d + 1)), (lambda: self.list_int(d + 1))
        forms = [
            lambda: f"sorted({l()})", lambda: f"sorted({l()}, reverse=True)", lambda: f"sorted({l()}, key=lambda x: (x % 3, -x))",
            lambda: f"({l()} + {l()})", lambda: f"({l()} * 2)", lambda: f"{l()}[::-1]", lambda: f"{l()}[{R.randint(-3, 3)}:]",
            lambda: f"list(reversed({l()}))", lambda: f"[x * 2 for x in {l()} if x % 2]", lambda: f"list(range({R.randint(-5, 5)}, {R.randint(-5, 12)}, {pick(['1', '2', '-1', '3'])}))",
            lambda: f"list(map(abs, {l()}))", lambda: f"list(filter(None, {l()}))", lambda: f"sorted(set({l()}))", lambda: f"list(set({l()}))",
            lambda: f"list({self.set_(d + 1)})", lambda: f"[len(w) for w in {self.list_str(d + 1)}]", lambda: f"list({self.dict_(d + 1)}.values())",
            lambda: f"[a * b for a, b in zip({l()}, {l()})]", lambda: f"[i for i, x in enumerate({l()}) if x > 0]",
            lambda: f"list(divmod({i()}, {i()}))", lambda: f"[x for x in range(20) if x % {pick(['3', '4', '7'])} == 0]",
            lambda: f"sorted({l()}, key=abs)", lambda: f"[max(x, 0) for x in {l()}]", lambda: f"list(dict.fromkeys({l()}))",
            lambda: f"[ord(c) for c in {self.str_(d + 1)}]", lambda: f"{l()}[:{R.randint(0, 4)}] or [0]",
        ]
        return pick(forms)()

    def list_str(self, d=0):
        v = self.var("list_str")
        if v and R.random() < 0.5:
            return v
        if d > 2 or R.random() < 0.3:
            return "[" + ", ".join(pick(STR_LITS) for _ in range(R.randint(0, 5))) + "]"
        s, l = (lambda: self.str_(d + 1)), (lambda: self.list_str(d + 1))
        forms = [
            lambda: f"{s()}.split()", lambda: f"{s()}.split({s()})", lambda: f"{s()}.split(',', {R.randint(-1, 2)})",
            lambda: f"{s()}.rsplit(None, 1)", lambda: f"{s()}.splitlines()", lambda: f"sorted({l()})", lambda: f"sorted({l()}, key=str.lower)",
            lambda: f"sorted({l()}, key=len, reverse=True)", lambda: f"[w.strip() for w in {l()}]", lambda: f"list({s()})",
            lambda: f"list(map(str, {self.list_int(d + 1)}))", lambda: f"list({self.dict_(d + 1)})", lambda: f"list({self.dict_(d + 1)}.keys())",
            lambda: f"[f'{{k}}={{v}}' for k, v in {self.dict_(d + 1)}.items()]", lambda: f"[f'{{k!r}}:{{v:>4}}' for k, v in {self.dict_(d + 1)}.items()]", lambda: f"sorted({self.dict_(d + 1)}, key=lambda k: -len(k))",
            lambda: f"{l()}[::-1]", lambda: f"[w for w in {l()} if w]", lambda: f"{s()}.partition({s()})",
        ]
        return pick(forms)()

    def dict_(self, d=0):
        v = self.var("dict")
        if v and R.random() < 0.5:
            return v
        if d > 2 or R.random() < 0.3:
            keys = R.sample(["'a'", "'b'", "'z'", "'key'", "'name'", "'x y'", "'1'", "'é'"], R.randint(0, 4))
            return "{" + ", ".join(f"{k}: {pick(INT_LITS[:12])}" for k in keys) + "}"
        s, i, dd = (lambda: self.str_(d + 1)), (lambda: self.int_(d + 1)), (lambda: self.dict_(d + 1))
        forms = [
            lambda: f"{{**{dd()}, {s()}: {i()}}}", lambda: f"({dd()} | {dd()})", lambda: f"dict(sorted({dd()}.items()))",
            lambda: f"dict(sorted({dd()}.items(), key=lambda kv: kv[1]))", lambda: f"{{k: v * 2 for k, v in {dd()}.items()}}",
            lambda: f"dict(zip({self.list_str(d + 1)}, {self.list_int(d + 1)}))", lambda: f"dict.fromkeys({self.list_str(d + 1)}, {i()})",
            lambda: f"{{w: len(w) for w in {self.list_str(d + 1)}}}", lambda: f"{{str(x): x for x in {self.list_int(d + 1)}}}",
            lambda: f"dict({dd()}, extra={i()})", lambda: f"{{k: v for k, v in {dd()}.items() if v > {i()}}}",
        ]
        return pick(forms)()

    def set_(self, d=0):
        if d > 2 or R.random() < 0.4:
            return "{" + ", ".join(pick(INT_LITS[:14]) for _ in range(R.randint(1, 6))) + "}"
        l, ss = (lambda: self.list_int(d + 1)), (lambda: self.set_(d + 1))
        forms = [lambda: f"set({l()})", lambda: f"({ss()} | {ss()})", lambda: f"({ss()} & {ss()})", lambda: f"({ss()} - {ss()})",
                 lambda: f"({ss()} ^ {ss()})", lambda: f"{{x % 5 for x in {l()}}}", lambda: f"frozenset({l()})"]
        return pick(forms)()

    def any_(self, d=0):
        t = pick(["int", "float", "str", "bool", "list_int", "list_str", "dict", "set", "tuple", "none"])
        if t == "tuple":
            return f"({self.int_(d + 1)}, {self.str_(d + 1)})"
        if t == "none":
            return "None"
        return getattr(self, {"int": "int_", "float": "float_", "str": "str_", "bool": "bool_", "dict": "dict_", "set": "set_"}.get(t, t))(d)


BANNED = ["set(", "frozenset", "{2", "{-", "{0", "{1", "{3", "{4", "{7", "{x", "translate", "bit_length", "is_integer", "hash(", "set_"]


def friendly(fn):
    if ALL:
        return fn()
    for _ in range(50):
        e = fn()
        if not any(b in e for b in BANNED):
            return e
    return "0"


def statements(g, n):
    """A model-like block of statements (functions, loops, closures,
    grouping, exceptions, formatting), over the script's variables."""
    i, s, li, ls, d = g.v("int"), g.v("str"), g.v("list_int"), g.v("list_str"), g.v("dict")
    k = R.randint(-3, 60)
    blocks = [
        f"def f{n}(x, y=2, *rest, **kw):\n    return [x, y, list(rest), sorted(kw.items())]\nprint(f{n}({i}, {s}), f{n}({i}, {k}, {k}, z={i}))",
        f"acc = []\nfor idx, val in enumerate({li}):\n    if val > {k}:\n        break\n    acc.append(idx * val)\nelse:\n    acc.append('no break')\nprint(acc)",
        f"m = abs({i}) % 1000\nsteps = 0\nwhile m > 1 and steps < 60:\n    m = m // 2 if m % 2 == 0 else 3 * m + 1\n    steps += 1\nprint(steps, m)",
        f"def make(k):\n    total = 0\n    def add(x):\n        nonlocal total\n        total += x * k\n        return total\n    return add\nadder = make({k})\nprint([adder(v) for v in {li}])",
        f"groups = {{}}\nfor w in {ls}:\n    groups.setdefault(len(w), []).append(w)\nprint(groups, sorted(groups.items()))",
        f"rows = []\nfor key, val in {d}.items():\n    rows.append(f'{{key:<8}}|{{val:>6}}|{{val / 3:.2f}}|{{val:,}}')\nprint(chr(10).join(rows))",
        f"for bad in [lambda: int({s}), lambda: [][{k}], lambda: {d}[{s}], lambda: None + 1, lambda: {s} + 1, lambda: {li}.index({k}), lambda: {s}.index('?'), lambda: 1 / 0, lambda: float('x'), lambda: {{}}.pop('k'), lambda: [1, 2][::0]]:\n    try:\n        print('ok', repr(bad()))\n    except Exception as e:\n        print(type(e).__name__, e, repr(e))",
        f"print(sorted({d}.items(), key=lambda kv: (-kv[1], kv[0])), sorted({ls}, key=lambda w: (len(w), w.lower())))",
        f"vals = {li} or [0]\nmean = sum(vals) / len(vals)\nprint(f'{{mean:.3f}} {{max(vals) - min(vals)}} {{sorted(vals)[len(vals) // 2]}}', round(mean, 2), round(mean))",
        f"try:\n    try:\n        raise ValueError({s})\n    finally:\n        print('inner finally')\nexcept ValueError as e:\n    print('caught', repr(e), str(e), e.args)\nelse:\n    print('no error')",
        f"text = ' '.join({ls}) or {s}\nwords = text.split()\nprint(len(words), text.count(' '), text.upper()[:{k}], {{w: words.count(w) for w in words}})",
        f"stack = list({li})\nout = []\nwhile stack:\n    top = stack.pop()\n    if top % 3 == 0:\n        continue\n    out.append(top)\nprint(out, [x for x in out if x > 0][:2], any(x < 0 for x in out))",
        f"matrix = [[r * c for c in range({R.randint(1, 4)})] for r in range({R.randint(1, 4)})]\nprint(matrix, [list(col) for col in zip(*matrix)], sum(map(sum, matrix)))",
        f"print(json.dumps({d}, indent=2), json.loads(json.dumps({ls})), json.dumps({{'n': {i}, 'f': 1.5, 's': {s}, 'l': {li}}}, sort_keys=True))",
    ]
    return R.choice(blocks)


def script(g):
    lines = ["import json", "import math", "", "results = []", ""]
    for t, fn in [("int", g.int_), ("float", g.float_), ("str", g.str_), ("list_int", g.list_int), ("list_str", g.list_str), ("dict", g.dict_)]:
        name = f"{t.split('_')[0][0]}{t[-1]}{len(lines)}"
        expr = friendly(lambda: fn(1))
        lines += ["try:", f"    {name} = {expr}", "except Exception as e:", f"    {name} = {pick(INT_LITS[:10]) if t == 'int' else {'float': '1.5', 'str': repr('fallback'), 'list_int': '[1, 2]', 'list_str': repr(['p', 'q']), 'dict': repr({'k': 1})}[t]}"]
        g.vars[t].append(name)
    lines.append("")
    for n in range(12):
        expr = friendly(lambda: g.any_(0))
        lines += ["try:", f"    v = {expr}", f"    results.append(v)", f"    print({n}, type(v).__name__, repr(v))",
                  "except Exception as e:", f"    print({n}, 'raised', type(e).__name__, str(e))"]
    for n in range(3):
        lines += ["try:"] + ["    " + line for line in statements(g, n).split("\n")] + ["except Exception as e:", "    print('block raised', type(e).__name__, str(e))"]
    li = g.vars["list_int"][0]
    di = g.vars["dict"][0]
    muts = [f"{li}.append({g.int_(1)})", f"{li}.sort()", f"{li}.insert({R.randint(-3, 3)}, {g.int_(1)})", f"{li}.extend({g.list_int(1)})",
            f"{li}.pop()", f"{li}.remove({g.int_(1)})", f"{li}.reverse()", f"{li}.sort(key=lambda x: -x)", f"{di}[{g.str_(1)}] = {g.int_(1)}",
            f"{di}.setdefault({g.str_(1)}, []) ", f"{di}.update({g.dict_(1)})", f"{di}.pop({g.str_(1)}, None)", f"{di}.popitem()", f"{li}[{R.randint(-2, 2)}] = {g.int_(1)}",
            f"{li}[1:3] = {g.list_int(1)}", f"{li} += {g.list_int(1)}", f"{di}.clear()"]
    allowed = [m for m in muts if ALL or not any(b in m for b in BANNED)]
    for m in R.sample(allowed, min(5, len(allowed))):
        lines += ["try:", f"    {m}", "except Exception as e:", "    print('mutation raised', type(e).__name__, str(e))"]
    lines += [f"print({li}, {di})", ""]
    lines.append(pick([f"{{'results': results, 'list': {li}, 'dict': {di}}}", "results", f"[{li}, {di}, len(results)]", f"str(results)"]))
    return "\n".join(lines) + "\n"


ALL = "--all" in sys.argv
MODULES = "--modules" in sys.argv
PROGRAMS = "--programs" in sys.argv
ONE = "--one" in sys.argv  # programs of one block each


def main():
    args = [a for a in sys.argv[1:] if a not in ("--all", "--modules", "--programs", "--one")]
    out, n = args[0], int(args[1])
    seed = int(args[2]) if len(args) > 2 else 0
    os.makedirs(out, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import modules
    import programs

    modules.R = programs.R = R
    for k in range(n):
        R.seed(seed * 1_000_003 + k)
        if PROGRAMS:
            name, text = f"p{seed}_{k:05}.py", programs.script(ALL, ONE)
        elif MODULES:
            name, text = f"m{seed}_{k:05}.py", modules.script(ALL)
        else:
            name, text = f"g{seed}_{k:05}.py", script(Gen())
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
