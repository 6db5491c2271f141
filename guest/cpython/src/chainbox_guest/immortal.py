"""The snapshot's objects, made immortal by the build: a chain's reference
counting then writes none of their pages.

Each chain starts from the snapshot, and a pool slot gives back (copies the
snapshot into) every page its chain wrote. A trivial chain wrote ~600
pages, nearly all of them holding snapshot objects whose reference counts
it had raised and lowered again: strings, tuples, functions, code all over
the heap. CPython skips reference counting for immortal objects (a count at
or above `1 << 30` on 32-bit builds), but Python cannot make an object
immortal, so this module only lists the objects and the build's
`immortal` pass (guest/build) writes their counts in the component's
memory image.

The list's items keep every listed object alive until the snapshot is
taken (an object freed after being listed would have its count written
into free memory). A record tells the pass where the list is: the magic
below, the list's address, its length, and the two xor'ed with `_CHECK` (a
stale copy of the magic alone in freed memory fails that). Both are held by
a list that holds itself, frozen by the collector: alive, but reachable
from no module, so a chain walking the modules does not find every object
of the snapshot in one list."""

import gc
import struct

_MAGIC = b"CBimmort"
_CHECK = 0x9E3779B9


def _list_for_immortality(objects):
    """Lists `objects` for the build to make immortal: the last step of
    the snapshot's preparation (anything made later is not listed). The
    caller's own list, if among them, is left out."""
    keep = [o for o in objects if o is not objects]
    record = struct.pack("<8sIII", _MAGIC, id(keep), len(keep), id(keep) ^ len(keep) ^ _CHECK)
    holder = [keep, record]
    holder.append(holder)
    gc.freeze()
