//! The guest/host contract of chainbox: every message that crosses the
//! WebAssembly boundary, defined once and compiled into both sides.
//!
//! The guest (`guest/runtime`, built for `wasm32-wasip1`) runs a model-written
//! Python script with monty. It has no other way out than the few core-wasm
//! imports listed in [`imports`]; every payload they carry is one of the JSON
//! messages below. The host treats each one as hostile: it caps the length
//! before reading guest memory ([`MAX_GUEST_MESSAGE_BYTES`]) and decodes with
//! [`decode`], which never panics on malformed data.
//!
//! A run goes like this:
//! 1. the guest's `_start` calls `request`, then `take`, and receives a [`RunRequest`];
//! 2. each tool call the script awaits at once becomes a `call` with a [`ToolCall`],
//!    answered by a [`CallOutcome`]; calls that run concurrently (`asyncio.gather`)
//!    are announced with `start` and collected with `wait`, answered by a [`Completions`];
//! 3. file access (`open`, `pathlib`) and sleeps go to the host through `os`;
//!    `print` output streams out through `stdout`;
//! 4. the guest ends by calling `finish` with a [`Finish`].
//!
//! A tool call the script makes without awaiting it at once is only recorded
//! by the guest; it is started on the host (`start`) when the script awaits
//! it, and a call never awaited never leaves the guest: it becomes a
//! [`Warning`] in the [`Finish`], as CPython's never-awaited coroutine does.

use serde::{Deserialize, Serialize};

/// Bumped whenever a message changes shape. The guest refuses: it checks the
/// [`RunRequest`]'s `version` and, on a mismatch, ends the chain at once with
/// an `InternalError` naming both versions (the host then reports a script
/// error, and no tool call can have happened). The host needs no check of its
/// own: it embeds the guest it was built with.
pub const PROTOCOL_VERSION: u32 = 6;

/// The virtual path of the chain's workspace: where the host mounts it, and
/// the script's working directory, so `open('out.csv', 'w')` writes there
/// (as in the CPython guest, whose WASI preopen is the same path).
pub const WORKSPACE: &str = "/workspace";

/// Largest message the host accepts from the guest: a tool call's arguments
/// or the chain's final output. Larger payloads are refused before parsing so
/// a script cannot make the host allocate without bound. Set above the
/// largest `max_arg_bytes`/`max_result_bytes` a policy may configure.
pub const MAX_GUEST_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// Deepest nesting of a value converted between Python and JSON. Deeper
/// values are refused with a clear error instead of overflowing a stack on
/// either side.
pub const MAX_VALUE_DEPTH: usize = 128;

/// Names of the core-wasm functions the guest imports from the host module
/// [`imports::MODULE`]. Together with the messages they carry, this is the
/// whole contract.
pub mod imports {
    /// The import module name.
    pub const MODULE: &str = "chainbox";
    /// `request() -> i32`: stages the [`RunRequest`](super::RunRequest) and returns its length.
    pub const REQUEST: &str = "request";
    /// `take(ptr: i32, len: i32)`: copies the staged message into guest memory.
    pub const TAKE: &str = "take";
    /// `call(ptr: i32, len: i32) -> i32`: runs one [`ToolCall`](super::ToolCall)
    /// to completion and stages its [`CallOutcome`](super::CallOutcome).
    pub const CALL: &str = "call";
    /// `start(id: i32, ptr: i32, len: i32)`: starts a [`ToolCall`](super::ToolCall)
    /// that runs concurrently with the script; `id` names it in [`Completions`](super::Completions).
    pub const START: &str = "start";
    /// `wait(ptr: i32, len: i32) -> i32`: given a [`Wait`](super::Wait) naming
    /// started calls, waits until at least one has finished and stages a
    /// [`Completions`](super::Completions).
    pub const WAIT: &str = "wait";
    /// `os(ptr: i32, len: i32) -> i32`: serves one OS request of the
    /// interpreter (a serialized `monty_types::OsFunctionCall`: a file
    /// operation on the chain's workspace, or a sleep) and stages an
    /// [`FsOutcome`](super::FsOutcome).
    pub const OS: &str = "os";
    /// `load_artifact(ptr: i32, len: i32) -> i32`: given a
    /// [`LoadArtifact`](super::LoadArtifact), stages a
    /// [`CallOutcome`](super::CallOutcome) with the stored value.
    pub const LOAD_ARTIFACT: &str = "load_artifact";
    /// `stdout(ptr: i32, len: i32)`: appends UTF-8 `print` output.
    pub const STDOUT: &str = "stdout";
    /// `finish(ptr: i32, len: i32)`: delivers the [`Finish`](super::Finish) message.
    pub const FINISH: &str = "finish";
    /// `c_math(code: i32, x: f64, y: f64) -> f64`: the C math-library
    /// function [`C_MATH_FUNCTIONS`]`[code]` of `x` (and `y`, for the
    /// [`C_MATH_BINARY`] ones) as the host's C library computes it, so float
    /// answers equal native CPython's on the host to the last bit. Pure: no
    /// state, no authority; an unknown code ends the chain as a protocol error.
    pub const C_MATH: &str = "c_math";
    /// `cell(index: i32)`: the guest begins cell `index` of a session's
    /// run ([`RunRequest::cells`](super::RunRequest::cells)): `0..cells.len()`
    /// for the earlier cells it replays, `cells.len()` for the new one, the
    /// `script`. Called before each cell, and only when `cells` is not
    /// empty, so the host answers each cell's calls from its own part of the
    /// journal and counts the new cell's calls against its budget.
    pub const CELL: &str = "cell";
    /// The monty guest's second entry point, `chainbox_next()`: runs the
    /// next [`RunRequest`](super::RunRequest) (read with `request`, ended
    /// with `finish`, as `_start` does) on an instance whose `_start` has
    /// returned: a session's next cell, `continued`, on the instance that
    /// ran the previous one. (The CPython guest's `run` export is called
    /// again instead.)
    pub const NEXT_EXPORT: &str = "chainbox_next";
    /// The functions of [`C_MATH`], by code (monty's `CMathFn` order, as
    /// the monty guest's tests check; the CPython guest's `protocol.py` is
    /// generated from this list).
    pub const C_MATH_FUNCTIONS: [&str; 25] = [
        "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp",
        "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "cbrt", "erf", "erfc", "hypot",
    ];
    /// The functions of [`C_MATH_FUNCTIONS`] that take two arguments.
    pub const C_MATH_BINARY: [&str; 3] = ["atan2", "pow", "hypot"];

    /// Every import, the whole list (a test checks the guest module imports
    /// exactly these and the host's linker defines them).
    pub const ALL: [&str; 11] = [
        REQUEST,
        TAKE,
        CALL,
        START,
        WAIT,
        OS,
        LOAD_ARTIFACT,
        STDOUT,
        FINISH,
        C_MATH,
        CELL,
    ];
}

/// What the host asks the guest to run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRequest {
    /// Must equal [`PROTOCOL_VERSION`].
    pub version: u32,
    /// The Python source of the chain.
    pub script: String,
    /// The tools the script may call, in registry order.
    pub tools: Vec<ToolDecl>,
    /// Interpreter limits applied inside the guest.
    pub limits: GuestLimits,
    /// A session's earlier cells, oldest first (empty for a plain chain).
    /// The guest runs them before `script`, in one namespace, as Python's
    /// REPL runs its inputs: the names each binds live on; an exception
    /// ends only its own cell (the names bound before it stay); their
    /// output is discarded and their values ignored. Then `script`, the
    /// session's new cell, runs in that namespace and is reported as a
    /// chain's script is. Before each cell the guest calls
    /// [`imports::CELL`] with its index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<String>,
    /// The run is a session's cell (its first one too, whose `cells` is
    /// empty): the guest runs `script` as the next input of a REPL, names
    /// its file `<python-input-N>` (N = `cells.len()`), calls
    /// [`imports::CELL`] before each cell, and keeps the REPL's namespace
    /// after the run, so a later run on this instance may continue it
    /// (`continued`). Without it, and with `cells` empty, the run is a
    /// chain's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub session: bool,
    /// The earlier `cells` already ran on this instance: its last run was
    /// this session's previous cell and kept its namespace (`session`).
    /// The guest does not run them again; it runs `script` in the kept
    /// namespace (the cells' sources are still sent, for the lines of
    /// their functions in tracebacks). A guest with nothing kept ends the
    /// run at once with an `InternalError`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub continued: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The guest's built-in function that loads an offloaded result's full value.
pub const LOAD_ARTIFACT_FN: &str = "load_artifact";

/// A tool as the guest needs to know it: its name and the order of its
/// parameters, so positional arguments can be mapped onto names.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolDecl {
    /// The exact tool name; the script calls it as a function of that name.
    pub name: String,
    /// Parameter names in schema order.
    pub params: Vec<String>,
}

/// Limits the guest enforces on itself, inside the interpreter. The host's
/// own limits (memory cap, epochs, deadlines) still apply on top of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestLimits {
    /// Soft memory limit for the interpreter heap, in bytes: crossing it
    /// raises `MemoryError` inside the script.
    pub max_memory_bytes: u64,
    /// Deepest Python recursion allowed.
    pub max_recursion_depth: u32,
}

/// One tool call, as the script made it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolCall {
    /// The tool name the script used.
    pub tool: String,
    /// The arguments, positional ones already mapped onto parameter names.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// The calls the script awaits, by the ids given to `start`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Wait {
    /// Started calls; the host answers when at least one has finished.
    pub ids: Vec<u32>,
}

/// `load_artifact(handle)`: the script wants the value behind a handle.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadArtifact {
    /// The handle as the script holds it: the `{"artifact_ref": ...}` object
    /// a tool call returned, or its `"sha256:..."` ref alone.
    pub handle: serde_json::Value,
}

/// How long an OS request of the interpreter sleeps, if it is a sleep
/// (`time.sleep`, `asyncio.sleep`, in their forms): the guest sends these to
/// the host, which parks the chain for the duration.
pub fn sleep_of(call: &monty_types::OsFunctionCall) -> Option<std::time::Duration> {
    use monty_types::OsFunctionCall::{AsyncSleep, AsyncSystemSleep, Sleep, SystemSleep};
    match call {
        Sleep(d) | SystemSleep(d) | AsyncSleep(d) | AsyncSystemSleep(d) => Some(*d),
        _ => None,
    }
}

/// How one tool call ended, as the script will see it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    /// The call succeeded; `value` becomes the awaited result.
    Ok {
        /// The tool's result.
        value: serde_json::Value,
    },
    /// The tool failed: `RuntimeError` in the script.
    Error {
        /// Why.
        message: String,
    },
    /// The call was refused by policy or a human: `PermissionError`.
    Denied {
        /// Why.
        message: String,
    },
    /// The call ran past its own timeout: `TimeoutError`.
    Timeout {
        /// Why.
        message: String,
    },
    /// The arguments were rejected before the tool ran: `ValueError`.
    Invalid {
        /// Which field, and why.
        message: String,
    },
    /// No tool has that name: `NameError`.
    NotFound {
        /// Why.
        message: String,
    },
}

/// Calls that finished while the guest was waiting, by the id given to `start`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Completions {
    /// `(id, outcome)` pairs, at least one.
    pub done: Vec<(u32, CallOutcome)>,
}

/// The host's answer to a filesystem request: the value the Python call
/// returns, or the exception it raises (`FileNotFoundError`, `PermissionError`…).
pub type FsOutcome = Result<monty_types::MontyObject, monty_types::MontyException>;

/// How the script ended, and what it left behind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finish {
    /// The script's value or error.
    pub result: ScriptResult,
    /// What Python would have warned about, in the order it happened: a tool
    /// call whose coroutine was never awaited (and so never ran).
    pub warnings: Vec<Warning>,
}

/// A warning the script caused, as Python's `warnings` module would show it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Warning {
    /// e.g. `coroutine 'send_email' was never awaited`.
    pub message: String,
    /// 1-based line of the code that caused it, when known.
    pub line: Option<u32>,
}

/// The script's value or error.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ScriptResult {
    /// The script completed; its final expression's value.
    Ok {
        /// The value as JSON (non-JSON values are represented by their `repr`).
        output: serde_json::Value,
        /// The value as Python prints it (`repr` for non-strings, the text for a `str`).
        output_text: String,
    },
    /// The script failed to parse or raised an uncaught exception.
    Error(ScriptError),
}

/// An error raised by the script, or a syntax error in it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScriptError {
    /// `true` for a parse/compile error, `false` for a runtime exception.
    pub compile: bool,
    /// The Python exception type, e.g. `ZeroDivisionError`.
    pub exc_type: String,
    /// The exception message.
    pub message: String,
    /// 1-based line where it was raised, when known.
    pub line: Option<u32>,
    /// The formatted traceback.
    pub traceback: String,
    /// `true` when the interpreter's memory limit raised the error (a
    /// `MemoryError` the script raised itself is `false`): the fact the host
    /// reports a memory kill from.
    #[serde(default)]
    pub memory_limit: bool,
}

/// Errors decoding a message from the other side of the boundary.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The message is larger than [`MAX_GUEST_MESSAGE_BYTES`].
    #[error("message of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The bytes are not the expected JSON message.
    #[error("malformed {what} message: {source}")]
    Malformed {
        /// Which message was expected.
        what: &'static str,
        /// The parser's complaint.
        source: serde_json::Error,
    },
}

/// Decodes one message, refusing oversize or malformed input with a typed error.
pub fn decode<'a, T: Deserialize<'a>>(what: &'static str, bytes: &'a [u8]) -> Result<T, DecodeError> {
    if bytes.len() > MAX_GUEST_MESSAGE_BYTES {
        return Err(DecodeError::TooLarge {
            len: bytes.len(),
            max: MAX_GUEST_MESSAGE_BYTES,
        });
    }
    serde_json::from_slice(bytes).map_err(|source| DecodeError::Malformed { what, source })
}

/// Encodes one message. Serialising these types cannot fail (string keys,
/// no non-finite floats reach here), so this returns bytes directly.
pub fn encode<T: Serialize>(message: &T) -> Vec<u8> {
    serde_json::to_vec(message).unwrap_or_else(|e| {
        // Unreachable for these types; answer with a JSON string so the
        // other side gets a decode error naming the cause rather than a panic.
        serde_json::to_vec(&format!("encode error: {e}")).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_outcome_round_trips_with_status_tag() {
        let o = CallOutcome::Denied { message: "no".into() };
        let bytes = encode(&o);
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"status":"denied","message":"no"}"#
        );
        assert_eq!(decode::<CallOutcome>("outcome", &bytes).unwrap(), o);
    }

    #[test]
    fn malformed_message_is_a_typed_error() {
        let err = decode::<ToolCall>("tool call", b"{not json").unwrap_err();
        assert!(err.to_string().contains("malformed tool call message"));
    }
}
