PRELUDE = """import functools, itertools, bisect, copy, dataclasses
from dataclasses import dataclass, field
@dataclass
class A:
    x: int
    y: list = field(default_factory=list)
    z: str = 'z'
@dataclass(frozen=True)
class F:
    p: int = 0
    q: tuple = ()
@dataclass(eq=False)
class N:
    v: int = 1
@dataclass
class B:
    x: int
    w: int = 5
    def __post_init__(self):
        self.x *= 2
ERR = []
try:
    @dataclass
    class M:
        x: int = 1
        y: list = []
except Exception as e:
    ERR.append(type(e).__name__ + ': ' + str(e))
def add(a, b): return a + b
def f3(a, b=2, *c, d=4, **e): return (a, b, c, d, e)"""
IT = ["[3, 1, 2]", "[]", "'abcab'", "range(5)", "[1, 1, 2, 2, 3]", "(5, -1, 0)", "[[1], [2, 3]]", "['b', 'A', 'a']", "[2.5, 1, True]", "{'x': 1, 'y': 2}", "iter([4, 5])", "'a'"]
N = ["0", "1", "2", "3", "-1", "None", "10", "2.0", "True", "'2'"]
FN = ["add", "max", "lambda a, b: a * b", "lambda a, b: [a, b]", "lambda a, b: a - b", "min", "pow"]
SL = ["", ", 1, -1", ", -1, 2", ", 0, 2**70", ", 2", ", 1, None", ", 1, 5, 2", ", None, 3", ", -1", ", 0, 4, 0", ", 1.5", ", None, None, None", ", 2, 1", ", 10**20"]
SO = ["[1, 2, 2, 2, 3, 5]", "[]", "[1]", "['a', 'c', 'e']", "[(1, 'a'), (2, 'b'), (2, 'c')]", "[0.5, 1, 1.5]"]
V = ["2", "0", "6", "'b'", "1.0", "(2, 'b')", "True", "None"]
CP = ["[1, [2, [3]], {'a': (4, [5])}]", "{'k': [1], 'j': {1, 2}}", "(1, [2])", "(1, (2, 3))", "A(1, [2])", "F(1, (2,))", "{1: frozenset({2})}", "'s'", "[b'x', bytearray(b'y')]", "range(3)"]
def expr(rng):
    k = rng.choice
    it, it2, n, fn, so, v, cp = k(IT), k(IT), k(N), k(FN), k(SO), k(V), k(CP)
    lh = k(["0", "1", "-1", "3", "10", "None", "-10", "2"])
    return k([
        f"functools.reduce({fn}, {it})", f"functools.reduce({fn}, {it}, {n})", f"functools.reduce({fn}, {it}, initial={n})", f"functools.reduce({fn})", f"functools.reduce(add, 5)", f"repr(functools.partial(max, {n}, d={n}))", f"functools.partial(f3, 1, x={n})({n}, {n}, d=0)", f"functools.partial(functools.partial(f3, 1), 2)(3)", f"functools.partial(f3, {n}).args", f"functools.partial(f3, a={n}).keywords",
        f"functools.partial(f3, a=1)({n})", f"functools.partial(f3, {n}).func is f3", f"repr(functools.partial(max, key=len))", f"functools.partial({n})",
        f"STMT:@functools.lru_cache(maxsize={lh})\ndef g(x):\n    return x * 2\nr = [g(i % 3) for i in range(7)]\nreturn r, g.cache_info()", f"STMT:@functools.cache\ndef g(x):\n    return [x]\na = g({v})\nreturn a is g({v}), g.cache_info(), g.cache_clear(), g.cache_info()",
        f"STMT:@functools.lru_cache\ndef g(x, y=1):\n    return x + y\nreturn g(1), g(1, 1), g(1, y=1), g(x=1), g.cache_info()", f"STMT:@functools.lru_cache(typed=True)\ndef g(x):\n    return x\nreturn g(1), g(1.0), g(True), g.cache_info()",
        f"STMT:@functools.cache\ndef g(x):\n    return x\nreturn g([1])", f"functools.lru_cache({n})(abs)(-3)", f"STMT:g = functools.cache(abs)\ng(-1)\nreturn g.cache_info()._asdict(), type(g.cache_info()).__name__, g.__name__", f"STMT:g = functools.lru_cache(maxsize=2)(abs)\nreturn [g(i) for i in (1, 2, 1, 3, 1, 2)], g.cache_info()",
        f"list(itertools.accumulate({it}))", f"list(itertools.accumulate({it}, {fn}))", f"list(itertools.accumulate({it}, {fn}, initial={n}))", f"list(itertools.accumulate({it}, initial={n}))", f"list(itertools.chain({it}, {it2}))", f"list(itertools.chain.from_iterable([{it}, {it2}]))", f"list(itertools.chain.from_iterable({it}))",
        f"list(itertools.combinations({it}, {n}))", f"list(itertools.combinations_with_replacement({it}, {n}))[:8]", f"list(itertools.permutations({it}, {n}))[:8]", f"list(itertools.permutations({it}))[:5]", f"list(itertools.product({it}, {it2}))[:8]", f"list(itertools.product({it}, repeat={n}))[:8]", f"list(itertools.product())",
        f"[(k, list(g)) for k, g in itertools.groupby({it})]", f"[(k, list(g)) for k, g in itertools.groupby({it}, key={k(['len', 'bool', 'str', 'lambda x: x == 1', 'type'])})]", f"STMT:gs = list(itertools.groupby({it}))\nreturn [(k, list(g)) for k, g in gs]",
        f"list(itertools.islice({it}{k(SL)}))", f"list(itertools.islice(itertools.count({n}{k(['', ', 2', ', -0.5', ', 0'])}), 5))", f"list(itertools.islice(itertools.cycle({it}), 7))", f"list(itertools.repeat({v}, {n}))", f"list(itertools.islice(itertools.repeat({v}), 3))",
        f"list(itertools.starmap({fn}, [({n}, {n}), (2, 3)]))", f"list(itertools.starmap(add, {it}))", f"list(itertools.takewhile(bool, {it}))", f"list(itertools.dropwhile(lambda x: x != 2, {it}))", f"list(itertools.filterfalse({k(['None', 'bool', 'lambda x: x == 1'])}, {it}))",
        f"list(itertools.zip_longest({it}, {it2}))", f"list(itertools.zip_longest({it}, {it2}, fillvalue={v}))", f"list(itertools.zip_longest())", f"list(itertools.pairwise({it}))", f"list(itertools.batched({it}, {n}))", f"list(itertools.batched({it}, 2, strict=True))",
        f"list(itertools.compress({it}, {it2}))", f"[list(t) for t in itertools.tee({it}, {n})]", f"repr(itertools.count({n}))", f"repr(itertools.repeat({v}, {n}))", f"repr(itertools.count(1.5, {n}))",
        f"bisect.bisect_left({so}, {v})", f"bisect.bisect_right({so}, {v}, {lh})", f"bisect.bisect({so}, {v}, {lh}, {lh})", f"bisect.bisect_left({so}, {v}, lo={lh}, hi={lh})", f"bisect.bisect_left({so}, {v}, key={k(['str', 'len', 'abs', 'lambda t: t[0]', 'None'])})",
        f"STMT:a = list({so})\nbisect.insort(a, {v})\nbisect.insort_left(a, {v}, {lh})\nreturn a", f"STMT:a = list({so})\nbisect.insort_right(a, {v}, key={k(['str', 'abs', 'lambda t: t', 'None'])})\nreturn a", f"STMT:a = list({so})\nbisect.insort(a, {v}, lo={lh}, hi={lh})\nreturn a",
        f"copy.copy({cp})", f"copy.deepcopy({cp})", f"STMT:x = {cp}\ny = copy.copy(x)\nreturn y == x, y is x", f"STMT:x = {cp}\ny = copy.deepcopy(x)\nreturn y == x, y is x", f"STMT:s = [1]\nx = [s, s, {{'a': s}}]\ny = copy.deepcopy(x)\nreturn y[0] is y[1], y[2]['a'] is y[0], y[0] is s",
        f"STMT:x = [1]\nx.append(x)\ny = copy.deepcopy(x)\nreturn repr(y), y[1] is y", f"STMT:x = [[1], [2]]\ny = copy.copy(x)\ny[0].append(9)\nreturn x", f"STMT:t = ([], 1)\nreturn copy.deepcopy(t) is t, copy.copy(t) is t, copy.deepcopy((1, 'a')) is (1, 'a')",
        f"STMT:a = A(1, [2])\nb = copy.deepcopy(a)\nb.y.append(3)\nreturn a, b, a == b", f"copy.deepcopy({cp}, {{}})", f"STMT:it = iter({it})\nnext(it, 0)\nreturn list(copy.{k(['copy', 'deepcopy'])}(it)), list(it)", f"STMT:m = {{}}\nx = [1]\ncopy.deepcopy([x, x], m)\nreturn len(m)",
        f"A({n})", f"A({n}, {it}, {v})", f"A(x={n}, z={v})", f"A()", f"A(1, 2, 3, 4)", f"A(1, w=2)", f"A(1) == A(1)", f"A(1) == A(1, [])", f"A(1) == (1, [], 'z')", f"A(1).y is A(1).y", f"repr(A({n}, z={v}))", f"A(1) < A(2)", f"F(1) <= F(2)", f"sorted([A(3), A(1)])", f"{{F(1), F(1)}}", f"F(1) == F(1.0)", f"F() != A(0)",
        f"F({n})", f"F() == F(0, ())", f"hash(F(1)) == hash(F(1))", f"STMT:f = F(1)\nf.p = 2\nreturn f", f"STMT:f = F(1)\ndel f.p\nreturn f", f"STMT:f = F(1)\nf.new = 2\nreturn f", f"{{F(1): 'a', F(1): 'b'}}", f"hash(A(1))", f"repr(N())", f"N() == N()", f"STMT:n = N()\nreturn n == n", f"dataclasses.is_dataclass(A)", f"dataclasses.is_dataclass(A(1))", f"dataclasses.is_dataclass({cp})",
        f"B({n})", f"B(1, {n}, 3)", f"B(1) == A(2)", f"B(1) == B(1, 5)", f"repr(B(x={n}, w={v}))", f"ERR", f"dataclasses.is_dataclass(B)",
    ])
