"""The snapshot's containers whose keys hash otherwise in the component:
found at build time, rehashed by each instance's first chain."""

from .hashes import _HASH, _hash_64


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


def _find_stale_containers(objects):
    """The dicts and sets of `objects` whose keys include one whose hash
    changes. A frozenset cannot be rehashed: none is expected (the
    integration test `no_container_in_the_cpython_snapshot_misses_its_own_keys`
    walks a chain's objects for any left)."""
    found = []
    for obj in objects:
        try:
            if isinstance(obj, (dict, set)) and any(_hash_changes(k) for k in list(obj)):
                found.append(obj)
        except Exception:
            pass
    return found
