"""`hash()` and `random.seed` as on 64-bit CPython: this wasm32 build's
numeric hashes are 32-bit (the interpreter's own are spliced in by the
build, guest/cpython/hashes; these are what Python code reads)."""

import builtins
import datetime
import decimal
import fractions
import math
import random
import types


_PRIME_61 = (1 << 61) - 1
_SEED_OF_RANDOM = random.Random.seed


def _hash_as_64_bit(x):
    """`hash(x)` of a finite or infinite float as 64-bit CPython computes
    it (the modulus 2**61 - 1; this wasm32 build's is 2**31 - 1), after the
    language reference's "Hashing of numeric types"."""
    if math.isinf(x):
        return 314159 if x > 0 else -314159
    numerator, denominator = x.as_integer_ratio()
    value = abs(numerator) % _PRIME_61 * pow(denominator, _PRIME_61 - 2, _PRIME_61) % _PRIME_61
    value = -value if numerator < 0 else value
    return -2 if value == -1 else value


_HASH = builtins.hash
_MASK_64 = (1 << 64) - 1


def _signed_64(value):
    value &= _MASK_64
    return value - (1 << 64) if value >> 63 else value


def _hash_rational(numerator, denominator):
    """The numeric hash of `numerator / denominator` modulo 2**61 - 1."""
    inverse = pow(denominator, _PRIME_61 - 2, _PRIME_61)
    if inverse == 0:  # the denominator is a multiple of the prime
        value = 314159
    else:
        value = abs(numerator) % _PRIME_61 * inverse % _PRIME_61
    value = -value if numerator < 0 else value
    return -2 if value == -1 else value


def _hash_tuple_lanes(lanes):
    """CPython's `tuplehash` (xxHash lanes) over the items' hashes, in 64 bits."""
    acc = 2870177450012600261
    for lane in lanes:
        acc = (acc + (lane & _MASK_64) * 14029467366897019727) & _MASK_64
        acc = ((acc << 31) | (acc >> 33)) & _MASK_64
        acc = (acc * 11400714785074694791) & _MASK_64
    acc = (acc + (len(lanes) ^ (2870177450012600261 ^ 3527539))) & _MASK_64
    return 1546275796 if acc == _MASK_64 else _signed_64(acc)


def _hash_frozenset_lanes(lanes):
    """CPython's `frozenset_hash` over the members' hashes, in 64 bits."""
    acc = 0
    for lane in lanes:
        h = lane & _MASK_64
        acc ^= (((h ^ 89869747) ^ (h << 16)) * 3644798167) & _MASK_64
    acc ^= ((len(lanes) + 1) * 1927868237) & _MASK_64
    acc ^= (acc >> 11) ^ (acc >> 25)
    acc = (acc * 69069 + 907133923) & _MASK_64
    return 590923713 if acc == _MASK_64 else _signed_64(acc)


_NESTED = object()


def _hash_64(value):
    """`hash(value)` as 64-bit CPython computes it, for what its result
    does not depend on the process (numbers, None, tuples, frozensets,
    ranges, timedeltas, and a `__hash__` written in Python); anything else
    (strings, bytes, identities) as this interpreter does. Tuples and
    frozensets are walked with a stack of their own, not Python recursion:
    CPython hashes data nested thousands deep."""
    leaf = _hash_leaf_64(value)
    if leaf is not _NESTED:
        return leaf
    stack = [(value, iter(value), [])]
    while True:
        container, items, lanes = stack[-1]
        for item in items:
            leaf = _hash_leaf_64(item)
            if leaf is _NESTED:
                stack.append((item, iter(item), []))
                break
            lanes.append(leaf)
        else:
            stack.pop()
            if type(container).__hash__ is tuple.__hash__:
                combined = _hash_tuple_lanes(lanes)
            else:
                combined = _hash_frozenset_lanes(lanes)
            if not stack:
                return combined
            stack[-1][2].append(combined)


def _hash_leaf_64(value):
    """`_hash_64` of anything but a tuple or frozenset, which are `_NESTED`."""
    kind = type(value)
    slot = kind.__hash__
    if slot is None or value is None:
        return 0xFCA86420 if value is None else _HASH(value)
    if slot is tuple.__hash__ or slot is frozenset.__hash__:
        return _NESTED
    if slot is int.__hash__:
        return _hash_rational(value, 1)
    if slot is float.__hash__:
        return _HASH(value) if value != value else _hash_as_64_bit(value)
    if slot is complex.__hash__:
        combined = (_hash_64(value.real) & _MASK_64) + 1000003 * (_hash_64(value.imag) & _MASK_64)
        combined = _signed_64(combined)
        return -2 if combined == -1 else combined
    if slot is range.__hash__:
        length = len(value)
        start = value.start if length else None
        step = value.step if length > 1 else None
        return _hash_tuple_lanes([_hash_64(length), _hash_64(start), _hash_64(step)])
    if slot is datetime.timedelta.__hash__:
        return _hash_tuple_lanes([_hash_64(value.days), _hash_64(value.seconds), _hash_64(value.microseconds)])
    if slot is decimal.Decimal.__hash__ and value.is_finite():
        return _hash_rational(*value.as_integer_ratio())
    if slot is fractions.Fraction.__hash__:
        return _hash_rational(value.numerator, value.denominator)
    if isinstance(slot, types.FunctionType):
        result = slot(value)
        if not isinstance(result, int):
            raise TypeError("__hash__ method should return an integer")
        if -(1 << 63) <= result < (1 << 63):
            return -2 if result == -1 else int(result)
        return _hash_rational(result, 1)
    return _HASH(value)


def _seed_as_64_bit(self, a=None, version=2):
    """`Random.seed`, but a float seeds as on 64-bit CPython, whose C
    `random_seed` takes its hash as a `size_t`: on this 32-bit build the
    same seed gave other numbers (`random.seed(3.5); random.random()`)."""
    if isinstance(a, float) and not math.isnan(a):
        a = _hash_as_64_bit(a) % (1 << 64)
    return _SEED_OF_RANDOM(self, a, version)


# Its arity errors name `Random.seed()`, as the method it replaces (they
# take the name from the code object).
_seed_as_64_bit.__code__ = _seed_as_64_bit.__code__.replace(co_name="seed", co_qualname="Random.seed")
_seed_as_64_bit.__name__, _seed_as_64_bit.__qualname__ = "seed", "Random.seed"
