"""Every object of the snapshot, once: what the build-time passes over it
(`stale.py`'s stale containers, `immortal.py`'s objects) walk."""

import gc
import sys
import types

from .wit import wit_world


# What the walk visits without looking inside: no references there.
_LEAVES = (str, bytes, int, float, complex, type(None), range, slice)

# A code object's fields that are objects (not computed on access, as
# `co_code` and `co_varnames` are: those would make new ones).
_CODE_FIELDS = ("co_consts", "co_names", "co_filename", "co_name", "co_qualname", "co_linetable", "co_exceptiontable")


def _snapshot_objects():
    """Yields every object reachable from the modules or tracked by the
    collector, once, leaves (strings, numbers) included.

    Whatever this allocates stays in the snapshot's memory (wasm memory
    never shrinks), so what was seen is one bit per 8 bytes of address
    (`id`), not a set of ids (a set of the ~130,000 objects added ~9 MB to
    the component)."""
    stack = [m for m in list(sys.modules.values()) if m is not None]
    stack.extend(gc.get_objects())

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
        if obj is stack or not first_visit(obj):
            continue
        yield obj
        if isinstance(obj, _LEAVES):
            continue
        try:
            # What the collector sees (a module's dict, a function's code,
            # a property's functions...), then what it does not.
            stack.extend(gc.get_referents(obj))
            if isinstance(obj, dict):
                # A dict keyed by strings does not report its keys.
                stack.extend(list(obj))
            elif isinstance(obj, type):
                # A static type reports nothing.
                stack.extend(list(vars(obj).keys()))
                stack.extend(list(vars(obj).values()))
            elif isinstance(obj, types.CodeType):
                # Not a collected type.
                stack.extend(getattr(obj, field) for field in _CODE_FIELDS)
                stack.extend(obj.co_varnames)
            elif hasattr(obj, "__dict__") and not isinstance(obj, (types.FunctionType, types.ModuleType)):
                stack.append(vars(obj))
        except Exception:
            pass
