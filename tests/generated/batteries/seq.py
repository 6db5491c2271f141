PRELUDE = ""
SEQ = ["[1, 2, 3, 4, 5]", "[]", "(1, 'a', 2.5)", "'hello'", "b'bytes'", "range(10)", "range(10, 0, -3)", "(3,)", "[[1], [2, 3]]", "bytearray(b'xyz')", "[0, 0.0, False]", "'é😀x'"]
IX = ["0", "1", "-1", "2", "-6", "5", "10", "-100", "10**20", "-10**20", "None", "True", "1.0", "'a'", "2**31", "-2**63"]
ST = ["None", "1", "2", "-1", "-2", "3", "0", "10**20", "-10**20", "True", "-3", "100"]
C = ["[1, 2]", "[1, 2, 3]", "[1, 'a']", "(1, 2)", "(1.0, 2)", "[]", "()", "[[1]]", "{1, 2}", "{1}", "frozenset({1, 2})", "{'a': 1}", "{'a': 1.0}", "'ab'", "b'ab'", "[1, None]", "[float('nan')]", "(True, 2)", "{}.keys()", "{1: 2}.keys()", "{1: 2}.items()", "[2]", "set()", "frozenset()"]
V = ["1", "'a'", "(1, 2)", "[1]", "2.0", "None", "True", "{1}", "b'a'", "-0.0", "3", "'x'"]
D = ["{'a': 1, 'b': 2}", "{1: 'x', 2: 'y', 3: 'z'}", "{}", "{True: 1, 1.0: 2}", "{'b': 0, 'a': 1, (1, 2): 3}", "dict.fromkeys('abc', 0)"]
S = ["{1, 2, 3}", "set()", "{1, 'a'}", "frozenset({2, 3})", "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}", "{True, 2}", "set('abc')", "frozenset()", "{5, 3, 1}", "[1, 2]", "range(3)", "'ab'", "{1: 0}", "{(1, 2), (3,)}"]
K = ["None", "len", "str", "abs", "lambda x: -x if isinstance(x, int) else 0", "lambda x: str(x)[::-1]", "lambda x: x % 3 if isinstance(x, int) else 0", "str.lower", "repr"]
IT = ["[3, 1, 2]", "['b', 'A', 'a', 'B']", "[(1, 'b'), (0, 'a'), (1, 'a')]", "[5, -1, 0, 5, -1]", "[1, 'a']", "[]", "'hello'", "range(5)", "[2.5, 1, True, 0]", "[[2], [1, 3], []]", "{'x': 1, 'y': 0}", "[-3, 3, -2, 2]"]
DU = ["[(1, 2)]", "[(9,)]", "None", "zip('ab', 'cd')", "['ab']"]
N = ["0", "1", "-1", "2", "True", "False", "3", "-5", "2.0", "'2'", "None"]
def expr(rng):
    k = rng.choice
    s, i, j, st = k(SEQ), k(IX), k(IX), k(ST)
    a, b, v, d, d2, x, y = k(C), k(C), k(V), k(D), k(D), k(S), k(S)
    it, key, n = k(IT), k(K), k(N)
    L = "L = list(range(8))"
    return k([
        f"{s}[{i}]", f"{s}[{i}:{j}]", f"{s}[{i}:{j}:{st}]", f"{s}[::{st}]", f"{s}[slice({i}, {j}, {st})]", f"slice({i}, {j}, {st}).indices(7)", f"range(20)[{i}:{j}:{st}]",
        f"STMT:{L}\nL[{i}:{j}] = {k(SEQ)}\nreturn L", f"STMT:{L}\nL[{i}:{j}:{st}] = {k(SEQ)}\nreturn L", f"STMT:{L}\ndel L[{i}:{j}:{st}]\nreturn L", f"STMT:{L}\ndel L[{i}]\nreturn L",
        f"STMT:{L}\nL[::{st}] = [0] * {k(['0', '1', '3', '4', '8'])}\nreturn L", f"STMT:L = bytearray(b'abcdef')\nL[{i}:{j}:{st}] = b'xy'\nreturn L",
        f"STMT:{L}\nL.insert({i}, 'x')\nreturn L", f"STMT:{L}\nreturn L.pop({i}), L", f"STMT:L = [1, 'a', 2, 'a']\nL.remove({v})\nreturn L", f"STMT:L = [1, 'a', 2, 'a', 1]\nreturn L.index({v}, {i}, {j})",
        f"[1, 'a', 2, 'a'].index({v})", f"(1, 'a', 2, 'a').index({v}, {i})", f"'abcabc'.index('c', {i}, {j})", f"[].pop()", f"STMT:L = list({it})\nL.sort(key={key}, reverse={k(['True', 'False', '1', '0'])})\nreturn L",
        f"STMT:L = list({it})\nL.reverse()\nL.extend({k(SEQ)})\nM = L.copy()\nL.clear()\nreturn L, M", f"STMT:L = [1]\nL.extend({v})\nreturn L", f"STMT:L = [1]\nL += {k(SEQ)}\nreturn L",
        f"{a} < {b}", f"{a} <= {b}", f"{a} == {b}", f"{a} > {b}", f"{a} != {b}", f"{v} in {a}", f"{v} not in {k(SEQ)}", f"{a} + {b}", f"{a} - {b}", f"{a} | {b}", f"{a} & {b}", f"{a} ^ {b}",
        f"STMT:a, *b, c = {k(SEQ)}\nreturn a, b, c", f"STMT:a, b = {k(SEQ)}\nreturn a, b", f"STMT:*a, b = {k(SEQ)}\nreturn a, b", f"STMT:(a, b), c = {k(SEQ)}\nreturn a, b, c", f"STMT:[a] = {k(SEQ)}\nreturn a",
        f"{d}.keys() & {y}", f"{d}.keys() | {y}", f"{d}.keys() ^ {y}", f"{d}.keys() - {y}", f"{y} - {d}.keys()", f"{d}.items() | {{('a', 1), ('q', 9)}}", f"{d}.items() & {d2}.items()", f"{d}.items() - {d2}.items()",
        f"{d}.keys() == {y}", f"{d}.keys() <= {d2}.keys()", f"{d}.keys().isdisjoint({y})", f"{d}.values() == {d}.values()", f"list(reversed({d}.items()))", f"list(reversed({d}.values()))", f"list(reversed({d}))",
        f"{d} | {d2}", f"STMT:d = {d}\nd |= {k([d2] + DU)}\nreturn d", f"STMT:d = {d}\nfor q in list(d)[:1]:\n    v = d.pop(q)\n    d[q] = v\nd['n'] = 0\nreturn d, list(d.items())",
        f"STMT:d = {d}\nd.update({d2}, z=1)\nreturn d.popitem(), d", f"{d} == {d2}", f"{d} < {d2}", f"(repr({d}.keys()), repr({d}.items()), repr({d}.values()))", f"dict({d}, **{{'a': 9}})", f"{d}.setdefault('a')",
        f"{x} | {y}", f"{x} & {y}", f"{x} ^ {y}", f"{x} - {y}", f"{x} < {y}", f"{x} <= {y}", f"{x} == {y}", f"set({x}).issubset({y})", f"set({x}).issuperset({y})", f"set({x}).isdisjoint({y})",
        f"set({x}).union({y}, {k(S)})", f"frozenset({x}).intersection({y})", f"set({x}).difference({y}, [1])", f"set({x}).symmetric_difference({y})", f"STMT:s = set({x})\ns.symmetric_difference_update({y})\nreturn s",
        f"STMT:s = set({x})\ns.intersection_update({y})\ns.difference_update([1])\nreturn s", f"STMT:s = {{3, 1, 2, 0, 7}}\nreturn s.pop(), s.pop(), s", f"set().pop()", f"STMT:s = set({x})\ns.remove({v})\nreturn s", f"STMT:s = set({x})\ns.discard({v})\nreturn s",
        f"repr({x})", f"repr(frozenset({x}))", f"{x} | frozenset()", f"frozenset({x}) | set()", f"type(frozenset({x}) | set()).__name__", f"type(set({x}) & frozenset()).__name__",
        f"STMT:l = [1, 2]\nl.append(l)\nreturn repr(l), str(l)", f"STMT:d = {{'a': 1}}\nd['s'] = d\nreturn repr(d)", f"STMT:l = [1]\nd = {{'k': l}}\nl.append(d)\nreturn repr(l), repr((l, d))", f"STMT:l = []\nl.append((l,))\nreturn repr(l)",
        f"repr([[], ((), {{}}), {{1: [set(), frozenset()]}}])", f"repr({{'a': [1, (2,)], 'b': {{'c': (3, [4])}}}})",
        f"sorted({it}, key={key})", f"sorted({it}, key={key}, reverse=True)", f"min({it}, key={key})", f"max({it}, key={key}, default='d')", f"min({it}, default=None)", f"max({it})", f"min({v}, {v})", f"max(1, 2, key=str, default=0)", f"min([], key=len)",
        f"list(zip({k(SEQ)}, {k(SEQ)}, strict=True))", f"list(zip({k(SEQ)}, {k(SEQ)}, {k(SEQ)}, strict=True))", f"list(enumerate({k(SEQ)}, start={n}))", f"list(enumerate({k(SEQ)}, {n}))", f"list(enumerate('ab', {k(['2**70', '-2**70', '2**63 - 1'])}))",
        f"list(reversed({k(SEQ)}))", f"list(reversed(range({i})))", f"reversed({k(['{1}', '{}.keys()', 'iter([1])', '5'])})",
        f"STMT:x = 'outer'\nr = [x for x in range(3)]\nreturn x, r", f"STMT:y = 5\nr = [y * i for i in range(3) if i != y]\nreturn r", f"STMT:r = {{i: [i * j for j in range(i)] for i in range(4)}}\nreturn r", f"[(i, j) for i in range(3) for j in range(i)]", f"{{c: i for i, c in enumerate('abca')}}",
        f"{k(SEQ)} * {n}", f"{n} * {k(SEQ)}", f"{a} * {n}", f"STMT:L = [1, 2]\nL *= {n}\nreturn L", f"[[]] * 2", f"STMT:L = [[]] * 3\nL[0].append(1)\nreturn L",
        f"STMT:x = {v}\nx {k(['+', '-', '*', '/', '//', '%', '**', '<<', '&', '|', '^'])}= {k(V)}\nreturn x", f"STMT:L = [{v}]\nL[0] {k(['-', '*', '|'])}= {k(V)}\nreturn L",
        f"STMT:a, b = float('nan'), float('nan')\nreturn [a] == [b], a in [b], len({{a: 1, b: 2}}), [a, b].count(a), (a,) == (a,)",
        f"len({k(SEQ)})", f"{k(SEQ)}.count({v})", f"list({d}.items())[{i}:{j}]", f"tuple({x}) if len({x}) < 2 else len({x})",
    ])
