"""Values across the boundary: the guest's Python→JSON conversion, as the
corpus reference runner's `to_json` / `key_string` (reference.py)."""

import dataclasses
import math
import sys

from .protocol import MAX_VALUE_DEPTH


def to_json(value, depth=0):
    """The guest's Python→JSON conversion: like `json.dumps`, but tuples,
    sets and frozensets become arrays, dataclass instances objects of their
    fields, and non-finite floats are refused. TypeError for anything else."""
    if depth > MAX_VALUE_DEPTH:
        raise TypeError(f"value nested deeper than {MAX_VALUE_DEPTH} levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"float {value} is not JSON compliant")
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {key_string(k): to_json(v, depth + 1) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def key_string(key):
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, (int, float)):
        return repr(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _to_json_in_script(value):
    """`to_json` called on the script's behalf: its own recursion must not
    eat the script's recursion limit (monty converts natively)."""
    if type(value) in _SCALARS:
        # Most arguments: no recursion, and no walk of the stack for it.
        return value
    limit = sys.getrecursionlimit()
    depth = _stack_depth()
    if limit < depth + MAX_VALUE_DEPTH + 50:
        sys.setrecursionlimit(depth + MAX_VALUE_DEPTH + 50)
        try:
            return to_json(value)
        finally:
            sys.setrecursionlimit(limit)
    return to_json(value)


# The types `to_json` returns unchanged (bool is not int's subclass here:
# `type` is exact). float is not among them: a NaN is refused.
_SCALARS = frozenset({str, int, bool, type(None)})


def _stack_depth():
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth
