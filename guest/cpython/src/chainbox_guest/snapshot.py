"""The component's build-time state, made before componentize-py snapshots
the interpreter: the interpreter patched for good, a warm-up chain run, and
the stale containers found; every chain starts from it."""

import asyncio
import asyncio.events
import gc
import json
import re

from .chain import run_chain
from .immortal import _list_for_immortality
from .interpreter import _patch_interpreter_for_good
from .protocol import PROTOCOL_VERSION
from .stale import _STALE_CONTAINERS, _find_stale_containers
from .walk import _snapshot_objects


def _warm_up():
    """Runs one small chain (a tool call, an answer) at build time, so what
    a first chain builds lazily (caches, specialised bytecode, the event
    loop's classes, the blocked-module answers) is in the snapshot."""

    class _WarmUpHost:
        def start(self, call_id, call):
            pass

        def call(self, call):
            return '{"status": "ok", "value": null}'

        def cancel(self, call_id):
            pass

        def wait(self, wait, timeout_ns):
            ids = json.loads(wait)["ids"]
            return json.dumps({"done": [[i, {"status": "ok", "value": None}] for i in ids]})

        def load_artifact(self, request):
            return '{"status": "error", "message": "no host"}'

        def stdout(self, text):
            pass

    request = {
        "version": PROTOCOL_VERSION,
        "script": "import asyncio\nx = await warm_up(1)\nprint(x)\nawait asyncio.gather(warm_up(2), warm_up(3))\n1 + 1",
        "tools": [{"name": "warm_up", "params": ["n"]}],
        "limits": {"max_memory_bytes": 1 << 28, "max_recursion_depth": 1000},
    }
    for _ in range(3):
        run_chain(json.dumps(request), _WarmUpHost())


def prepare():
    """Makes the snapshot's state (in a componentize-py build only, where
    nothing undoes it: each chain is a fresh instance of the snapshot).

    The interpreter's patches and refusals are made for good, then the
    warm-up runs on them. Last, every object alive is moved into the
    permanent generation (`gc.freeze`), so the collection that ends each
    chain (for the "never awaited" warnings) walks only what the chain
    made: collecting the whole pre-imported stdlib cost ~45 ms per chain.
    And every object is listed for the build to make immortal
    (`immortal.py`)."""
    _patch_interpreter_for_good()
    _warm_up()
    asyncio.events._event_loop_policy._loop = None
    gc.collect()
    # `re`'s caches are most of the stale keys (~260 of ~490 entries; the
    # rehash costs ~0.7 us an entry): the patterns the stdlib compiled at
    # import are held by its modules, so emptying the caches loses nothing
    # a chain would have used.
    re.purge()
    objects = list(_snapshot_objects())
    _STALE_CONTAINERS.extend(_find_stale_containers(objects))
    gc.freeze()
    _list_for_immortality(objects)
