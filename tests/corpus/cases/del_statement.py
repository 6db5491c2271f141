# `del` of names: module globals, function locals, `global` names, closures,
# several targets and tuple/list targets, and the errors of unbound names.
def attempt(label, fn):
    try:
        print(label, "ok", fn())
    except Exception as e:
        print(label, type(e).__name__, e)


total = 10
scratch = [1, 2, 3]
del scratch
attempt("module read", lambda: scratch)
try:
    del scratch
except NameError as e:
    print("second del", e)
try:
    del never_bound
except NameError as e:
    print("unbound del", e)


def summarize(rows):
    temp = sum(rows)
    del temp
    return temp


attempt("local read", lambda: summarize([1, 2]))


def drop_param(value):
    del value
    return value


attempt("param", lambda: drop_param(3))


def rebind():
    item = 1
    del item
    item = "again"
    return item


attempt("rebind", rebind)


def only_del():
    del ghost


attempt("only del", only_del)


def drop_global():
    global total
    del total


drop_global()
attempt("global read", lambda: total)
attempt("global again", drop_global)


def closure_read():
    seen = 1

    def inner():
        return seen

    del seen
    return inner()


attempt("closure", closure_read)


def nonlocal_del():
    count = 1

    def inner():
        nonlocal count
        del count

    inner()
    return count


attempt("nonlocal", nonlocal_del)

a, b, c, d = 1, 2, 3, [4, 5, 6]
del (a, [b]), c, d[0]
attempt("a", lambda: a)
attempt("b", lambda: b)
print("d", d)
for index in range(3):
    pass
del index
attempt("loop var", lambda: index)
len = 5
del len
print(len("abc"))
{"done": True}
