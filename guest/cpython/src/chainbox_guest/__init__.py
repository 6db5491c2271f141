"""chainbox's CPython guest: runs one model-written Python "chain" script.

This package is the app of a WebAssembly component built with componentize-py
(world `chain` of `wit/chain.wit`). The host calls the exported `run` with a
`RunRequest` (JSON, `guest/protocol`) and gets a `Finish` back. The script
reaches the outside world only through the `host` imports:

- each tool of the request is a global `async def`; awaiting it sends a
  `ToolCall` with `host.start` and parks on a future that the guest's event
  loop resolves from `host.wait`'s `Completions`;
- `load_artifact(handle)` asks `host.load_artifact` for an offloaded value;
- `print` output streams out through `host.stdout`;
- sleeps (`time.sleep`, `asyncio.sleep`, timeouts) are `host.wait` calls
  with a timeout, so a sleeping chain parks on the host;
- a session's run (`RunRequest.cells`) runs its earlier cells first, in the
  same `__main__`, as Python's REPL runs its inputs (their output and
  warnings discarded), calling `host.cell` before each cell.

It is the CPython twin of the monty guest (`guest/runtime/src/main.rs`,
the behavioural spec); the chain's answer and the value rules follow the
corpus reference runner `tests/corpus/reference.py`.

Its modules, by concern (each imports only those above it in this list):

- `preload`: the stdlib a chain can import, imported first (see below);
- `protocol`: the contract's constants, generated from `guest/protocol`
  (do not edit it; its Rust test says how to regenerate it);
- `wit`, `current`, `script`, `messages`, `values`, `stdio`, `suggestions`,
  `reports`: the bindings, the running chain, compiling the script, the JSON
  messages, the value rules, the streams, "Did you mean", error reports;
- `loop`: asyncio's event loop and sleeps on the host;
- `unawaited`, `refusals`, `linux_errno`, `files`, `c_math`, `hashes`,
  `compat`: "never awaited" warnings, sandbox refusals, and where this wasm32
  build is made to answer as 64-bit CPython on Linux;
- `interpreter`: every change to the interpreter that is the same for every
  chain, made from the modules above;
- `session`: one chain, and the sandbox it runs in;
- `walk`, `stale`, `immortal`, `chain`, `snapshot`: every object of the
  snapshot, its rehashed containers, its objects listed for the build to
  make immortal, the export `run_chain`, and the build-time state.

Everything at module level runs once, at build time: componentize-py
imports this package and snapshots the interpreter, so the stdlib imported
by `preload` (and by the modules) is pre-initialised in every chain (and,
in a componentize-py build, the only stdlib there is: a module not imported
here, directly or by one that is, is a ModuleNotFoundError in a chain). All
per-chain state lives in a `_Session`. The patches of the interpreter that
are the same for every chain (`interpreter._patch_interpreter`: refusals,
stdio, sleeps, event loops) are made once at build time, in the snapshot;
natively they are made per chain and undone when `run` returns, as the
per-chain ones always are, so `run` can be called twice (the native tests
do) without one chain leaking into the next.

The Python-level refusals (blocked imports, `os.system`...) make escape
attempts fail clearly; the sandbox itself is the host's WASI context, which
must grant no sockets and only the workspace directory.

Built by the host's build.rs (~20 s, ~23 MB), which runs:

    componentize-py -d guest/cpython/wit -w chain componentize chainbox_guest \\
        -p guest/cpython/src -o target/guest/chainbox-cpython.wasm

Tests: `python3 guest/cpython/tests/test_guest.py` (native, with a fake
host); the component itself is tested through the engine by `tests/it`.
"""

from . import preload  # noqa: F401  (first: the stdlib, pre-initialised)
from . import snapshot
from .chain import run_chain
from .wit import _wit_host, wit_world

import random

__all__ = ["run_chain"]

if wit_world is not None:

    class WitWorld(wit_world.WitWorld):
        """The component's export (componentize-py looks it up by this name)."""

        def run(self, request: str) -> str:
            global _ARMED
            reseed = None
            if not _ARMED:
                _wit_host.arm(b"\0")
                _ARMED = True
            else:
                # `random` was seeded at build time, in the snapshot, and
                # componentize-py's runtime reseeds it (`random.seed()`) on
                # an instance's first export call only: a spare's warm-up
                # run. A later run is a chain on a spare, whose WASI
                # generator the host has restarted for it since: the same
                # reseed draws its first bytes, as the first run's did on a
                # fresh instance, so a chain's `random` (and what it draws
                # after) is the same on either (`RunOptions::seed`). A
                # session's next cell continuing this instance's last run
                # is not reseeded: its randomness goes on (`run_chain`).
                reseed = random.seed
            return run_chain(request, _wit_host, reseed=reseed)

    # Whether this instance has let the host find its guard page (the
    # `arm` import): the first `run` does, before any script.
    _ARMED = False

    snapshot.prepare()
