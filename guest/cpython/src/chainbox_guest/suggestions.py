"""CPython's "Did you mean" for a name that is not defined."""

import sys


# CPython's "Did you mean": `_suggestions._generate_suggestions`, the C code
# (`_Py_CalculateSuggestions`) traceback.py uses, as the monty guest does
# (`monty::closest_name`, a port of it). Run natively on a CPython without
# that module (the tests, 3.11), the same algorithm in Python: on the names'
# UTF-8 bytes, with no limit on the name's own length.
_MOVE_COST, _CASE_COST, _MAX_STRING_SIZE, _MAX_CANDIDATE_ITEMS = 2, 1, 40, 750


def closest_name(name, candidates):
    candidates = list(candidates)
    try:
        from _suggestions import _generate_suggestions
    except ImportError:
        return _closest_name(name, candidates)
    return _generate_suggestions(candidates, name)


def _closest_name(name, candidates):
    if len(candidates) >= _MAX_CANDIDATE_ITEMS:
        return None
    wrong = name.encode()
    best, best_distance = None, None
    for candidate in candidates:
        if candidate == name:
            continue
        item = candidate.encode()
        limit = (len(wrong) + len(item) + 3) * _MOVE_COST // 6
        if best_distance is not None:
            limit = min(limit, best_distance - 1)
        distance = _levenshtein(wrong, item, limit)
        if distance <= limit:
            best, best_distance = candidate, distance
    return best


def _substitution_cost(a, b):
    if a == b:
        return 0
    lower = lambda c: c + 32 if 65 <= c <= 90 else c
    return _CASE_COST if lower(a) == lower(b) else _MOVE_COST


def _levenshtein(a, b, limit):
    """Weighted edit distance of two byte strings, or `limit + 1` as soon as
    it must exceed it."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    a, b = a[prefix:], b[prefix:]
    suffix = 0
    while suffix < min(len(a), len(b)) and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if suffix:
        a, b = a[:-suffix], b[:-suffix]
    if not a or not b:
        return (len(a) + len(b)) * _MOVE_COST
    if len(a) > _MAX_STRING_SIZE or len(b) > _MAX_STRING_SIZE:
        return limit + 1
    if len(b) < len(a):
        a, b = b, a
    if (len(b) - len(a)) * _MOVE_COST > limit:
        return limit + 1
    row = list(range(_MOVE_COST, _MOVE_COST * (len(a) + 1), _MOVE_COST))
    result = 0
    for bindex, bchar in enumerate(b):
        distance = result = bindex * _MOVE_COST
        minimum = sys.maxsize
        for index, achar in enumerate(a):
            substitute = distance + _substitution_cost(bchar, achar)
            distance = row[index]
            insert_delete = min(result, distance) + _MOVE_COST
            result = min(insert_delete, substitute)
            row[index] = result
            minimum = min(minimum, result)
        if minimum > limit:
            return limit + 1
    return result
