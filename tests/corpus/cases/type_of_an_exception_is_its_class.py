# `type(e) is ZeroDivisionError` was False on monty (its `type()` of an
# exception was a marker, not the class the name is bound to), and
# `e.__class__` was an AttributeError on everything but a script's own
# instances: both are everyday `except` clause idioms.
import collections
import json
out = []
for make in [lambda: 1 / 0, lambda: {}["k"], lambda: int("x"), lambda: json.loads("{"), lambda: "a" + 1, lambda: [][1]]:
    try:
        make()
    except Exception as e:
        out.append([type(e).__name__, e.__class__.__name__, type(e) is e.__class__, type(e) in (ZeroDivisionError, KeyError), type(e) == ValueError, str(type(e))])
out.append([x.__class__.__name__ for x in [1, 2.5, True, None, "s", b"b", [1], (1,), {1: 2}, range(3), collections.Counter("ab"), len, {}.keys(), 1j]])
out.append([(5).__class__ is int, "{0.__class__.__name__}".format(2.5), f"{[].__class__}", ValueError.__name__, type(KeyError()) is KeyError])
out
