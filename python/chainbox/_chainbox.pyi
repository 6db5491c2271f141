# The native half of `chainbox` (python/src/lib.rs); only chainbox/__init__.py calls it.
# A failure other than a chain's outcome is RuntimeError(message, kind), or
# on_done(False, '{"message": ..., "kind": ...}').
from collections.abc import Callable
from typing import Any, Optional

__version__: str

# (name, description, schema_json, risk, permissions, untrusted, bridge)
_ToolSpec = tuple[str, str, str, str, list[str], bool, Callable[[str, Done], Optional[Callable[[], Any]]]]
_Approve = str | Callable[[str, Done], Optional[Callable[[], Any]]]
_OnEvent = Optional[Callable[[str, str], None]]
_OnDone = Callable[[bool, str], None]

class Done:
    def __call__(self, ok: bool, payload: str) -> None: ...

class RunHandle:
    def cancel(self) -> None: ...

class NativeEngine:
    def __init__(
        self, policy_json: Optional[str] = None, policy_toml: Optional[str] = None, python: Optional[str] = None
    ) -> None: ...
    def policy_json(self) -> str: ...
    def run(
        self,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> str: ...
    def run_cell(
        self,
        state_url: str,
        session: str,
        cell: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> str: ...
    def run_durable(
        self,
        state_url: str,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> str: ...
    def resume(
        self,
        state_url: str,
        chain_id: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> str: ...
    def decide(
        self, state_url: str, chain_id: str, decision_json: str, decided_by: str, seq: Optional[int] = None
    ) -> str: ...
    def start(
        self,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: _OnDone,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> RunHandle: ...
    def start_cell(
        self,
        state_url: str,
        session: str,
        cell: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: _OnDone,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> RunHandle: ...
    def start_durable(
        self,
        state_url: str,
        script: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: _OnDone,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> RunHandle: ...
    def start_resume(
        self,
        state_url: str,
        chain_id: str,
        tools: list[_ToolSpec],
        approve: _Approve,
        on_done: _OnDone,
        on_event: _OnEvent = None,
        artifacts_url: Optional[str] = None,
    ) -> RunHandle: ...

def stubs(tools: list[_ToolSpec]) -> str: ...
def configure(cache_dir: Optional[str] = None, max_concurrent_chains: Optional[int] = None) -> None: ...
def durable_artifacts(state_url: str, artifacts_url: Optional[str] = None) -> Optional[str]: ...
def approvals(state_url: str) -> str: ...
def read_artifact(artifact_ref: str, artifacts_url: Optional[str] = None) -> Optional[tuple[bytes, str]]: ...
