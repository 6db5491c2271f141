"""The snapshot's containers whose keys hash otherwise in the component:
found at build time, rehashed by each instance's first chain."""

import gc
import sys
import types

from .hashes import _HASH, _hash_64
from .wit import wit_world


# The snapshot's dicts and sets whose keys hash otherwise in the component
# than when the snapshot was taken: componentize-py initialises the
# interpreter before the build splices 64-bit CPython's numeric hashes into
# libpython (guest/cpython/hashes), so a dict keyed by tuples, like
# `dataclasses._hash_action`, would miss every key. Found at build time by
# `_find_stale_containers`; each instance's first chain (the spare's warm-up,
# off a chain's path) re-inserts their keys with the new hashes.
_STALE_CONTAINERS = []


def _rehash_stale_containers():
    stale, _STALE_CONTAINERS[:] = list(_STALE_CONTAINERS), []
    for container in stale:
        items = list(container.items() if isinstance(container, dict) else container)
        container.clear()
        container.update(items)


def _hash_changes(key):
    """Whether `key`'s hash in the component (the low 32 bits of 64-bit
    CPython's) differs from this interpreter's."""
    if type(key) is str:
        return False
    try:
        new = _hash_64(key) & 0xFFFFFFFF
        old = _HASH(key)
    except Exception:
        return False
    new = new - (1 << 32) if new >> 31 else new
    return (-2 if new == -1 else new) != old


# What `_find_stale_containers` never walks into: no references inside.
_LEAVES = (str, bytes, int, float, complex, type(None), range, slice)


def _find_stale_containers():
    """Every dict and set reachable from the modules or tracked by the
    collector whose keys include one whose hash changes. A frozenset cannot
    be rehashed: none is expected (the integration test
    `no_container_in_the_cpython_snapshot_misses_its_own_keys` walks a
    chain's objects for any left).

    Whatever this allocates stays in the snapshot's memory (wasm memory
    never shrinks), so what was seen is one bit per 8 bytes of address
    (`id`), not a set of ids (a set of the ~130,000 objects added ~9 MB to
    the component), and leaves are never pushed."""
    found = []
    stack = [m for m in list(sys.modules.values()) if m is not None]
    stack.extend(gc.get_objects())

    def push(objects):
        stack.extend(o for o in objects if not isinstance(o, _LEAVES))

    if wit_world is None:  # natively (tests): 64-bit addresses
        seen_ids = set()

        def first_visit(obj):
            new = id(obj) not in seen_ids
            seen_ids.add(id(obj))
            return new

    else:  # in wasm32, an address is below the memory's size
        seen = bytearray()

        def first_visit(obj):
            slot = id(obj) >> 3
            byte, bit = slot >> 3, 1 << (slot & 7)
            if byte >= len(seen):
                seen.extend(bytes(byte + 65536 - len(seen)))
            elif seen[byte] & bit:
                return False
            seen[byte] |= bit
            return True

    while stack:
        obj = stack.pop()
        if not first_visit(obj):
            continue
        try:
            if isinstance(obj, (dict, set)) and any(_hash_changes(k) for k in list(obj)):
                found.append(obj)
            if isinstance(obj, types.ModuleType) or isinstance(obj, type):
                push(list(vars(obj).values()))
            elif isinstance(obj, types.FunctionType):
                stack.append(obj.__code__)
                push(obj.__defaults__ or ())
                push(c.cell_contents for c in obj.__closure__ or () if c.cell_contents is not None)
            elif isinstance(obj, types.CodeType):
                push(obj.co_consts)
            elif isinstance(obj, dict):
                push(list(obj.keys()))
                push(list(obj.values()))
            elif isinstance(obj, (list, tuple, set, frozenset)):
                push(list(obj))
            elif isinstance(obj, (classmethod, staticmethod)):
                stack.append(obj.__func__)
            elif isinstance(obj, property):
                push((obj.fget, obj.fset, obj.fdel))
            elif hasattr(obj, "__dict__"):
                stack.append(vars(obj))
        except Exception:
            pass
    return found
