PRELUDE = "def f(a, b=1, *, c=2):\n    return a\ndef g(*args, **kw):\n    return args, kw\nasync def h(x):\n    return x\nclass K:\n    def __init__(self, v):\n        self.v = v\n    def m(self, y):\n        return self.v + y"
V = ["None", "1", "'s'", "[1, 2]", "(1, 2, 3)", "{'a': 1}", "{1, 2}", "2.5", "K(1)", "f", "len", "b'b'", "range(3)", "True", "[]", "''", "K", "print"]
def expr(rng):
    k = rng.choice
    v, w = k(V), k(V)
    return k([
        f"{v} + {w}", f"{v} - {w}", f"{v} * {w}", f"{v} < {w}", f"{v}[0]", f"{v}['a']", f"{v}[1:2]", f"{v}.x", f"{v}.v", f"{v}()", f"len({v})", f"iter({v})",
        f"hash({v})", f"{{{v}: 1}}", f"{{{v}}}", f"int({v})", f"float({v})", f"str({v})", f"-{v}", f"{v} in {w}", f"sorted([{v}, {w}])", f"sum({v})",
        f"f()", f"f(1, 2, 3)", f"f(1, d=4)", f"f(1, c=2, c=3)" if False else "f(1, b=2, c=3)", f"f(a=1, a2=2)", f"f(*{v})", f"f(**{v})", f"g(*{v}, **{w})",
        f"K()", f"K(1, 2)", f"K(1).m()", f"K(1).m(1, 2)", f"K(1).m({v})", f"K.m(1)", f"len()", f"len(1, 2)", f"max()", f"max({v})", f"min([])", f"divmod(1)",
        f"'{{}} {{}}'.format({v})", f"'{{0}} {{2}}'.format({v}, {w})", f"'{{x}}'.format(y=1)", f"'%d' % {v}", f"'%s %s' % ({v},)", f"{v}.append(1)",
        f"dict([{v}])", f"list({v}, {w})", f"[].pop()", f"{{}}.pop('k')", f"[].remove(1)", f"'abc'.index('z')", f"int('x')", f"chr(-1)", f"1 / 0", f"1 // 0", f"1.0 / 0", f"1 % 0", f"0 ** -1", f"0.0 ** -1",
        f"STMT:a, b = {v}\nreturn a, b", f"STMT:a, b, c = {v}\nreturn a", f"STMT:a, *b = {v}\nreturn b", f"STMT:x = {v}\nx += {w}\nreturn x",
        f"STMT:x = {v}\nx[0] = 1\nreturn x", f"STMT:x = {v}\ndel x[0]\nreturn x", f"STMT:for i in {v}:\n    pass\nreturn i", f"STMT:return undefined_name",
        f"STMT:x = {v}\nx.y = 1\nreturn x", f"STMT:y = z + 1\nz = 1", f"STMT:import nosuchmod", f"STMT:from math import nosuch", f"STMT:assert {v} == {w}, 'msg'",
        f"STMT:raise ValueError({v})", f"STMT:raise {v}", f"STMT:with {v} as q:\n    pass", f"STMT:return [*{v}, *{w}]", f"STMT:return {{**{v}}}",
        f"STMT:x = h(1)\nreturn x + 1", f"STMT:return (yield_ := 5)", f"STMT:global gg\nreturn gg", f"STMT:nonlocal_ = 1\nreturn {v} @ {w}",
        f"STMT:try:\n    {{}}['k']\nexcept KeyError as e:\n    return repr(e), str(e), e.args", f"STMT:try:\n    [][1]\nexcept Exception as e:\n    return repr(e)",
        f"STMT:try:\n    int({v})\nexcept (TypeError, ValueError) as e:\n    return type(e).__name__, str(e)",
    ])
