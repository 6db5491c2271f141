//! The chainbox guest: a `wasm32-wasip1` command that runs one Python chain
//! with the monty interpreter and reaches the outside world only through the
//! host imports of `chainbox_protocol::imports`.
//!
//! Invariants:
//! - Every tool call leaves through the host (`call` or `start`/`wait`); the
//!   guest never decides policy, it only maps Python values to JSON and back.
//! - Filesystem requests go to the host, which serves them from the chain's
//!   workspace through `monty-fs` (structural confinement: `..` and symlinks
//!   cannot leave it). Everything else the interpreter asks of the OS is
//!   refused or answered with nothing (an empty environment).
//! - Nothing here trusts the host's messages either: a malformed answer
//!   becomes a Python exception, never a panic.

use std::borrow::Cow;
use std::fmt::Write as _;

use std::collections::BTreeMap;

use chainbox_protocol::{
    CallOutcome, Completions, Finish, FsOutcome, GuestLimits, LOAD_ARTIFACT_FN, LoadArtifact, PROTOCOL_VERSION,
    RunRequest, ScriptError, ScriptResult, ToolCall, ToolDecl, WORKSPACE, Wait, Warning, decode, encode, sleep_of,
};
use monty::{MontyRepl, MontyRun, ReplProgress, ReplStartError, RunProgress};
use monty_types::{
    AssertMessageAnnotations, CMathFn, CompileOptions, ExcData, ExcType, ExtFunctionResult, MontyException,
    MontyObject, NameLookupResult, NamedValues, ObjectRef, OsErrorData, OsFunctionCall, PrintWriter,
    PrintWriterCallback, ResourceLimits, ResourceTracker, SourceRange,
};
use serde_json::{Map, Value};

mod json;
mod suggest;

#[global_allocator]
static ALLOC: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

/// Raw host imports. Only `host_*` wrappers below call them.
#[cfg(target_arch = "wasm32")]
mod ffi {
    #[link(wasm_import_module = "chainbox")]
    unsafe extern "C" {
        pub fn request() -> i32;
        pub fn take(ptr: *mut u8, len: i32);
        pub fn call(ptr: *const u8, len: i32) -> i32;
        pub fn start(id: i32, ptr: *const u8, len: i32);
        pub fn wait(ptr: *const u8, len: i32) -> i32;
        pub fn os(ptr: *const u8, len: i32) -> i32;
        pub fn load_artifact(ptr: *const u8, len: i32) -> i32;
        pub fn stdout(ptr: *const u8, len: i32);
        pub fn finish(ptr: *const u8, len: i32);
        pub fn c_math(code: i32, x: f64, y: f64) -> f64;
        pub fn cell(index: i32);
    }
}

/// Off wasm there is no host: the guest's unit tests run natively and never
/// reach these.
#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::missing_safety_doc)]
mod ffi {
    fn no_host() -> ! {
        unreachable!("the chainbox imports exist only in the wasm guest")
    }
    pub unsafe fn request() -> i32 {
        no_host()
    }
    pub unsafe fn take(_: *mut u8, _: i32) {
        no_host()
    }
    pub unsafe fn call(_: *const u8, _: i32) -> i32 {
        no_host()
    }
    pub unsafe fn start(_: i32, _: *const u8, _: i32) {
        no_host()
    }
    pub unsafe fn wait(_: *const u8, _: i32) -> i32 {
        no_host()
    }
    pub unsafe fn os(_: *const u8, _: i32) -> i32 {
        no_host()
    }
    pub unsafe fn load_artifact(_: *const u8, _: i32) -> i32 {
        no_host()
    }
    pub unsafe fn stdout(_: *const u8, _: i32) {
        no_host()
    }
    pub unsafe fn finish(_: *const u8, _: i32) {
        no_host()
    }
    pub unsafe fn c_math(_: i32, _: f64, _: f64) -> f64 {
        no_host()
    }
    pub unsafe fn cell(_: i32) {
        no_host()
    }
}

/// Copies the message the host has just staged.
fn take_staged(len: i32) -> Vec<u8> {
    let len = usize::try_from(len).unwrap_or(0);
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` is a live, writable allocation of exactly `len` bytes.
    unsafe { ffi::take(buf.as_mut_ptr(), len as i32) };
    buf
}

fn host_request() -> Vec<u8> {
    // SAFETY: no pointers are passed.
    let len = unsafe { ffi::request() };
    take_staged(len)
}

fn host_call(msg: &[u8]) -> Vec<u8> {
    // SAFETY: `msg` is a live slice for the duration of the call.
    let len = unsafe { ffi::call(msg.as_ptr(), msg.len() as i32) };
    take_staged(len)
}

fn host_start(id: u32, msg: &[u8]) {
    // SAFETY: `msg` is a live slice for the duration of the call.
    unsafe { ffi::start(id as i32, msg.as_ptr(), msg.len() as i32) };
}

fn host_wait(ids: &[u32]) -> Vec<u8> {
    let msg = encode(&Wait { ids: ids.to_vec() });
    // SAFETY: `msg` is a live slice for the duration of the call.
    let len = unsafe { ffi::wait(msg.as_ptr(), msg.len() as i32) };
    take_staged(len)
}

fn host_os(msg: &[u8]) -> Vec<u8> {
    // SAFETY: `msg` is a live slice for the duration of the call.
    let len = unsafe { ffi::os(msg.as_ptr(), msg.len() as i32) };
    take_staged(len)
}

fn host_load_artifact(msg: &[u8]) -> Vec<u8> {
    // SAFETY: `msg` is a live slice for the duration of the call.
    let len = unsafe { ffi::load_artifact(msg.as_ptr(), msg.len() as i32) };
    take_staged(len)
}

fn host_stdout(text: &str) {
    if !text.is_empty() {
        // SAFETY: `text` is a live slice for the duration of the call.
        unsafe { ffi::stdout(text.as_ptr(), text.len() as i32) };
    }
}

/// monty's C math functions, computed by the host's C library (so floats
/// equal native CPython's on the host: see `monty_types::CMathFn`).
fn host_c_math(f: CMathFn, x: f64, y: f64) -> f64 {
    // SAFETY: plain numbers, no pointers.
    unsafe { ffi::c_math(f.code() as i32, x, y) }
}

/// Tells the host that the session's cell `index` begins (`imports::CELL`).
fn host_cell(index: usize) {
    // SAFETY: a plain number, no pointers.
    unsafe { ffi::cell(index as i32) };
}

fn host_finish(finish: &Finish) {
    let msg = encode(finish);
    // SAFETY: `msg` is a live slice for the duration of the call.
    unsafe { ffi::finish(msg.as_ptr(), msg.len() as i32) };
}

/// `print` output, buffered per line and flushed before every host call so
/// the host sees output in order with tool calls, and loses at most one
/// partial line if the chain is killed.
#[derive(Default)]
struct Stdout {
    line: String,
}

impl Stdout {
    /// Flush threshold: a long line without newlines still streams out.
    const FLUSH_AT: usize = 8 * 1024;

    fn flush(&mut self) {
        host_stdout(&self.line);
        self.line.clear();
    }
}

impl PrintWriterCallback for Stdout {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.line.push_str(&output);
        if self.line.len() >= Self::FLUSH_AT {
            self.flush();
        }
        Ok(())
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        self.line.push(end);
        if end == '\n' || self.line.len() >= Self::FLUSH_AT {
            self.flush();
        }
        Ok(())
    }
}

fn main() {
    monty::set_c_math(host_c_math);
    run_requested();
}

/// The second entry point (`chainbox_next`, see the protocol's
/// `NEXT_EXPORT`): the next run on an instance whose `_start` has
/// returned, a session's next cell continuing the REPL the last run kept.
/// Exported by `build.rs`.
#[unsafe(no_mangle)]
pub extern "C" fn chainbox_next() {
    run_requested();
}

/// Reads the host's run request, runs it, and delivers its finish.
fn run_requested() {
    let finish = match decode::<RunRequest>("run request", &host_request()) {
        Ok(req) if req.version == PROTOCOL_VERSION => run(req),
        Ok(req) => internal_error(format!(
            "protocol version mismatch: host {}, guest {PROTOCOL_VERSION}",
            req.version
        )),
        Err(e) => internal_error(e.to_string()),
    };
    host_finish(&finish);
}

/// How every chain's script is compiled: as CPython would, so without
/// monty's default pytest-style `assert` messages (upstream's
/// `AssertMessageAnnotations`, on by default, made `assert k > 5` raise
/// `AssertionError('assert 1 > 5')` where CPython's has no arguments).
fn compile_options() -> CompileOptions {
    CompileOptions {
        assert_message_annotations: AssertMessageAnnotations::Off,
        answer_repr: true,
        ..CompileOptions::default()
    }
}

/// Pre-initialisation entry, called once by the host before any chain
/// (see the host's `src/snapshot.rs`): runs a trivial script so that what
/// monty builds lazily on first use (its table of interned core strings,
/// hash seeds, allocator state) is in linear memory when the host writes
/// that memory back into the module every chain then starts from. Calls no
/// `chainbox` import; exported by `build.rs`.
#[unsafe(no_mangle)]
pub extern "C" fn chainbox_warm() {
    if let Ok(runner) = MontyRun::new("1 + 1".to_owned(), "main.py", vec![], compile_options()) {
        let _ = runner.start(vec![], ResourceTracker::default(), PrintWriter::Disabled);
    }
}

fn internal_error(message: String) -> Finish {
    failed_at_start(ScriptError {
        compile: false,
        exc_type: "InternalError".into(),
        message,
        line: None,
        traceback: String::new(),
        memory_limit: false,
    })
}

/// The chain ended before the script ran: nothing to warn about.
fn failed_at_start(error: ScriptError) -> Finish {
    Finish {
        result: ScriptResult::Error(error),
        warnings: Vec::new(),
    }
}

/// Runs the chain to completion and says how it ended.
fn run(req: RunRequest) -> Finish {
    let limits = &req.limits;
    let _ = monty_alloc::set_hard_limit(monty_types::memory_limit_with_headroom(
        Some(limits.max_memory_bytes as usize),
        false,
    ));
    if req.session || !req.cells.is_empty() {
        return run_session(req, host_cell);
    }
    let mut runner = match MontyRun::new(req.script.clone(), "main.py", vec![], compile_options()) {
        Ok(runner) => runner,
        Err(exc) => return failed_at_start(script_error(&exc, true)),
    };
    // Relative paths resolve in the workspace (monty's default is `/`,
    // where nothing is mounted).
    runner.set_cwd(WORKSPACE);
    let mut chain = Chain::new(req.tools, &req.script, Vec::new());
    let tracker = ResourceTracker::new(resource_limits(limits));
    let progress = runner.start(vec![], tracker, PrintWriter::Callback(&mut chain.stdout));
    let result = chain.drive(progress);
    chain.finish(result)
}

std::thread_local! {
    /// The REPL a session's run left (`RunRequest::session`), for the
    /// instance's next run to continue (`RunRequest::continued`). The
    /// guest is single-threaded: this is one static.
    static KEPT: std::cell::RefCell<Option<MontyRepl>> = const { std::cell::RefCell::new(None) };
}

/// Runs a session's run (`RunRequest::cells`): its earlier cells, then the
/// new cell, the `script`, in one monty REPL, as CPython's REPL runs its
/// inputs. `begin_cell` is told each cell's index before it runs (the
/// host's `cell`). The REPL is kept afterwards ([`KEPT`]); a `continued`
/// run takes it instead of running the earlier cells again.
///
/// Every cell is one REPL input, `<python-input-N>` for cell N, the name
/// its tracebacks show, as in CPython's REPL. An earlier cell runs for the
/// names it binds: its output is discarded (`PrintWriter::Disabled`, never
/// the host's stdout), its value ignored, its never-awaited calls
/// forgotten, and an exception ends only that cell. The new cell is
/// reported as a chain's script is.
fn run_session(req: RunRequest, mut begin_cell: impl FnMut(usize)) -> Finish {
    let new_cell = req.cells.len();
    // The new cell compiled alone first: monty's REPL reports a compile
    // error as it reports a raise, and a cell monty cannot compile is a
    // compile error, as a chain's script is (under `auto` the host may
    // hand it to CPython), found before any cell runs or calls a tool.
    // Compiling depends on no name an earlier cell binds.
    if let Err(exc) = MontyRun::new(req.script.clone(), &cell_name(new_cell), vec![], compile_options()) {
        return failed_at_start(script_error(&exc, true));
    }
    let kept = KEPT.with_borrow_mut(Option::take);
    let (mut repl, replay) = match (req.continued, kept) {
        (true, Some(repl)) => (repl, 0..0),
        (true, None) => return internal_error("a continued run, but no earlier run kept its session".into()),
        (false, _) => {
            // One tracker, one heap and one memory limit for the whole session.
            let tracker = ResourceTracker::new(resource_limits(&req.limits));
            let mut repl = MontyRepl::new("main.py", tracker, compile_options());
            repl.set_cwd(WORKSPACE);
            (repl, 0..new_cell)
        }
    };
    let mut chain = Chain::new(req.tools, &req.script, req.cells);
    chain.muted = true;
    for index in replay {
        begin_cell(index);
        let progress = repl.feed_start(fed(&chain.cells[index]), NamedValues::default(), PrintWriter::Disabled);
        repl = match chain.drive_cell(progress) {
            Ok((repl, _)) => repl,
            Err(error) => error.repl,
        };
        // monty numbers a cell's calls from 0: the next cell's are others.
        chain.unawaited.clear();
    }
    begin_cell(new_cell);
    chain.muted = false;
    let progress = repl.feed_start(
        fed(&req.script),
        NamedValues::default(),
        PrintWriter::Callback(&mut chain.stdout),
    );
    let result = match chain.drive_cell(progress) {
        Ok((repl, value)) => {
            KEPT.set(Some(repl));
            Ok(value)
        }
        Err(error) => {
            let ReplStartError { repl, error } = *error;
            KEPT.set(Some(repl));
            Err(error)
        }
    };
    chain.finish(result)
}

/// Awaiting a tool call an earlier cell of the session made: CPython would
/// run it now; monty's REPL forgets a cell's calls when the cell ends, so
/// nothing can answer it.
fn earlier_cells_call() -> MontyException {
    MontyException::runtime_error(
        "a tool call made in an earlier cell cannot be awaited in a later one: call the tool again in this cell",
    )
}

/// The name monty's REPL gives a session's cell `index` (CPython's REPL
/// names its inputs so).
fn cell_name(index: usize) -> String {
    format!("<python-input-{index}>")
}

/// The cell a source position names (`<python-input-N>`), if a session's.
fn cell_index(filename: &str) -> Option<usize> {
    filename.strip_prefix("<python-input-")?.strip_suffix('>')?.parse().ok()
}

/// What the REPL is fed for a cell: an empty cell as a blank line, since
/// monty's REPL gives an empty input no number and would misname the
/// cells after it.
fn fed(cell: &str) -> &str {
    if cell.is_empty() { "\n" } else { cell }
}

/// The script's answer as the CPython guest reports it: JSON where
/// `json.dumps` (with tuples and sets as arrays, dataclasses as objects)
/// takes it, else its repr; `output_text` its repr, or itself for a str. The
/// run returns the final expression paired with the repr the VM wrote
/// (`CompileOptions::answer_repr`): a class's own `__repr__`, `Counter(...)`,
/// `range(0, 3)`; `None` for a str, or an answer holding an int too long to
/// write. A script without a final expression answers `None`, no pair.
fn answer(run_value: ObjectRef<'_>) -> ScriptResult {
    let (value, vm_repr) = match run_value.items().as_deref() {
        Some([value, repr]) if run_value.type_name() == "tuple" => (*value, repr.as_str().map(str::to_owned)),
        _ => (run_value, None),
    };
    if vm_repr.is_none() && json::has_int_past_str_limit(value, 0) {
        return ScriptResult::Error(int_str_limit_error());
    }
    let repr = || vm_repr.clone().unwrap_or_else(|| value.py_repr());
    ScriptResult::Ok {
        output: json::to_json(value).unwrap_or_else(|_| Value::String(repr())),
        output_text: value.as_str().map_or_else(repr, str::to_owned),
    }
}

fn resource_limits(limits: &GuestLimits) -> ResourceLimits {
    ResourceLimits {
        max_memory: Some(limits.max_memory_bytes as usize),
        max_recursion_depth: limits.max_recursion_depth as usize,
        // Suspensions are tool calls, lookups and OS calls; the host's call
        // budget is the real bound on tool calls.
        max_suspensions: usize::MAX,
        ..ResourceLimits::default()
    }
}

/// The answer holds an int too long for CPython to write: its `ValueError`,
/// as the CPython guest reports the same answer.
fn int_str_limit_error() -> ScriptError {
    let message = format!(
        "Exceeds the limit ({} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit",
        json::INT_MAX_STR_DIGITS
    );
    ScriptError {
        compile: false,
        exc_type: "ValueError".into(),
        traceback: format!("ValueError: {message}"),
        message,
        line: None,
        memory_limit: false,
    }
}

fn script_error(exc: &MontyException, compile: bool) -> ScriptError {
    let line = exc.traceback().last().map(|frame| frame.start.line);
    // A KeyError's message is `str(e)`, the repr of its key, as CPython
    // reports it (`KeyError: 'a'`); monty holds the key's text. An exception
    // whose args are not one str (`KeyError(('x', 2))`, vendored monty's
    // `ExcData::Args`) holds `str(e)` itself.
    let key_repr = (exc.exc_type() == ExcType::KeyError && exc.message().is_some() && exc.data().args().is_none())
        .then(|| exc.py_repr());
    let text = match &key_repr {
        Some(repr) => repr
            .strip_prefix("KeyError(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_default(),
        None => exc.message().unwrap_or_default(),
    };
    let mut message = head(text, MAX_REPORTED_BYTES);
    if is_missing_await(exc) {
        message.push_str(" (a tool call returns an awaitable: did you forget `await` before it?)");
    }
    let mut traceback = HeadTail::new(MAX_REPORTED_BYTES);
    // Writing into HeadTail cannot fail; a Display error would only cut the text short.
    let _ = write!(traceback, "{exc}");
    let mut traceback = traceback.finish();
    // Its last line is `KeyError: ` and the key's text: the repr there too.
    if let (Some(_), Some(raw)) = (&key_repr, exc.message())
        && let Some(start) = traceback.len().checked_sub(raw.len())
        && traceback.is_char_boundary(start)
        && traceback[start..] == *raw
        && traceback[..start].ends_with("KeyError: ")
    {
        traceback.replace_range(start.., text);
    }
    // CPython names a class by its module: `json.decoder.JSONDecodeError`.
    let last_line = traceback.rfind('\n').map_or(0, |i| i + 1);
    if traceback[last_line..].starts_with("json.JSONDecodeError: ") {
        traceback.replace_range(last_line..last_line + "json.".len(), "json.decoder.");
    }
    // monty names some classes by their module (`json.JSONDecodeError`);
    // the type CPython reports is the class's own name.
    let exc_type = exc.exc_type().to_string();
    let exc_type = exc_type.rsplit('.').next().unwrap_or(&exc_type).to_owned();
    ScriptError {
        compile: compile || exc.exc_type() == ExcType::SyntaxError,
        exc_type,
        message,
        line,
        traceback,
        memory_limit: exc.exc_type() == ExcType::MemoryError && monty::memory_limit_hit(),
    }
}

/// Most bytes of an error message, and of each end of a traceback, the guest
/// reports. The host cuts both much shorter (`chain::MAX_ERROR_MESSAGE_CHARS`,
/// `MAX_TRACEBACK_CHARS`); cutting here first keeps a script that raises a
/// huge message from running the guest out of memory while it copies,
/// formats and encodes that message for the host.
const MAX_REPORTED_BYTES: usize = 64 * 1024;

/// The first `max` bytes of `text`, cut at a character boundary.
fn head(text: &str, max: usize) -> String {
    text[..floor_char_boundary(text, max)].to_owned()
}

/// The largest character boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut end = text.len().min(at);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// A `fmt::Write` sink that keeps the first and the last `max` bytes of what
/// is written, so formatting a huge value costs no huge allocation (at most
/// ~3 × `max` bytes at any time).
struct HeadTail {
    max: usize,
    head: String,
    /// Empty while the head still has room.
    tail: String,
    dropped: bool,
}

impl HeadTail {
    fn new(max: usize) -> Self {
        HeadTail {
            max,
            head: String::new(),
            tail: String::new(),
            dropped: false,
        }
    }

    /// Keeps the last `max` bytes of the tail.
    fn trim_tail(&mut self) {
        if self.tail.len() > self.max {
            let mut cut = self.tail.len() - self.max;
            while !self.tail.is_char_boundary(cut) {
                cut += 1;
            }
            self.tail.drain(..cut);
            self.dropped = true;
        }
    }

    fn finish(mut self) -> String {
        self.trim_tail();
        if self.dropped {
            self.head.push_str("\n[...]\n");
        }
        self.head.push_str(&self.tail);
        self.head
    }
}

impl std::fmt::Write for HeadTail {
    fn write_str(&mut self, mut s: &str) -> std::fmt::Result {
        if self.tail.is_empty() {
            let fits = floor_char_boundary(s, self.max - self.head.len());
            self.head.push_str(&s[..fits]);
            s = &s[fits..];
        }
        self.tail.push_str(s);
        // Trimming on every write would move the tail each time: let it
        // grow to twice its size first.
        if self.tail.len() > 2 * self.max {
            self.trim_tail();
        }
        Ok(())
    }
}

/// A `TypeError` about a future or coroutine object is, in a chain, almost
/// always a tool call used without `await`.
fn is_missing_await(exc: &MontyException) -> bool {
    exc.exc_type() == ExcType::TypeError
        && exc
            .message()
            .is_some_and(|m| m.contains("coroutine") || m.contains("future") || m.contains("Future"))
}

/// One running chain: the tools it may call, its workspace and its output.
struct Chain {
    tools: Vec<ToolDecl>,
    /// Where each line of the script (a session's new cell) starts.
    line_starts: Vec<u32>,
    /// A session's earlier cells (empty for a chain): the sources a
    /// position in `<python-input-N>` indexes.
    cells: Vec<String>,
    stdout: Stdout,
    /// The output is discarded (a session's earlier cells), never written
    /// to `stdout`.
    muted: bool,
    /// Tool calls made without an immediate `await`, by call id, not yet
    /// started on the host. In CPython calling an `async def` only creates a
    /// coroutine, which runs once awaited; so here a call is started only
    /// when monty reports it awaited (`ResolveFutures`), and one never
    /// awaited never reaches the host.
    unawaited: BTreeMap<u32, Unawaited>,
}

/// A tool call whose coroutine exists but has not been awaited yet.
struct Unawaited {
    tool: String,
    line: u32,
    /// The encoded [`ToolCall`], ready for `start`.
    message: Vec<u8>,
}

/// The drive loop, written once for both of monty's progress families: a
/// chain's script (`RunProgress`) and a session's cells (`ReplProgress`,
/// the same suspensions with the same API), which differ only in how they
/// complete (`$complete => $done`) and in their error type.
macro_rules! drive_loop {
    ($(#[$attr:meta])* fn $name:ident($Progress:ident, $Err:ty) -> $Done:ty { $complete:pat => $done:expr }) => {
        $(#[$attr])*
        fn $name(&mut self, mut progress: Result<$Progress, $Err>) -> Result<$Done, $Err> {
            loop {
                progress = match progress? {
                    $complete => return Ok($done),
                    $Progress::NameLookup(lookup) => {
                        let known = self.is_tool(&lookup.name) || lookup.name == LOAD_ARTIFACT_FN;
                        let answer = if known {
                            NameLookupResult::Value(MontyObject::function(lookup.name.clone(), None))
                        } else {
                            NameLookupResult::Undefined
                        };
                        lookup.resume(answer, self.print())
                    }
                    $Progress::FunctionCall(call)
                        if call.function_name == LOAD_ARTIFACT_FN && !self.is_tool(LOAD_ARTIFACT_FN) =>
                    {
                        // A plain function, not a tool: no await, no budget.
                        self.stdout.flush();
                        let result = load_artifact(&call.args);
                        let print = self.print();
                        match result {
                            Ok(value) => call.resume(ExtFunctionResult::Return(value), print),
                            Err(exc) => call.resume(ExtFunctionResult::Error(exc), print),
                        }
                    }
                    $Progress::FunctionCall(call) => {
                        let Some(tool) = self.tools.iter().find(|t| t.name == call.function_name) else {
                            // monty calls a name the script never defined as a
                            // host function; it is one only if it names a tool.
                            // Anything else is Python's NameError, and never
                            // reaches the host.
                            let answer = ExtFunctionResult::NotFound(call.function_name.clone());
                            progress = call.resume(answer, self.print());
                            continue;
                        };
                        let message = tool_call(tool, &call.args);
                        let message = match message {
                            Ok(message) => message,
                            Err(exc) => {
                                let print = self.print();
                                progress = if call.allow_eager_await {
                                    call.resume_eager(Err(exc), print)
                                } else {
                                    call.resume(ExtFunctionResult::Error(exc), print)
                                };
                                continue;
                            }
                        };
                        if call.allow_eager_await {
                            self.stdout.flush();
                            let outcome = decode_outcome(&host_call(&message));
                            call.resume_eager(outcome, self.print())
                        } else {
                            let line = self.line(&call.position);
                            let tool = call.function_name.clone();
                            self.unawaited.insert(call.call_id, Unawaited { tool, line, message });
                            call.resume_pending(self.print())
                        }
                    }
                    $Progress::ResolveFutures(waiting) => {
                        self.stdout.flush();
                        // Exactly the calls something awaits (the vendored
                        // monty's `pending_call_ids`): start those not started yet.
                        let ids = waiting.pending_call_ids().to_vec();
                        if ids.is_empty() && !self.cells.is_empty() {
                            // What the cell awaits is a tool call an earlier
                            // cell made, which monty's REPL keeps no track of
                            // past its cell.
                            progress = waiting.abort(earlier_cells_call(), self.print());
                            continue;
                        }
                        for id in &ids {
                            if let Some(call) = self.unawaited.remove(id) {
                                host_start(*id, &call.message);
                            }
                        }
                        let results = match decode::<Completions>("completions", &host_wait(&ids)) {
                            Ok(done) => done
                                .done
                                .into_iter()
                                .filter(|(id, _)| ids.contains(id))
                                .map(|(id, outcome)| (id, ext_result(outcome_to_result(outcome))))
                                .collect(),
                            Err(e) => ids
                                .iter()
                                .map(|id| (*id, ExtFunctionResult::Error(MontyException::runtime_error(&e))))
                                .collect(),
                        };
                        waiting.resume(results, self.print())
                    }
                    $Progress::OsCall(call) => {
                        self.stdout.flush();
                        if call.allow_eager_await {
                            // `await asyncio.sleep(d)` with nothing else to run.
                            let result = os_on_host(&call.function_call);
                            call.resume_eager(result, self.print())
                        } else {
                            call.resume_with(self.print(), os_call)
                        }
                    }
                };
            }
        }
    };
}

impl Chain {
    fn new(tools: Vec<ToolDecl>, script: &str, cells: Vec<String>) -> Chain {
        Chain {
            tools,
            line_starts: line_starts(script),
            cells,
            stdout: Stdout::default(),
            muted: false,
            unawaited: BTreeMap::new(),
        }
    }

    drive_loop! {
        /// Drives the interpreter until the script completes or fails.
        fn drive(RunProgress, MontyException) -> MontyObject { RunProgress::Complete(value) => value }
    }

    drive_loop! {
        /// Drives one cell of a session until it completes or fails; either
        /// way the REPL comes back, with the names the cell bound.
        fn drive_cell(ReplProgress, Box<ReplStartError>) -> (MontyRepl, MontyObject) {
            ReplProgress::Complete { repl, value } => (repl, value)
        }
    }

    /// Where the script's output goes.
    fn print(&mut self) -> PrintWriter<'_> {
        if self.muted {
            PrintWriter::Disabled
        } else {
            PrintWriter::Callback(&mut self.stdout)
        }
    }

    /// The 1-based line of `position` in the source it names: a session's
    /// earlier cell (a call in a function that cell defined), else the
    /// script.
    fn line(&self, position: &SourceRange) -> u32 {
        match cell_index(&position.filename).and_then(|index| self.cells.get(index)) {
            Some(cell) => line_of(&line_starts(cell), position),
            None => line_of(&self.line_starts, position),
        }
    }

    /// How the script (a session's new cell) ended, for the host.
    fn finish(&mut self, result: Result<MontyObject, MontyException>) -> Finish {
        self.stdout.flush();
        let result = match result {
            Ok(value) => answer(value.as_ref()),
            Err(exc) => {
                let mut error = script_error(&exc, false);
                self.add_name_hint(&mut error);
                ScriptResult::Error(error)
            }
        };
        Finish {
            result,
            warnings: self.never_awaited(),
        }
    }

    fn is_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// CPython's hints for an uncaught `NameError` (`suggest`): a name
    /// close to a tool's gets `. Did you mean: 'get_weather'?` in the message
    /// and the traceback, a standard module's name `. Did you forget to import
    /// 'json'?` in the traceback. CPython's traceback printer adds them;
    /// `str(e)` in the script stays the plain message (the message reports
    /// the tool hint as the CPython guest does).
    fn add_name_hint(&self, error: &mut ScriptError) {
        if error.exc_type != "NameError" {
            return;
        }
        let Some(name) = error
            .message
            .strip_prefix("name '")
            .and_then(|rest| rest.strip_suffix("' is not defined"))
        else {
            return;
        };
        let close = self.close_tool(name).map(|close| format!(". Did you mean: '{close}'?"));
        let import = suggest::is_stdlib_module(name).then(|| format!("forget to import '{name}'?"));
        let in_traceback = match (&close, import) {
            (None, None) => return,
            (Some(close), None) => close.clone(),
            (None, Some(import)) => format!(". Did you {import}"),
            (Some(close), Some(import)) => format!("{close} Or did you {import}"),
        };
        if error.traceback.ends_with(&error.message) {
            error.traceback.push_str(&in_traceback);
        }
        if let Some(close) = close {
            error.message.push_str(&close);
        }
    }

    /// The tool (or `load_artifact`) CPython would suggest for a misspelled `name`.
    fn close_tool(&self, name: &str) -> Option<String> {
        let candidates: Vec<&str> = self
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .chain([LOAD_ARTIFACT_FN])
            .collect();
        monty::closest_name(name, &candidates).map(str::to_owned)
    }

    /// The calls whose coroutines were never awaited, as Python warns of them.
    fn never_awaited(&self) -> Vec<Warning> {
        self.unawaited
            .values()
            .map(|call| Warning {
                message: format!("coroutine '{}' was never awaited", call.tool),
                line: Some(call.line),
            })
            .collect()
    }
}

/// Builds the host message for one tool call, mapping positional
/// arguments onto the tool's parameter names.
fn tool_call(tool: &ToolDecl, args: &monty_types::CallArgs) -> Result<Vec<u8>, MontyException> {
    let (name, params) = (tool.name.as_str(), tool.params.as_slice());
    let mut map = Map::new();
    for (i, value) in args.args().enumerate() {
        let Some(param) = params.get(i) else {
            return Err(MontyException::new(
                ExcType::TypeError,
                Some(format!(
                    "{name}() takes {} positional argument{} but {} were given",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    args.args().len()
                )),
            ));
        };
        map.insert(param.clone(), json::to_json(value).map_err(type_error)?);
    }
    for (key, value) in args.kwargs() {
        let Some(key) = key.as_str() else {
            return Err(type_error(format!("{name}() keywords must be strings")));
        };
        if map.contains_key(key) {
            return Err(type_error(format!("{name}() got multiple values for argument '{key}'")));
        }
        map.insert(key.to_owned(), json::to_json(value).map_err(type_error)?);
    }
    Ok(encode(&ToolCall {
        tool: name.to_owned(),
        args: map,
    }))
}

/// `load_artifact(handle)`: the full value behind an offloaded result.
fn load_artifact(args: &monty_types::CallArgs) -> Result<MontyObject, MontyException> {
    let handle = args
        .arg(0)
        .or_else(|| args.kwarg("handle"))
        .ok_or_else(|| type_error("load_artifact() missing required argument: 'handle'".into()))?;
    let handle = json::to_json(handle).map_err(type_error)?;
    decode_outcome(&host_load_artifact(&encode(&LoadArtifact { handle })))
}

fn type_error(message: String) -> MontyException {
    MontyException::new(ExcType::TypeError, Some(message))
}

/// 1-based line of a source position; monty gives positions as byte ranges.
fn line_of(line_starts: &[u32], position: &monty_types::SourceRange) -> u32 {
    line_starts.partition_point(|start| *start <= position.start) as u32
}

/// Byte offsets where each line of `script` starts.
fn line_starts(script: &str) -> Vec<u32> {
    std::iter::once(0)
        .chain(script.match_indices('\n').map(|(i, _)| i as u32 + 1))
        .collect()
}

/// Decodes the host's answer to one call into what the `await` produces.
fn decode_outcome(bytes: &[u8]) -> Result<MontyObject, MontyException> {
    match decode::<CallOutcome>("call outcome", bytes) {
        Ok(outcome) => outcome_to_result(outcome),
        Err(e) => Err(MontyException::runtime_error(e)),
    }
}

fn outcome_to_result(outcome: CallOutcome) -> Result<MontyObject, MontyException> {
    let (exc_type, message) = match outcome {
        CallOutcome::Ok { value } => return Ok(json::from_json(&value)),
        CallOutcome::Error { message } => (ExcType::RuntimeError, message),
        CallOutcome::Denied { message } => (ExcType::PermissionError, message),
        CallOutcome::Timeout { message } => (ExcType::TimeoutError, message),
        CallOutcome::Invalid { message } => (ExcType::ValueError, message),
        CallOutcome::NotFound { message } => (ExcType::NameError, message),
    };
    Err(MontyException::new(exc_type, Some(message)))
}

fn ext_result(result: Result<MontyObject, MontyException>) -> ExtFunctionResult {
    match result {
        Ok(value) => ExtFunctionResult::Return(value),
        Err(exc) => ExtFunctionResult::Error(exc),
    }
}

/// Answers one OS-level request of the interpreter: files and sleeps go to
/// the host; the environment is empty; everything else is refused.
fn os_call(call: OsFunctionCall) -> ExtFunctionResult {
    let to_host = call.fs_primary_path().is_some() || sleep_of(&call).is_some();
    if to_host {
        return ext_result(os_on_host(&call));
    }
    match call {
        // The sandbox has no environment at all.
        OsFunctionCall::Getenv(args) => ExtFunctionResult::Return(args.default),
        OsFunctionCall::GetEnviron => ExtFunctionResult::Return(MontyObject::dict(Vec::new())),
        other => ExtFunctionResult::Error(other.on_no_handler()),
    }
}

/// The host's answer to a file call. Its `OSError`s come as messages
/// (`[Errno 2] No such file or directory: '/workspace/a'`); their fields are
/// read back from them, for `errno`, `filename` and CPython's `args`.
fn os_on_host(call: &OsFunctionCall) -> Result<MontyObject, MontyException> {
    match decode::<FsOutcome>("os outcome", &host_os(&encode(call))) {
        Ok(Err(exc)) if exc.exc_type().is_subclass_of(ExcType::OSError) => {
            let data = exc.message().and_then(OsErrorData::parse);
            Err(match data {
                Some(data) => exc.with_data(ExcData::Os(Box::new(data))),
                None => exc,
            })
        }
        Ok(outcome) => outcome,
        Err(e) => Err(MontyException::runtime_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session run with `cells` before `script`, natively: the cells
    /// call no host function (no awaited tool, no file, no output of the
    /// new cell). Returns the finish and the cells begun.
    fn session(cells: &[&str], script: &str) -> (Finish, Vec<usize>) {
        session_run(cells, script, false)
    }

    /// [`session`], `continued` on the REPL this thread's last session run
    /// kept when `continued`.
    fn session_run(cells: &[&str], script: &str, continued: bool) -> (Finish, Vec<usize>) {
        let req = RunRequest {
            version: PROTOCOL_VERSION,
            script: script.into(),
            tools: vec![ToolDecl {
                name: "get_x".into(),
                params: vec![],
            }],
            limits: GuestLimits {
                max_memory_bytes: 1 << 30,
                max_recursion_depth: 200,
            },
            cells: cells.iter().map(|cell| (*cell).to_owned()).collect(),
            session: true,
            continued,
        };
        let mut begun = Vec::new();
        let finish = run_session(req, |index| begun.push(index));
        (finish, begun)
    }

    fn output_text(finish: &Finish) -> &str {
        match &finish.result {
            ScriptResult::Ok { output_text, .. } => output_text,
            ScriptResult::Error(error) => panic!("the cell failed: {error:?}"),
        }
    }

    fn error(finish: &Finish) -> &ScriptError {
        match &finish.result {
            ScriptResult::Error(error) => error,
            ok => panic!("the cell succeeded: {ok:?}"),
        }
    }

    #[test]
    fn a_sessions_cells_share_one_namespace_and_each_is_begun() {
        let (finish, begun) = session(&["x = 1", "y = x + 1\ndef f(n):\n    return n * y"], "f(x + y)");
        assert_eq!(output_text(&finish), "6");
        assert_eq!(begun, [0, 1, 2]);
        assert!(finish.warnings.is_empty());
    }

    #[test]
    fn an_exception_ends_only_its_own_cell_and_keeps_the_names_bound_before_it() {
        let cells = ["a = 1\nraise ValueError('boom')\nb = 2", "c = a + 1"];
        let (finish, begun) = session(&cells, "(a, c)");
        assert_eq!(output_text(&finish), "(1, 2)");
        assert_eq!(begun, [0, 1, 2]);
        let (finish, _) = session(&cells, "b");
        let error = error(&finish);
        assert_eq!(error.exc_type, "NameError");
        assert_eq!(error.message, "name 'b' is not defined");
        assert!(!error.compile);
    }

    #[test]
    fn a_continued_run_goes_on_in_the_repl_the_last_run_kept_without_running_earlier_cells() {
        let (finish, begun) = session(&[], "x = 20\nx");
        assert_eq!((output_text(&finish), begun.as_slice()), ("20", [0].as_slice()));
        // Were the earlier cell run again, it would raise before binding `y`.
        let (finish, begun) = session_run(&["raise ValueError('ran twice')"], "y = x + 1\ny", true);
        assert_eq!((output_text(&finish), begun.as_slice()), ("21", [1].as_slice()));
        let (finish, _) = session_run(&["", ""], "(x, y)", true);
        assert_eq!(output_text(&finish), "(20, 21)");
    }

    #[test]
    fn a_continued_run_keeps_the_names_a_raising_cell_bound() {
        let (finish, _) = session(&[], "a = 1\nraise ValueError('boom')");
        assert_eq!(error(&finish).exc_type, "ValueError");
        let (finish, _) = session_run(&[""], "a", true);
        assert_eq!(output_text(&finish), "1");
    }

    #[test]
    fn a_continued_run_with_nothing_kept_is_an_internal_error() {
        let (finish, begun) = session_run(&["x = 1"], "x", true);
        assert_eq!(error(&finish).exc_type, "InternalError");
        assert!(begun.is_empty());
    }

    #[test]
    fn an_earlier_cells_output_is_discarded_and_its_value_ignored() {
        // Natively the host's `stdout` panics: nothing reaches it.
        let (finish, _) = session(&["print('hidden')\nz = 3\nz * 100", "print(z, end='')"], "z");
        assert_eq!(output_text(&finish), "3");
    }

    #[test]
    fn the_new_cells_answer_is_reported_as_a_scripts_is() {
        let cells = ["class A:\n    def __repr__(self):\n        return 'A!'"];
        let (finish, _) = session(&cells, "A()");
        assert_eq!(output_text(&finish), "A!");
        let (finish, _) = session(&cells, "'text'");
        assert_eq!(
            finish.result,
            ScriptResult::Ok {
                output: Value::String("text".into()),
                output_text: "text".into(),
            }
        );
        let (finish, _) = session(&cells, "n = 1");
        assert_eq!(output_text(&finish), "None");
    }

    #[test]
    fn a_sessions_tracebacks_name_each_cell_as_cpythons_repl_does() {
        // An empty cell is an input too: the cells after it keep their numbers.
        let cells = ["", "def f():\n    raise KeyError('k')"];
        let (finish, begun) = session(&cells, "\n\nf()");
        assert_eq!(begun, [0, 1, 2]);
        let error = error(&finish);
        assert_eq!(error.exc_type, "KeyError");
        assert_eq!(error.message, "'k'");
        // The line where it was raised, in the cell that defined `f`.
        assert_eq!(error.line, Some(2));
        let frames = [
            "File \"<python-input-2>\", line 3, in <module>\n    f()\n",
            "File \"<python-input-1>\", line 2, in f\n    raise KeyError('k')\nKeyError: 'k'",
        ];
        assert!(
            frames.iter().all(|frame| error.traceback.contains(frame)),
            "{}",
            error.traceback
        );
    }

    #[test]
    fn a_new_cell_monty_cannot_compile_is_a_compile_error_before_any_cell_runs() {
        let (finish, begun) = session(&["x = 1"], "x = (");
        let error = error(&finish);
        assert!(error.compile);
        assert_eq!(error.exc_type, "SyntaxError");
        assert!(error.traceback.contains("<python-input-1>"), "{}", error.traceback);
        assert!(begun.is_empty());
        // An earlier cell that does not compile binds nothing, and ends only itself.
        let (finish, begun) = session(&["x = (", "y = 2"], "y");
        assert_eq!(output_text(&finish), "2");
        assert_eq!(begun, [0, 1, 2]);
    }

    #[test]
    fn only_the_new_cells_never_awaited_calls_are_warned_of() {
        let cells = ["c = get_x()", "def g():\n    return get_x()"];
        let (finish, _) = session(&cells, "d = 1\ne = g()");
        let lines: Vec<_> = finish.warnings.iter().map(|w| (w.message.as_str(), w.line)).collect();
        // The call is on line 2 of the cell that defined `g`.
        assert_eq!(lines, [("coroutine 'get_x' was never awaited", Some(2))]);
        let (finish, _) = session(&cells, "1");
        assert!(finish.warnings.is_empty(), "{:?}", finish.warnings);
    }

    #[test]
    fn awaiting_a_call_an_earlier_cell_made_is_a_clear_error_and_never_reaches_the_host() {
        let (finish, _) = session(&["c = get_x()"], "d = 1\nawait c");
        let error = error(&finish);
        assert_eq!(error.exc_type, "RuntimeError");
        assert_eq!(error.message, earlier_cells_call().message().unwrap());
        assert_eq!(error.line, Some(2));
        assert!(finish.warnings.is_empty(), "{:?}", finish.warnings);
    }

    #[test]
    fn c_math_codes_are_the_protocols() {
        use chainbox_protocol::imports::{C_MATH_BINARY, C_MATH_FUNCTIONS};
        let names: Vec<_> = CMathFn::ALL.iter().map(|f| f.c_name()).collect();
        assert_eq!(names, C_MATH_FUNCTIONS);
        for (code, f) in CMathFn::ALL.iter().enumerate() {
            assert_eq!(f.code() as usize, code);
            assert_eq!(f.is_binary(), C_MATH_BINARY.contains(&f.c_name()), "{}", f.c_name());
        }
    }

    #[test]
    fn a_hosts_os_error_message_reads_back_as_its_fields() {
        use monty_types::OsFilename::{Fd, Path};
        let fields = |message: &str| {
            let data = OsErrorData::parse(message)?;
            Some((data.errno, data.strerror, data.filename, data.filename2))
        };
        let path = |p: &str| Some(Path(p.to_owned()));
        let enoent = "No such file or directory".to_owned();
        assert_eq!(
            fields("[Errno 2] No such file or directory: '/workspace/a b'"),
            Some((2, enoent.clone(), path("/workspace/a b"), None))
        );
        assert_eq!(
            fields("[Errno 2] No such file or directory: 'a' -> \"it's\""),
            Some((2, enoent, path("a"), path("it's")))
        );
        assert_eq!(
            fields("[Errno 13] Permission denied: 'tab\\there\\n\\x07\\u200b: x'"),
            Some((
                13,
                "Permission denied".to_owned(),
                path("tab\there\n\u{7}\u{200b}: x"),
                None
            ))
        );
        assert_eq!(
            fields("[Errno 9] Bad file descriptor: 99"),
            Some((9, "Bad file descriptor".to_owned(), Some(Fd(99)), None))
        );
        assert_eq!(
            fields("[Errno 22] Invalid argument"),
            Some((22, "Invalid argument".to_owned(), None, None))
        );
        // Anything that is not such a message stays a message.
        assert_eq!(fields("disk full"), None);
        assert_eq!(fields("[Errno x] y"), None);
        assert_eq!(
            fields("[Errno 2] No such file: 'a' trailing"),
            Some((2, "No such file: 'a' trailing".to_owned(), None, None))
        );
    }

    #[test]
    fn head_tail_keeps_both_ends_of_a_long_text() {
        let mut text = HeadTail::new(8);
        for i in 0..100 {
            let _ = write!(text, "{i},");
        }
        let kept = text.finish();
        assert!(kept.starts_with("0,1,2,3,"), "{kept}");
        assert!(kept.ends_with(",98,99,"), "{kept}");
        assert!(kept.contains("\n[...]\n"), "{kept}");
    }

    #[test]
    fn head_tail_of_a_short_text_is_the_text() {
        let mut text = HeadTail::new(64);
        let _ = text.write_str("Traceback: short");
        assert_eq!(text.finish(), "Traceback: short");
    }

    #[test]
    fn head_tail_never_splits_a_character() {
        let mut text = HeadTail::new(5);
        let _ = write!(text, "{}", "é".repeat(50));
        let kept = text.finish();
        assert!(kept.chars().all(|c| c == 'é' || "\n[.]".contains(c)), "{kept}");
    }

    /// A one-line chain that knows one tool, for the error hints.
    fn chain_with_tool(name: &str) -> Chain {
        Chain {
            tools: vec![ToolDecl {
                name: name.into(),
                params: vec![],
            }],
            line_starts: vec![0],
            cells: Vec::new(),
            stdout: Stdout::default(),
            muted: false,
            unawaited: BTreeMap::new(),
        }
    }

    #[test]
    fn an_uncaught_name_error_close_to_a_tool_gets_cpythons_hint() {
        let chain = chain_with_tool("get_weather");
        let mut error = ScriptError {
            compile: false,
            exc_type: "NameError".into(),
            message: "name 'get_wether' is not defined".into(),
            line: Some(1),
            traceback: "Traceback (most recent call last):\n  ...\nNameError: name 'get_wether' is not defined".into(),
            memory_limit: false,
        };
        chain.add_name_hint(&mut error);
        assert_eq!(
            error.message,
            "name 'get_wether' is not defined. Did you mean: 'get_weather'?"
        );
        assert!(
            error.traceback.ends_with("Did you mean: 'get_weather'?"),
            "{}",
            error.traceback
        );
    }

    #[test]
    fn an_uncaught_name_error_naming_a_module_gets_the_import_hint_in_its_traceback() {
        let chain = chain_with_tool("jsonl");
        let error_for = |name: &str| ScriptError {
            compile: false,
            exc_type: "NameError".into(),
            message: format!("name '{name}' is not defined"),
            line: Some(1),
            traceback: format!("Traceback (most recent call last):\n  ...\nNameError: name '{name}' is not defined"),
            memory_limit: false,
        };
        let mut error = error_for("math");
        chain.add_name_hint(&mut error);
        assert_eq!(error.message, "name 'math' is not defined");
        assert!(
            error
                .traceback
                .ends_with("name 'math' is not defined. Did you forget to import 'math'?"),
            "{}",
            error.traceback
        );
        let mut error = error_for("json");
        chain.add_name_hint(&mut error);
        assert_eq!(error.message, "name 'json' is not defined. Did you mean: 'jsonl'?");
        assert!(
            error
                .traceback
                .ends_with("name 'json' is not defined. Did you mean: 'jsonl'? Or did you forget to import 'json'?"),
            "{}",
            error.traceback
        );
    }
}
