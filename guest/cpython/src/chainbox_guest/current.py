"""The chain running now: what the patched stdlib (sleeps, new event loops,
"never awaited" warnings) finds its chain's session by. Set by the session's
sandbox for the length of a chain."""

# The running chain's `_Session`, or None.
running = None


def _current_session():
    if running is None:
        raise RuntimeError("no chain is running")
    return running


