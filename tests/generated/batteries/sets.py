PRELUDE = """from decimal import Decimal
from datetime import timedelta
def ior(s, t):
    s |= t
    return s
def isub(s, t):
    s -= t
    return s
def ixor(s, t):
    s ^= t
    return s
def iand(s, t):
    s &= t
    return s"""
# Sets whose order CPython fixes: ints (small, past the table, past 2**61,
# negative), tuples, floats, Decimals, timedeltas, frozensets. Strings are
# left out: CPython randomises their hashes per process. Displays of three
# or more constants are written `set([...])`: CPython 3.11 (a reference
# runner's) rebuilt such a constant from its own order, 3.14 does not.
S = ["set(range(0, 90, 7))", "{x * 37 % 101 for x in range(40)}", "set([16, 1, 2, 3, 4])", "set([(1, 2), (3, 4), (0, 5), (7, 7)])",
     "set([1.5, 2.25, -0.5, 100.0, 1e10, 0.1])", "set([2**61 - 1, 2**61, 2**64, -2**70, 5])", "set([-1, -2, 0, 8, 64, 1024])", "set()",
     "{Decimal('1.5'), Decimal('10'), 3, 2.5}", "{timedelta(1), timedelta(0, 5), timedelta(-3)}", "{frozenset([1]), frozenset(), frozenset([2, 3])}",
     "set([True, 2, (0.5,), 3.0])", "frozenset(range(64, 80))", "set({16: 0, 1: 0, 32: 0, 3: 0, 48: 0})", "set([16, 1, 2, 3, 4, 33])"]
V = ["0", "1", "16", "64", "(1, 2)", "2**61", "-1", "1.5", "100", "2**70"]
def expr(rng):
    k = rng.choice
    a, b, v, w = k(S), k(S), k(V), k(V)
    return k([
        f"list({a})", f"repr({a})", f"list({a} | {b})", f"list({a} & {b})", f"list({a} - {b})", f"list({a} ^ {b})",
        f"(lambda s: (s.add({v}), s.discard({w}), list(s))[2])(set({a}))", f"(lambda s: [s.pop() for _ in range(min(3, len(s)))] + list(s))(set({a}))",
        f"list(ior(set({a}), {b}))", f"(lambda s: (s.add({v}), list(s))[1])(isub(set({a}), {b}))",
        f"list(ixor(set({a}), {b}))", f"list(iand(set({a}), {b}))",
        f"list(set({a}).union([{v}, {w}], {b}))", f"list(set({a}).intersection({b}, [{v}]))", f"list(set({a}).difference([{v}], {b}))",
        f"list(set({a}).symmetric_difference([{v}, {w}]))", f"(lambda s: (s.update([{v}], {b}), list(s))[1])(set({a}))",
        f"(lambda s: (s.difference_update([{v}], {b}), list(s))[1])(set({a}))", f"(lambda s: (s.intersection_update({b}), list(s))[1])(set({a}))",
        f"(lambda s: (s.symmetric_difference_update([{v}, {w}]), list(s))[1])(set({a}))", f"list(set({a}).copy())",
        f"[x for x in {a}]", f"[x for x in {{3, 40, 99, 1000}}]", f"list(frozenset({a}) | frozenset({b}))", f"hash(frozenset({a}))", f"hash({v})", f"hash(({v}, {w}))",
        f"sorted({a}, key=repr)", f"list(dict.fromkeys({a}))", f"list(map(repr, {a}))", f"str({a})",
    ])
