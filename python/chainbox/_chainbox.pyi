# The native half of `chainbox` (python/src/lib.rs); only chainbox/__init__.py calls it.
from collections.abc import Callable
from typing import Any, Optional

__version__: str

# (name, description, schema_json, risk, permissions, untrusted, bridge)
_ToolSpec = tuple[str, str, str, str, list[str], bool, Callable[[str, Done], Optional[Callable[[], Any]]]]
_Approve = str | Callable[[str, Done], Optional[Callable[[], Any]]]

class Done:
    def __call__(self, ok: bool, payload: str) -> None: ...

class RunHandle:
    def cancel(self) -> None: ...

class NativeEngine:
    def start_cell(
        self,
        state_url: str,
        session: str,
        cell: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: Callable[[bool, str], None],
        on_event: Optional[Callable[[str, str], None]] = None,
    ) -> RunHandle: ...
    def __init__(
        self, policy_json: Optional[str] = None, policy_toml: Optional[str] = None, python: Optional[str] = None
    ) -> None: ...
    def policy_json(self) -> str: ...
    def run(
        self,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: Optional[Callable[[str, str], None]] = None,
    ) -> str: ...
    def run_cell(
        self,
        state_url: str,
        session: str,
        cell: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: Optional[Callable[[str, str], None]] = None,
    ) -> str: ...
    def start(
        self,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: Callable[[bool, str], None],
        on_event: Optional[Callable[[str, str], None]] = None,
    ) -> RunHandle: ...

def stubs(tools: list[_ToolSpec]) -> str: ...
def configure(cache_dir: Optional[str] = None, max_concurrent_chains: Optional[int] = None) -> None: ...
