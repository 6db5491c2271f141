"""asyncio on the host: the event loop every chain gets, `asyncio.run` for
it, and `time.sleep`; waiting for tool calls and sleeping park the chain on
the host (`host.wait`)."""

import asyncio
import asyncio.events
import asyncio.runners

from .current import _current_session
from .messages import _encode


class _HostSelector:
    """The selector of a `GuestLoop`. asyncio calls `select(timeout)` when
    every ready callback has run: here it waits on the host for the
    loop's pending tool calls (or sleeps on the host until the next timer),
    then resolves the finished calls' futures."""

    def __init__(self, loop):
        self._loop = loop

    def select(self, timeout):
        loop, session = self._loop, self._loop.session
        ids = [i for i, fut in session.pending.items() if not fut.done() and fut.get_loop() is loop]
        if not ids:
            if timeout is None:
                # Nothing can ever wake this loop up: in CPython it would
                # hang forever; a chain must end.
                raise RuntimeError(
                    "deadlock: every task of the chain waits for something that can never happen "
                    "(no tool call or timer is pending)"
                )
            if timeout > 0:
                session.sleep_on_host(timeout)
            return []
        session.stdout.flush()
        answer = session.host.wait(_encode({"ids": ids}), _nanoseconds(timeout))
        session.resolve(answer, ids)
        return []

    def close(self):
        pass


def _nanoseconds(seconds):
    if seconds is None:
        return None
    return min(max(0, int(seconds * 1e9)), 2**64 - 1)


class GuestLoop(asyncio.BaseEventLoop):
    """asyncio's loop on the host: `asyncio.run()` cannot work in WASI (its
    selector loop wants a socketpair), so every loop a chain gets is this
    one. Timers, tasks, gather, wait_for... are BaseEventLoop's own; only
    the waiting (`_HostSelector.select`) is the host's."""

    def __init__(self, session):
        super().__init__()
        self.session = session
        self._selector = _HostSelector(self)

    def _process_events(self, event_list):
        # `select` already resolved the finished calls' futures.
        pass

    def _write_to_self(self):
        # No other thread can wake this loop up.
        pass


class _GuestPolicy:
    """The event loop policy while a chain runs: every new loop is a
    `GuestLoop`, and `get_event_loop()` outside a running loop gives one
    (as CPython did up to 3.13), so older `get_event_loop().run_until_complete`
    scripts work too."""

    def __init__(self):
        self._loop = None

    def get_event_loop(self):
        if self._loop is None or self._loop.is_closed():
            self._loop = self.new_event_loop()
        return self._loop

    def set_event_loop(self, loop):
        self._loop = loop

    def new_event_loop(self):
        return GuestLoop(_current_session())


def _guest_asyncio_run(main, *, debug=None, loop_factory=None):
    """`asyncio.run` for a chain: the same steps as CPython's (run the
    coroutine, cancel what is left, close), on a `GuestLoop`."""
    if asyncio.events._get_running_loop() is not None:
        raise RuntimeError("asyncio.run() cannot be called from a running event loop")
    if not asyncio.iscoroutine(main):
        raise ValueError(f"a coroutine was expected, got {main!r}")
    session = _current_session()
    loop = loop_factory() if loop_factory is not None else GuestLoop(session)
    try:
        return loop.run_until_complete(main)
    finally:
        try:
            asyncio.runners._cancel_all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


_PY_TIME_MAX = (1 << 63) - 1


def _host_sleep(seconds):
    """`time.sleep` for a chain: parks it on the host."""
    if not isinstance(seconds, (int, float)):
        raise TypeError(f"'{type(seconds).__name__}' object cannot be interpreted as an integer")
    if seconds != seconds:
        raise ValueError("Invalid value NaN (not a number)")
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    # CPython converts the length to int64 nanoseconds (`PyTime_t`) first.
    if seconds * 1_000_000_000 > _PY_TIME_MAX:
        raise OverflowError("timestamp too large to convert to C PyTime_t")
    _current_session().sleep_on_host(seconds)
