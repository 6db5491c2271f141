PRELUDE = "from collections import Counter, deque, defaultdict, namedtuple\nimport itertools, functools, bisect\nP = namedtuple('P', 'x y')\nQ = namedtuple('Q', ['a', 'b'], defaults=[9])"
C = ["Counter('abracadabra')", "Counter({'a': 3, 'b': -1, 'c': 0})", "Counter(a=2, b=2, c=1)", "Counter()", "Counter([1, 1, 2, 3, 3, 3])"]
L = ["[3, 1, 2]", "[]", "[1, 1, 2, 2, 3]", "'abcab'", "range(5)", "[5, -1, 0, 5]", "[(1, 'b'), (1, 'a'), (0, 'z')]", "['b', 'A', 'a', 'B']"]
H1 = ['2', '0', '10', 'None']
H2 = ['1', '2', "'a'", '9']
H3 = ['0', '-1', '2']
H4 = ['1', "'a'", '5']
def expr(rng):
    k = rng.choice
    c, c2, l, l2 = k(C), k(C), k(L), k(L)
    n = k(["0", "1", "2", "-1", "3", "None"])
    return k([
        f"{c}.most_common()", f"{c}.most_common({n})", f"{c} + {c2}", f"{c} - {c2}", f"{c} | {c2}", f"{c} & {c2}", f"+{c}", f"-{c}", f"{c}.total()",
        f"sorted({c}.elements())", f"(lambda x: (x.subtract({c2}), x)[1])({c})", f"(lambda x: (x.update({c2}), x)[1])({c})", f"{c} == {c2}", f"{c} <= {c2}",
        f"repr({c})", f"list({c}.items())", f"{c}['zz']", f"dict({c})", f"(lambda x: (x.update({l}), x)[1])({c})",
        f"deque({l}, maxlen={k(H1)})", f"(lambda d: (d.rotate({n} or 1), d)[1])(deque({l}))", f"(lambda d: (d.appendleft(9), d.extendleft([7, 8]), d)[2])(deque({l}, 4))",
        f"deque({l}).index({k(H2)})", f"deque({l})[{k(H3)}]", f"repr(deque({l}, 3))", f"deque({l}) + deque({l2})", f"deque({l}) * 2",
        f"(lambda d: (d.remove({k(H4)}), d)[1])(deque({l}))", f"(lambda d: (d.insert(1, 'i'), d)[1])(deque({l}))", f"deque({l}).count(1)", f"deque({l}) == deque({l2})", f"deque({l}) < deque({l2})",


        f"(lambda d: (d['x'].append(1), d['y'], dict(d))[2])(defaultdict(list))", f"repr(defaultdict(int, a=1))", f"defaultdict(None)['k']",
        f"P(1, 2)._replace(x=5)", f"P(1, 2)._asdict()", f"P._fields", f"Q(1)", f"Q._field_defaults", f"P._make([3, 4])", f"repr(P(1, y=[2]))", f"P(1, 2) == (1, 2)", f"P(1, 2) + (3,)",
        f"namedtuple('R', 'a, b, a')", f"namedtuple('R', 'a def', rename=True)._fields", f"namedtuple('R', ['_a'])",

        f"list(itertools.accumulate({l}))", f"list(itertools.accumulate({l}, initial=10))",
        f"[(k, list(g)) for k, g in itertools.groupby(sorted({l}))]", f"[(k, list(g)) for k, g in itertools.groupby({l})]",
        f"list(itertools.combinations({l}, 2))", f"list(itertools.permutations({l}, 2))[:6]", f"list(itertools.product({l}, repeat=2))[:5]",
        f"list(itertools.combinations_with_replacement({l}, 2))[:6]", f"list(itertools.pairwise({l}))", f"list(itertools.batched({l}, 2))",
        f"list(itertools.zip_longest({l}, {l2}, fillvalue='-'))", f"list(itertools.islice({l}, 1, None, 2))", f"list(itertools.compress({l}, [1, 0, 1]))",
        f"list(itertools.takewhile(lambda v: v != 2, {l}))", f"list(itertools.dropwhile(lambda v: v != 2, {l}))", f"list(itertools.filterfalse(None, {l}))",
        f"list(itertools.starmap(pow, [(2, 3), (3, 2)]))", f"list(itertools.chain.from_iterable([{l}, {l2}]))", f"list(itertools.islice(itertools.cycle({l}), 7))",
        f"list(itertools.islice(itertools.count(1, 0.5), 4))", f"list(itertools.repeat('x', {n} or 0))", f"[list(t) for t in itertools.tee({l}, 2)]",
        f"bisect.bisect_left(sorted({l}), 2)", f"bisect.bisect_right(sorted({l}), 2)", f"(lambda a: (bisect.insort(a, 2), a)[1])(sorted({l}))",
        f"bisect.bisect_left([(1, 'a'), (2, 'b')], 2, key=lambda t: t[0])",
f"functools.reduce(lambda a, b: a + b, {l}, 0)", f"sorted({l}, key=functools.cmp_to_key(lambda a, b: (a > b) - (a < b)))",
        f"sorted({l}, reverse=True)", f"sorted({l}, key=str.lower)" , f"max({l}, default='d')", f"min({l}, key=lambda v: str(v))",
        f"list(zip({l}, {l2}, strict=True))",
    ])
