# Errors a script prints when it sorts mixed rows or spreads a value that is
# not a list: CPython names the first unequal items' types (not 'list' and
# 'list'), and the callee a lone `*x` or `**x` was meant for. A lone `*x`
# is converted at the call, after the `**` mappings: with both wrong, the
# `**` is reported.
rows = [("b", None), ("b", "x")]
out = []


def attempt(label, thunk):
    try:
        out.append((label, repr(thunk())))
    except TypeError as e:
        out.append((label, str(e)))


def total(*values, **options):
    return sum(values)


class Ledger:
    def add(self, *amounts):
        return sum(amounts)


ledger = Ledger()
attempt("sort", lambda: sorted(rows))
attempt("lists", lambda: [1, "a"] < ["a", 1])
attempt("nested", lambda: [[1, 2]] > [[1, "z"]])
attempt("max", lambda: max([(1, 2), (1, "b")]))
attempt("equal", lambda: [1, None] == [1, None])
attempt("print", lambda: print(*None))
attempt("function", lambda: total(*5))
attempt("method", lambda: ledger.add(*3.5, ))
attempt("mapping", lambda: total(**[1]))
attempt("twice", lambda: total(a=1, **{"a": 2}))
attempt("leading", lambda: total(1, *7))
attempt("both", lambda: total(*5, **6))
attempt("both method", lambda: ledger.add(*5, **6))
attempt("lone spread", lambda: total(*(n for n in range(3)), **{"k": 1}))
out
