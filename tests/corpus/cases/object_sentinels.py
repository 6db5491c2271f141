# `object()` as a sentinel (monty: "cannot create 'object' instances", and
# the scan did not route it): a featureless object, equal and hashed by
# identity, a new one per call and per copy, as CPython.
import copy
_MISSING = object()
config = {"retries": 3, "timeout": None}


def setting(name, default=_MISSING):
    value = config.get(name, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise KeyError(name)
        return default
    return value


o = object()
out = [setting("retries"), setting("timeout"), setting("verbose", False), o == _MISSING, o != _MISSING, type(o).__name__,
       isinstance(o, object), object() is object(), {o: 1}[o], len({o, _MISSING, o}), str(o).startswith("<object object at 0x"),
       bool(o), copy.copy(o) is o, copy.deepcopy([o, o])[0] is o, type(o) is object]
for bad in [lambda: setting("missing"), lambda: object(1), lambda: o < _MISSING, lambda: setattr(o, "x", 1)]:
    try:
        bad()
    except (KeyError, TypeError, AttributeError) as e:
        out.append(type(e).__name__)
out
