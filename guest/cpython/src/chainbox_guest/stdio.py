"""A chain's standard streams: stdout streams to the host, stderr goes
nowhere."""

import io

from .messages import _wire

# A line of `print` output longer than this streams out without a newline.
STDOUT_FLUSH_AT = 8 * 1024


class _HostStdout(io.TextIOBase):
    """`sys.stdout` of a chain: buffered per line and flushed before every
    host call, so the host sees output in order with tool calls and loses
    at most one partial line if the chain is killed."""

    def __init__(self, host):
        super().__init__()
        self._host = host
        self._line = []
        self._size = 0

    def writable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    def isatty(self):
        return False

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._line.append(text)
        self._size += len(text)
        if "\n" in text or self._size >= STDOUT_FLUSH_AT:
            self.flush()
        return len(text)

    def flush(self):
        if self._line:
            text = "".join(self._line)
            self._line.clear()
            self._size = 0
            self._host.stdout(_wire(text))


class _DiscardingHost:
    """The host a `_HostStdout` writes to while a session's earlier cells
    run: their output never reaches the chain's (`RunRequest.cells`)."""

    @staticmethod
    def stdout(text):
        pass


_DISCARDING_HOST = _DiscardingHost()


class _Discard(io.TextIOBase):
    """`sys.stderr` of a chain: the monty guest has none, so it goes nowhere."""

    def writable(self):
        return True

    def write(self, text):
        return len(text)
