//! Command tools: a tool implemented by a subprocess.
//!
//! The protocol is one JSON document each way. chainbox writes
//! `{"name": ..., "arguments": {...}}` to the program's stdin and closes it;
//! the program prints its result on stdout — a plain JSON value, or a
//! `ToolExecutionResult`-shaped object (`{"content": [{"type": "text", ...}]}`)
//! — and exits 0. A non-zero exit is a tool error whose message is the
//! program's stderr.
//!
//! Invariants:
//! - The child never outlives its call: it is spawned with `kill_on_drop`, so
//!   when the invoker drops the call's future (timeout, cancelled chain) the
//!   process is killed; on Unix it leads its own process group, killed when
//!   the call ends, so nothing it started in the background survives either.
//! - Everything read from the child is bounded ([`CommandTool::max_output_bytes`]
//!   for stdout, [`MAX_STDERR_BYTES`] for stderr), so a runaway tool cannot
//!   exhaust host memory.
//! - The child sees only `PATH` from the host environment (see
//!   [`CommandTool`]).
//!
//! Boundary: this module does not validate arguments, enforce timeouts or
//! ask for approval; the invoker does all three before and around `execute`.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::{Permission, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRisk};
use crate::result::MAX_ERROR_MESSAGE_CHARS;
use crate::telemetry;
use crate::util::truncate_chars;

/// Default cap on a command tool's stdout: 64 MiB. Large enough for media
/// results (base64 images), small enough that a tool stuck in a print loop
/// cannot exhaust the host's memory.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// Cap on how much of a command tool's stderr is kept: 64 KiB. Stderr only
/// feeds error messages (themselves cut to [`MAX_ERROR_MESSAGE_CHARS`]); the
/// rest is read and discarded so the child never blocks on a full pipe.
pub const MAX_STDERR_BYTES: usize = 64 * 1024;

/// How much of unparsable stdout is quoted back in the error message.
const INVALID_OUTPUT_PREVIEW_CHARS: usize = 200;

/// A tool implemented by a subprocess (see the module docs for the protocol).
///
/// The child's environment is cleared except for `PATH`: tool arguments come
/// from model-written scripts, so the tool must not inherit the host's
/// secrets (API keys, tokens, cloud credentials in environment variables)
/// just because chainbox happens to run with them. `PATH` is kept so that
/// `command = ["python3", "tool.py"]` finds its interpreter. A tool that
/// needs configuration should read it from a file next to its manifest.
#[derive(Debug, Clone)]
pub struct CommandTool {
    info: ToolInfo,
    command: Vec<String>,
    working_dir: Option<PathBuf>,
    max_output_bytes: usize,
}

impl CommandTool {
    /// A safe command tool running `command` (program, then arguments) in
    /// the current directory, with the default output cap.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        command: Vec<String>,
    ) -> Self {
        CommandTool {
            info: ToolInfo::new(name, description, input_schema),
            command,
            working_dir: None,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }

    /// Sets the tool's risk tier.
    pub fn with_risk(mut self, risk: ToolRisk) -> Self {
        self.info.risk = risk;
        self
    }

    /// Declares what the program touches (`fs.read`, `net`…); the chain's
    /// policy must grant each one.
    pub fn with_permissions(mut self, permissions: impl IntoIterator<Item = Permission>) -> Self {
        self.info.permissions = permissions.into_iter().collect();
        self
    }

    /// Its results are untrusted (see [`ToolInfo::untrusted`]).
    pub fn with_untrusted_output(mut self) -> Self {
        self.info.untrusted = true;
        self
    }

    /// Guards exactly `args` (see [`ToolInfo::guarded_args`]).
    pub fn with_guarded_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.info.guarded_args = Some(args.into_iter().map(Into::into).collect());
        self
    }

    /// Runs the program in this directory (a manifest's folder, typically).
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets the cap on the program's stdout, in bytes.
    pub fn with_max_output_bytes(mut self, max: usize) -> Self {
        self.max_output_bytes = max;
        self
    }

    /// The program and its arguments.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// The directory the program runs in, if not the current one.
    pub fn working_dir(&self) -> Option<&Path> {
        self.working_dir.as_deref()
    }

    /// The cap on the program's stdout, in bytes.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes
    }

    fn spawn(&self) -> Result<tokio::process::Child, ToolError> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(ToolError::new(format!(
                "tool `{}` has no command to run",
                self.info.name
            )));
        };
        let mut cmd = confined_command(program, args, self.working_dir.as_deref());
        // The call's trace context, for a tool that traces its own work.
        if let Some(traceparent) = telemetry::current_traceparent() {
            cmd.env(telemetry::TRACEPARENT_ENV, traceparent);
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.spawn()
            .map_err(|e| ToolError::new(format!("tool `{}`: cannot start `{program}`: {e}", self.info.name)))
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> ToolError {
        ToolError::new(format!("tool `{}`: {what}: {e}", self.info.name))
    }
}

#[async_trait]
impl Tool for CommandTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn source(&self) -> String {
        format!("command:{}", self.info.name)
    }

    async fn execute(&self, ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let request = serde_json::json!({"name": self.info.name, "arguments": args});
        let payload = serde_json::to_vec(&request).map_err(|e| ToolError::new(e.to_string()))?;
        let mut child = self.spawn()?;
        // Declared after `child`, so dropped first: however the call ends,
        // whatever the tool started in the background dies with it.
        #[cfg(unix)]
        let _group = child.id().map(ProcessGroup);
        tracing::debug!(tool = %self.info.name, run_id = %ctx.run_id, call_id = ctx.call_id, pid = ?child.id(), "command tool started");

        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();

        // Write, read stdout and read stderr at the same time: a tool may
        // print before (or without) reading its input, and either pipe can
        // fill up while the other is being waited on.
        let write = async {
            if let Some(mut stdin) = stdin {
                match stdin.write_all(&payload).await {
                    // The tool exited or closed stdin without reading it all:
                    // that is its business; its exit status tells the rest.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                    Err(e) => return Err(self.io_error("cannot write its input", e)),
                    Ok(()) => {}
                }
                // Dropping stdin closes it, so the tool sees end of input.
            }
            Ok(())
        };
        let read_stdout = async {
            let Some(stdout) = stdout else {
                return Ok(Vec::new());
            };
            let max = self.max_output_bytes;
            let (bytes, complete) = read_capped(stdout, max)
                .await
                .map_err(|e| self.io_error("cannot read its output", e))?;
            if !complete {
                return Err(ToolError::new(format!(
                    "tool `{}`: output exceeds {max} bytes",
                    self.info.name
                )));
            }
            Ok(bytes)
        };
        let read_stderr = async {
            let Some(stderr) = stderr else {
                return Ok(Vec::new());
            };
            drain_keeping(stderr, MAX_STDERR_BYTES)
                .await
                .map_err(|e| self.io_error("cannot read its stderr", e))
        };
        let ((), out, err) = tokio::try_join!(write, read_stdout, read_stderr)?;
        let status = child
            .wait()
            .await
            .map_err(|e| self.io_error("cannot wait for it to exit", e))?;

        if !status.success() {
            return Err(ToolError::new(failure_message(&err, status)));
        }
        match serde_json::from_slice::<Value>(&out) {
            Ok(value) => Ok(ToolOutput::from_json(value)),
            Err(_) if out.iter().all(u8::is_ascii_whitespace) => Err(ToolError::new(format!(
                "tool `{}` printed nothing (expected a JSON value on stdout)",
                self.info.name
            ))),
            Err(e) => {
                let text = String::from_utf8_lossy(&out);
                let preview = truncate_chars(text.trim(), INVALID_OUTPUT_PREVIEW_CHARS);
                Err(ToolError::new(format!(
                    "tool `{}` printed invalid JSON: {e} (output starts with {preview:?})",
                    self.info.name
                )))
            }
        }
    }
}

/// A child process as chainbox starts every tool program (command tools,
/// MCP servers): the environment cleared but for `PATH` (no host secrets),
/// killed when its handle is dropped, leading its own process group (see
/// [`ProcessGroup`]), in `working_dir` when given.
pub(crate) fn confined_command(program: &str, args: &[String], working_dir: Option<&Path>) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).env_clear().kill_on_drop(true);
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    if let Some(dir) = working_dir {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    cmd
}

/// A call's process group, the child its leader (`process_group(0)`).
/// Killing only the child (`kill_on_drop`) left anything the tool had
/// backgrounded running after the call, its timeout and its chain; the whole
/// group is killed when the call ends or is dropped.
#[cfg(unix)]
pub(crate) struct ProcessGroup(pub(crate) u32);

#[cfg(unix)]
impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Ok(pgid) = libc::pid_t::try_from(self.0) {
            // SAFETY: killpg only sends a signal; a group that is already
            // gone makes it fail with ESRCH, which is fine.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }
}

/// Reads at most `max` bytes; `complete` is false when there was more.
async fn read_capped(reader: impl AsyncRead + Unpin, max: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    reader.take(limit).read_to_end(&mut bytes).await?;
    let complete = bytes.len() <= max;
    bytes.truncate(max);
    Ok((bytes, complete))
}

/// Reads to the end, keeping only the first `keep` bytes.
async fn drain_keeping(mut reader: impl AsyncRead + Unpin, keep: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok(kept);
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// The message of a non-zero exit: the tool's stderr, trimmed and bounded,
/// or its exit status when it said nothing.
fn failure_message(stderr: &[u8], status: ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if !text.is_empty() {
        return truncate_chars(text, MAX_ERROR_MESSAGE_CHARS);
    }
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    format!("exited with {status}")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;

    fn ctx() -> ToolContext {
        ToolContext {
            run_id: "test".into(),
            call_id: 1,
            deadline: Instant::now() + Duration::from_secs(30),
        }
    }

    fn sh(name: &str, script: &str) -> CommandTool {
        let command = vec!["sh".into(), "-c".into(), script.into()];
        CommandTool::new(name, "test tool", json!({"type": "object"}), command)
    }

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    async fn run(tool: &CommandTool, arguments: Value) -> Result<ToolOutput, ToolError> {
        tool.execute(ctx(), args(arguments)).await
    }

    const PY_ECHO: &str = "import json, sys\n\
        req = json.load(sys.stdin)\n\
        print(json.dumps({'tool': req['name'], 'sum': req['arguments']['a'] + req['arguments']['b']}))\n";

    #[tokio::test]
    async fn json_stdout_becomes_the_result_value() {
        let tool = CommandTool::new(
            "add",
            "adds",
            json!({"type": "object"}),
            vec!["python3".into(), "-c".into(), PY_ECHO.into()],
        );
        let out = run(&tool, json!({"a": 2, "b": 40})).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!({"tool": "add", "sum": 42}))));
    }

    #[tokio::test]
    async fn content_blocks_on_stdout_become_a_tool_execution_result() {
        let tool = sh(
            "blocks",
            r#"cat >/dev/null; echo '{"content": [{"type": "text", "text": "hi"}]}'"#,
        );
        let out = run(&tool, json!({})).await;
        assert!(matches!(out, Ok(ToolOutput::Result(r)) if r.text() == "hi"));
    }

    #[tokio::test]
    async fn nonzero_exit_reports_trimmed_stderr() {
        let tool = sh("fail", "echo '  no such city  ' >&2; exit 3");
        let err = run(&tool, json!({})).await.unwrap_err();
        assert_eq!(err.message, "no such city");
    }

    #[tokio::test]
    async fn nonzero_exit_without_stderr_reports_the_status() {
        let tool = sh("fail", "exit 7");
        let err = run(&tool, json!({})).await.unwrap_err();
        assert_eq!(err.message, "exited with status 7");
    }

    #[tokio::test]
    async fn long_stderr_is_cut_to_the_message_limit() {
        let tool = sh(
            "fail",
            "i=0; while [ $i -lt 500 ]; do printf 'traceback line ' >&2; i=$((i+1)); done; exit 1",
        );
        let err = run(&tool, json!({})).await.unwrap_err();
        assert_eq!(err.message.chars().count(), MAX_ERROR_MESSAGE_CHARS);
        assert!(err.message.ends_with('…'));
    }

    #[tokio::test]
    async fn invalid_json_names_the_tool() {
        let tool = sh("weather", "echo 'sunny, 20 degrees'");
        let err = run(&tool, json!({})).await.unwrap_err();
        assert!(
            err.message.starts_with("tool `weather` printed invalid JSON: "),
            "{}",
            err.message
        );
        assert!(err.message.contains("sunny, 20 degrees"), "{}", err.message);
    }

    #[tokio::test]
    async fn empty_stdout_is_reported_as_printing_nothing() {
        let tool = sh("quiet", "true");
        let err = run(&tool, json!({})).await.unwrap_err();
        assert!(err.message.contains("printed nothing"), "{}", err.message);
    }

    #[tokio::test]
    async fn tool_that_never_reads_stdin_still_succeeds() {
        // A payload far larger than a pipe buffer: writing it fails with a
        // broken pipe once the tool has exited, which must not matter.
        let tool = sh("constant", "echo 42");
        let big = "x".repeat(4 * 1024 * 1024);
        let out = run(&tool, json!({"blob": big})).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!(42))));
    }

    #[tokio::test]
    async fn missing_program_names_the_program() {
        let tool = CommandTool::new(
            "ghost",
            "",
            json!({"type": "object"}),
            vec!["./no-such-program-here".into()],
        );
        let err = run(&tool, json!({})).await.unwrap_err();
        assert!(err.message.contains("`./no-such-program-here`"), "{}", err.message);
        assert!(err.message.contains("ghost"), "{}", err.message);
    }

    #[tokio::test]
    async fn empty_command_is_an_error_not_a_panic() {
        let tool = CommandTool::new("nothing", "", json!({"type": "object"}), vec![]);
        let err = run(&tool, json!({})).await.unwrap_err();
        assert!(err.message.contains("no command"), "{}", err.message);
    }

    #[tokio::test]
    async fn output_beyond_the_cap_is_an_error() {
        let tool = sh("chatty", "echo '\"0123456789012345678901234567890123456789\"'").with_max_output_bytes(10);
        let err = run(&tool, json!({})).await.unwrap_err();
        assert!(err.message.ends_with("output exceeds 10 bytes"), "{}", err.message);
    }

    #[tokio::test]
    async fn output_exactly_at_the_cap_is_accepted() {
        let tool = sh("exact", "printf '\"12345678\"'").with_max_output_bytes(10);
        let out = run(&tool, json!({})).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!("12345678"))));
    }

    #[tokio::test]
    async fn environment_is_cleared_except_path() {
        let script =
            "import json, os; print(json.dumps(sorted(k for k in os.environ if k in ('HOME', 'PATH', 'USER'))))";
        let tool = CommandTool::new(
            "env",
            "",
            json!({"type": "object"}),
            vec!["python3".into(), "-c".into(), script.into()],
        );
        let out = run(&tool, json!({})).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!(["PATH"]))));
    }

    #[tokio::test]
    async fn runs_in_its_working_dir() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("answer.json"), "{\"answer\": 42}").expect("write");
        let tool = sh("cat", "cat answer.json").with_working_dir(dir.path());
        let out = run(&tool, json!({})).await;
        assert_eq!(out, Ok(ToolOutput::Value(json!({"answer": 42}))));
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn dropping_the_call_kills_the_child() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pid_file = dir.path().join("pid");
        let script = r#"echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 30"#;
        let command = vec![
            "sh".into(),
            "-c".into(),
            script.into(),
            "sh".into(),
            pid_file.display().to_string(),
        ];
        let tool = CommandTool::new("sleepy", "", json!({"type": "object"}), command);
        let mut call = Box::pin(tool.execute(ctx(), Map::new()));

        let started = Instant::now();
        let pid: u32 = loop {
            tokio::select! {
                out = &mut call => panic!("the call finished early: {out:?}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break pid;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "the child never started");
        };
        assert!(is_running(pid), "child {pid} should be running before the drop");

        drop(call); // what the invoker does on a timeout

        let dropped = Instant::now();
        while is_running(pid) {
            assert!(
                dropped.elapsed() < Duration::from_secs(5),
                "child {pid} survived the drop"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the process exists and is not a zombie awaiting reaping.
    #[cfg(target_os = "linux")]
    fn is_running(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state is the first field after the parenthesised command name.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        }
    }

    /// Calls started while the process is out of file descriptors: run
    /// alone (see the test below), with the soft `RLIMIT_NOFILE` a dozen
    /// above what is open, twenty calls at once, three pipes each. Prints
    /// how many answered and each failure's message.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "run alone by calls_past_the_descriptor_limit_fail_as_tool_errors"]
    async fn calls_past_the_descriptor_limit() {
        let open = std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count() as libc::rlim_t;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid, writable `rlimit`s; lowering the soft limit needs
        // no privilege, and this process runs this test alone.
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
            limit.rlim_cur = open + 12;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
        let tool = std::sync::Arc::new(sh("slow", "sleep 0.5; echo 1"));
        let calls: Vec<_> = (0..20)
            .map(|_| {
                let tool = tool.clone();
                tokio::spawn(async move { run(&tool, json!({})).await })
            })
            .collect();
        let mut answered = 0;
        for call in calls {
            match call.await.expect("a call that does not panic") {
                Ok(_) => answered += 1,
                Err(e) => println!("failed: {}", e.message),
            }
        }
        println!("answered: {answered}");
    }

    /// Out of file descriptors, a command tool's call is a tool error
    /// naming why, not a panic; the calls that got theirs answer.
    #[cfg(target_os = "linux")]
    #[test]
    fn calls_past_the_descriptor_limit_fail_as_tool_errors() {
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args(["tools::command::tests::calls_past_the_descriptor_limit", "--exact"])
            .args(["--ignored", "--nocapture", "--test-threads", "1"])
            .output()
            .expect("the test binary runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}{stderr}");
        let answered: usize = text
            .lines()
            .find_map(|l| l.split_once("answered: ").and_then(|(_, n)| n.trim().parse().ok()))
            .unwrap_or_else(|| panic!("no count: {text}{stderr}"));
        let failures: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once("failed: "))
            .map(|(_, m)| m)
            .collect();
        assert!(answered >= 1, "{text}");
        assert_eq!(answered + failures.len(), 20, "{text}");
        assert!(!failures.is_empty(), "the limit was never reached: {text}");
        for failure in failures {
            assert!(failure.contains("Too many open files"), "{failure}");
        }
    }
}
