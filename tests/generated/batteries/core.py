PRELUDE = "import json"
NUMS = ["'  12  '", "'1_0'", "'0x1f'", "'١٢٣'", "'1e5'", "' nan '", "'-infinity'", "'+0.5'", "'.5'", "'5.'", "'1_000.5'", "'0b101'", "'0o17'", "'12abc'", "''", "'-'", "'1__0'", "'_1'", "'１２'", "'1e-400'", "'1e400'", "'0.1e-2'", "'00'", "'007'", "'-0'", "'2**3'", "' 3 '", "'\\t4\\n'", "'9' * 30", "'1.5e+3'", "'INF'", "'NaN'", "'-nan'"]
BASES = ["0", "2", "8", "10", "16", "36", "37", "1"]
VALS = ["1", "-3", "2.5", "-0.0", "1e16", "1e-7", "123456789.123", "float('nan')", "float('inf')", "10**20", "True", "None", "'s'", "'é'", "[1, 'a']", "{'b': 1, 'a': [2.0]}", "(1,)", "''", "0.1 + 0.2", "1/3", "2**63", "-2**63", "1e22", "1e21", "12345678901234567890.0", "5e-324"]
FMT = ["%s", "%r", "%d", "%i", "%5d", "%-5d|", "%05d", "%+d", "% d", "%x", "%X", "%#x", "%o", "%#o", "%e", "%E", "%.2e", "%f", "%.0f", "%10.3f", "%-10.1f|", "%g", "%G", "%.3g", "%#g", "%c", "%%", "%a", "%5s|", "%-5s|", "%.2s", "%*d", "%(k)s", "%u", "%.1%"]
JSONKW = ["", ", indent=2", ", indent=0", ", indent='\\t'", ", sort_keys=True", ", separators=(',', ':')", ", ensure_ascii=False", ", allow_nan=False", ", default=str", ", skipkeys=True", ", indent=-1", ", separators=(';', '=')"]
JV = VALS + ["{1: 'int key', 2.5: 'f', True: 'b', None: 'n'}", "{(1, 2): 'tuple key'}", "[float('-inf'), -0.0, 1e300]", "'\\u2028\\x00\"\\\\'", "{'z': {'y': [[], {}]}}", "b'x'", "{1, 2}", "'😀'", "[[1, [2, [3]]]]"]
LOADS = ["'[1, 2.0, 1e2, -0, -0.0, 1E-2]'", "'{\"a\": 1, \"a\": 2}'", "'NaN'", "'[Infinity, -Infinity]'", "'\"\\\\ud83d\\\\ude00\"'", "' 1 '", "'1 2'", "'[1,]'", "'{\"a\" 1}'", "'\"\\\\x\"'", "'12345678901234567890123'", "'1.0e+999'", "'[]x'", "''", "'{\"b\": 1, \"a\": [true, false, null]}'", "'\"\\t\"'", "'-'", "'01'", "'[1e]'", "'\"abc'"]
def expr(rng):
    k = rng.choice
    v, v2 = k(VALS), k(VALS)
    return k([
        f"int({k(NUMS)})", f"int({k(NUMS)}, {k(BASES)})", f"float({k(NUMS)})", f"complex({k(NUMS)})",
        f"'{k(FMT)}' % ({v},)", f"'{k(FMT)}' % {v}", f"'%s and %r' % ({v}, {v2})", f"'%(k)s|%(k)r' % {{'k': {v}}}", f"'%*.*f' % (8, 2, {v})",
        f"json.dumps({k(JV)}{k(JSONKW)})", f"json.loads({k(LOADS)})", f"json.dumps(json.loads({k(LOADS)}))",
        f"str({v})", f"repr({v})", f"ascii({v})", f"format({v}, '')", f"'{{}}'.format({v})", f"'{{!r:>8}}'.format({v})", f"f'{{{v}=}}'",
        f"{v} + {v2}", f"{v} - {v2}", f"{v} * {v2}", f"{v} / {v2}", f"{v} // {v2}", f"{v} % {v2}", f"{v} ** {v2}", f"divmod({v}, {v2})",
        f"{v} < {v2}", f"{v} == {v2}", f"{v} in {v2}", f"{v}[{v2}]", f"len({v})", f"bool({v})", f"abs({v})", f"-{v}", f"~{v}", f"hash({v}) == hash({v2})",
        f"int({v})", f"float({v})", f"round({v})", f"round({v}, 2)", f"max({v}, {v2})", f"sorted([{v}, {v2}])", f"list({v})", f"dict({v})",
        f"[1, 2, 3].index({v})", f"(lambda L: (L.insert({v}, 'x'), L)[1])([1, 2])", f"[1, 2].pop({v})", f"(lambda L: (L.remove({v}), L)[1])([1, 'a', 2.5])",
        f"{{'a': 1}}.pop({v})", f"{{'a': 1}}.pop({v}, 'd')", f"{{'a': 1}}[{v}]", f"dict.fromkeys([{v}, {v2}])", f"{{'a': 1}} | {v}", f"{{1: 2}}.get({v})",
        f"(lambda d: (d.setdefault({v}, []), d)[1])({{}})", f"(lambda d: (d.update({v}), d)[1])({{'q': 0}})", f"{{}}.popitem()", f"[1, 2, 3][{v}:{v2}]",
        f"'abc'[{v}]", f"'abc' * {v}", f"[0] * {v}", f"{v} * 'ab'", f"'-'.join({v})", f"sum({v})", f"sum([{v}, {v2}])", f"min({v})", f"any({v})",
        f"(lambda L: (L.sort(), L)[1])([{v}, {v2}, {v}])", f"[{v}, {v2}].count({v})", f"({v}, {v2}).index({v2})", f"set([{v}, {v2}]) == {{{v}}}",
        f"chr({v})", f"ord({v})", f"hex({v})", f"oct({v})", f"bin({v})", f"pow({v}, {v2})", f"pow({v}, {v2}, 7)", f"isinstance({v}, (int, float))",
        f"str({v}).zfill(6)", f"range({v})", f"list(range(0, 10, {v}))", f"range(10)[{v}]", f"enumerate({v})", f"next(iter({v}))", f"bytes({v})", f"bytearray({v}) and None",
    ])
