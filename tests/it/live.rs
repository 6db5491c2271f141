//! A chain as it runs ([`chainbox::live`]): its observer sees what the
//! script prints and the calls it makes while the chain runs, in order,
//! exactly the stdout the result keeps; `chainbox run` prints the script's
//! output as it comes. On both guests.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken, RequestMetaObject};
use rmcp::service::{NotificationContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};

use chainbox::live::{ChainEvent, Observer};
use chainbox::{Approval, ChainPolicy, PythonChoice, RunOptions, ToolRegistry};
use serde_json::json;

use crate::fixtures::{assert_ok, engine, tool};

/// An observer keeping every event, and the events themselves.
fn recording() -> (Observer, Arc<Mutex<Vec<ChainEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let kept = events.clone();
    let observer = Observer::new(move |event| kept.lock().expect("events").push(event));
    (observer, events)
}

fn policy(python: PythonChoice) -> ChainPolicy {
    ChainPolicy {
        python,
        ..ChainPolicy::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_observer_sees_a_print_before_the_call_after_it_starts() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let (observer, events) = recording();
        // The tool looks at what the observer has seen when it runs.
        let seen_by_tool = Arc::new(Mutex::new(Vec::new()));
        let (seen, during) = (events.clone(), seen_by_tool.clone());
        let registry = ToolRegistry::from_local([Arc::new(tool("look", &[], move |_| {
            *during.lock().expect("seen") = seen.lock().expect("events").clone();
            Ok(json!("looked"))
        })) as Arc<dyn chainbox::tools::Tool>])
        .expect("registry");
        let options = RunOptions {
            observer: Some(observer),
            ..RunOptions::default()
        };
        let script = "print('one')\nr = await look()\nprint('two', r)\n'done'";
        let r = engine()
            .run_with(script, &registry, &policy(python), &Approval::deny_all(), options)
            .await;
        assert_ok(&r);
        let during = seen_by_tool.lock().expect("seen").clone();
        assert_eq!(during.first(), Some(&ChainEvent::Stdout("one\n".into())), "{python:?}");
        assert!(
            matches!(&during[1..], [ChainEvent::CallStarted { tool, .. }] if tool == "look"),
            "{python:?}: {during:?}"
        );
        let events = events.lock().expect("events").clone();
        assert!(
            matches!(&events[3..], [ChainEvent::Stdout(two)] if two == "two looked\n"),
            "{python:?}: {events:?}"
        );
        match &events[2] {
            ChainEvent::CallFinished(record) => assert_eq!(record, &r.call_trace[0], "{python:?}"),
            other => panic!("{python:?}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_observer_sees_exactly_the_stdout_the_result_keeps() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let (observer, events) = recording();
        let options = RunOptions {
            observer: Some(observer),
            ..RunOptions::default()
        };
        let policy = ChainPolicy {
            max_stdout_bytes: 10,
            ..policy(python)
        };
        let script = "for i in range(5):\n    print('abcd')\n1";
        let r = engine()
            .run_with(script, &ToolRegistry::new(), &policy, &Approval::deny_all(), options)
            .await;
        assert_ok(&r);
        let streamed: String = events
            .lock()
            .expect("events")
            .iter()
            .map(|e| match e {
                ChainEvent::Stdout(text) => text.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(streamed, r.stdout, "{python:?}");
        assert_eq!(streamed, "abcd\nabcd\n", "{python:?}");
        assert!(r.usage.stdout_truncated);
    }
}

/// A manifest of one command tool, `wait_for_reader()`, that waits (up to
/// a minute) for `flag` to exist and answers whether it does; and a script
/// printing a line before calling it and one after.
fn waiting_chain(dir: &std::path::Path, flag: &std::path::Path) -> (std::path::PathBuf, &'static str) {
    let tool = dir.join("wait.py");
    std::fs::write(
        &tool,
        "import json, os, sys, time\nflag = sys.argv[1]\nfor _ in range(600):\n    if os.path.exists(flag):\n        break\n    time.sleep(0.1)\nprint(json.dumps(os.path.exists(flag)))\n",
    )
    .expect("the tool");
    let manifest = dir.join("tools.toml");
    std::fs::write(
        &manifest,
        format!(
            "[[tool]]\nname = \"wait_for_reader\"\ndescription = \"waits\"\ncommand = [\"python3\", {:?}, {:?}]\n[tool.input_schema]\ntype = \"object\"\n",
            tool.display().to_string(),
            flag.display().to_string()
        ),
    )
    .expect("the manifest");
    (
        manifest,
        "print('first line')\nseen = await wait_for_reader()\nprint('after', seen)\nseen",
    )
}

/// `chainbox run` prints the script's first line while the chain is still
/// in its tool, which waits for the test to have read it.
#[test]
fn chainbox_run_prints_the_scripts_output_as_it_comes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let flag = dir.path().join("seen");
    let (manifest, code) = waiting_chain(dir.path(), &flag);
    let script = dir.path().join("chain.py");
    std::fs::write(&script, code).expect("the script");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args([
            "run",
            &script.display().to_string(),
            "--tools",
            &manifest.display().to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("chainbox runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut read = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("a line");
        let first = line == "first line";
        read.push(line);
        if first {
            std::fs::write(&flag, "").expect("the flag");
            break;
        }
    }
    read.extend(lines.map(|l| l.expect("a line")));
    let status = child.wait().expect("chainbox ends");
    assert!(status.success(), "{read:#?}");
    assert!(
        read.iter().any(|l| l == "after True"),
        "the tool saw the line read: {read:#?}"
    );
    assert_eq!(
        read.iter().filter(|l| *l == "first line").count(),
        1,
        "printed once: {read:#?}"
    );
}

/// A client that, on the progress message carrying the chain's first line,
/// lets the chain's tool go on.
struct FlagOnFirstLine {
    flag: std::path::PathBuf,
    messages: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for FlagOnFirstLine {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        if let Some(message) = params.message {
            if message == "first line\n" {
                std::fs::write(&self.flag, "").expect("the flag");
            }
            self.messages.lock().expect("messages").push(message);
        }
    }
}

/// `chainbox serve` sends the script's output as progress notifications
/// while the chain runs, when the call carries a progress token.
#[tokio::test(flavor = "multi_thread")]
async fn chainbox_serve_sends_the_scripts_output_as_progress_while_the_chain_runs() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let flag = dir.path().join("seen");
    let (manifest, code) = waiting_chain(dir.path(), &flag);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_chainbox"));
    command
        .args(["serve", "--tools", &manifest.display().to_string()])
        .kill_on_drop(true);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning chainbox serve");
    let messages = Arc::new(Mutex::new(Vec::new()));
    let client = FlagOnFirstLine {
        flag,
        messages: messages.clone(),
    }
    .serve(transport)
    .await
    .expect("the MCP session starts");
    let mut arguments = serde_json::Map::new();
    arguments.insert("code".into(), json!(code));
    let mut params = CallToolRequestParams::new("run_chain").with_arguments(arguments);
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    params.meta = Some(meta);
    let result = client.call_tool(params).await.expect("tools/call");
    let chain = result.structured_content.expect("structured content");
    assert_eq!(chain["status"], "ok", "{chain:#}");
    assert_eq!(chain["output"], true, "the tool saw the first line arrive: {chain:#}");
    // rmcp's client handles each notification on a task of its own, so the
    // last one may be handled after the result it preceded on the wire.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let all = loop {
        let all = messages.lock().expect("messages").concat();
        if all.len() >= "first line\nafter True\n".len() || std::time::Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(all, "first line\nafter True\n", "all the output");
    client.cancel().await.expect("close");
}
