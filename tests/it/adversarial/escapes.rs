//! Escape attempts: host paths, `..` in every spelling, symlinks planted in
//! a caller-supplied workspace that point out of it, the environment,
//! sockets, the clock and randomness. Whatever fails must fail without
//! telling the script where the host keeps its files.

use std::path::Path;
use std::time::{Duration, Instant};

use chainbox::{CallStatus, ChainStatus, ErrorKind, PythonChoice};
use serde_json::json;

use crate::fixtures::{
    assert_ended, assert_json_lacks, assert_next_chain_ok, assert_ok, assert_trace, run_tight, run_tight_in_workspace,
    run_tight_on,
};

/// Script: tries `expr` for each of `paths` (as `p`), collecting `'read'` /
/// the value, or the exception type.
fn probe(paths: &[&str], expr: &str) -> String {
    let list = paths.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "from pathlib import Path\nimport os\nout = []\nfor p in [{list}]:\n    try:\n        v = {expr}\n        out.append(['leaked', p])\n    except Exception as e:\n        out.append(type(e).__name__)\nout"
    )
}

/// Strings the result must never contain: the host's home, temp and
/// working directories, and any workspace directory name.
fn host_paths(extra: &[&Path]) -> Vec<String> {
    let mut v = vec![
        std::env::var("HOME").unwrap_or_default(),
        std::env::temp_dir().display().to_string(),
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        "chainbox-ws-".to_owned(),
    ];
    v.extend(extra.iter().map(|p| p.display().to_string()));
    v.retain(|s| s.len() > 1);
    v
}

#[track_caller]
fn assert_all_refused(r: &chainbox::ChainRunResult) {
    assert_ok(r);
    let out = r.output.as_array().cloned().unwrap_or_default();
    assert!(!out.is_empty(), "{r:#?}");
    for v in out {
        assert!(v.is_string(), "an escape worked: {v} in {r:#?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn absolute_host_paths_cannot_be_read_listed_or_statted() {
    let paths = [
        "/etc/passwd",
        "/etc/hostname",
        "/proc/self/environ",
        "/proc/self/maps",
        "/",
        "/root",
        "/dev/zero",
    ];
    for expr in [
        "open(p).read()",
        "Path(p).read_bytes()",
        "os.listdir(p)",
        "Path(p).stat()",
        "Path(p).exists() or 1/0",
    ] {
        let r = run_tight(&probe(&paths, expr)).await;
        assert_all_refused(&r);
        assert_trace(&r, &[]);
        let needles = host_paths(&[]);
        assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dot_dot_in_every_spelling_stays_inside_the_workspace() {
    let paths = [
        "/workspace/../etc/passwd",
        "/workspace/./../../etc/passwd",
        "/workspace/a/../../etc/passwd",
        "/workspace/..",
        "/workspace/../workspace/../etc/passwd",
        "workspace/../../etc/passwd",
        "../etc/passwd",
        "/workspace//..//..//etc/passwd",
        "/workspace/..\\..\\etc\\passwd",
        "/workspace/%2e%2e/etc/passwd",
        "/workspace/\u{0}/../../etc/passwd",
    ];
    let r = run_tight(&probe(&paths, "open(p).read()")).await;
    assert_all_refused(&r);
    let r = run_tight(&probe(&paths, "os.listdir(p)")).await;
    assert_all_refused(&r);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_outside_the_workspace_are_refused_and_nothing_appears_on_the_host() {
    let target = std::env::temp_dir().join(format!("chainbox-adv-pwned-{}", std::process::id()));
    let t = target.display().to_string();
    let paths = [t.as_str(), "/workspace/../pwned", "/tmp/pwned", "/etc/cron.d/pwned"];
    let r = run_tight(&probe(&paths, "Path(p).write_text('pwned')")).await;
    assert_all_refused(&r);
    assert!(!target.exists(), "the script wrote {}", target.display());
    assert!(!Path::new("/tmp/pwned").exists());
    let r = run_tight(&probe(&paths[1..], "os.mkdir(p)")).await;
    assert_all_refused(&r);
    assert_next_chain_ok().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn symlinks_planted_in_a_supplied_workspace_cannot_be_followed_out() {
    let outside = tempfile::tempdir().expect("temp dir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-CONTENT").expect("write secret");
    let workspace = tempfile::tempdir().expect("temp dir");
    let ws = workspace.path();
    std::os::unix::fs::symlink(&secret, ws.join("file_link")).expect("symlink");
    std::os::unix::fs::symlink(outside.path(), ws.join("dir_link")).expect("symlink");
    std::os::unix::fs::symlink("/etc", ws.join("etc")).expect("symlink");
    std::os::unix::fs::symlink("../", ws.join("up")).expect("symlink");
    std::fs::write(ws.join("ok.txt"), "inside").expect("write");

    let reads = [
        "/workspace/file_link",
        "/workspace/dir_link/secret.txt",
        "/workspace/etc/passwd",
        "/workspace/up/secret.txt",
    ];
    let r = run_tight_in_workspace(&probe(&reads, "open(p).read()"), ws).await;
    assert_all_refused(&r);
    assert_json_lacks(&r, &["TOP-SECRET-CONTENT"]);
    let needles = host_paths(&[outside.path(), ws]);
    assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());

    let listings = ["/workspace/dir_link", "/workspace/etc", "/workspace/up"];
    let r = run_tight_in_workspace(&probe(&listings, "os.listdir(p)"), ws).await;
    assert_all_refused(&r);

    // Writing through a link must not touch its target either.
    let writes = ["/workspace/file_link", "/workspace/dir_link/new.txt"];
    let r = run_tight_in_workspace(&probe(&writes, "Path(p).write_text('overwritten')"), ws).await;
    assert_all_refused(&r);
    assert_eq!(std::fs::read_to_string(&secret).expect("secret"), "TOP-SECRET-CONTENT");
    assert!(!outside.path().join("new.txt").exists());

    // The workspace itself still works.
    let r = run_tight_in_workspace("open('/workspace/ok.txt').read()", ws).await;
    assert_ok(&r);
    assert_eq!(r.output, json!("inside"));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn file_errors_in_a_supplied_workspace_never_name_host_paths() {
    let workspace = tempfile::tempdir().expect("temp dir");
    let ws = workspace.path();
    std::fs::create_dir(ws.join("dir")).expect("mkdir");
    let r = run_tight_in_workspace(
        "from pathlib import Path\nimport os\nout = []\nfor f in [lambda: open('/workspace/missing.txt').read(), lambda: open('/workspace/dir').read(), lambda: os.listdir('/workspace/missing'), lambda: Path('/workspace/dir').rmdir() or Path('/workspace/dir').rmdir(), lambda: Path('/workspace/missing/x.txt').write_text('x'), lambda: Path('/workspace').resolve()]:\n    try:\n        out.append(str(f()))\n    except Exception as e:\n        out.append(type(e).__name__ + ': ' + str(e))\nopen('/workspace/missing.txt')",
        ws,
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    let needles = host_paths(&[ws]);
    assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environment_arguments_and_working_directory_reveal_nothing() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let r = run_tight_on(python, "import os\nimport sys\n[len(os.environ), os.getenv('HOME'), os.getenv('PATH'), os.environ.get('USER'), sys.argv, os.getcwd()]").await;
        assert_ok(&r);
        assert_eq!(
            r.output,
            json!([0, null, null, null, ["main.py"], "/workspace"]),
            "{python:?}: {r:#?}"
        );
        let needles = host_paths(&[]);
        assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sockets_subprocesses_and_native_modules_are_unavailable() {
    let modules = [
        "socket",
        "ssl",
        "http",
        "urllib",
        "subprocess",
        "ctypes",
        "multiprocessing",
        "threading",
        "signal",
        "shutil",
        "importlib",
        "io",
    ];
    let mut script = String::from("out = []\n");
    for m in modules {
        script.push_str(&format!(
            "try:\n    import {m}\n    out.append('imported {m}')\nexcept ImportError:\n    out.append('refused')\n"
        ));
    }
    script.push_str("import asyncio\ntry:\n    await asyncio.open_connection('127.0.0.1', 22)\n    out.append('connected')\nexcept Exception:\n    out.append('refused')\nout");
    // The monty guest's module list (CPython's refusals are in
    // `both_guests`, where `io`, `urllib.parse`, `shutil` and `threading`
    // import and only reach what WASI gives: the workspace, no threads).
    let policy = chainbox::ChainPolicy {
        python: chainbox::PythonChoice::Monty,
        ..crate::fixtures::tight()
    };
    let r = crate::fixtures::run_adversarial(&script, &policy).await;
    assert_ok(&r);
    for v in r.output.as_array().cloned().unwrap_or_default() {
        assert!(v == json!("refused") || v == json!("imported io"), "{v} in {r:#?}");
    }
    assert_trace(&r, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_clock_can_be_read_but_not_used_to_outlive_the_chain() {
    let r = run_tight("import time\nimport datetime\na = time.monotonic()\nb = time.monotonic()\n[time.time() > 1.6e9, b >= a, datetime.datetime.now().year >= 2024]").await;
    assert_ok(&r);
    assert_eq!(r.output, json!([true, true, true]), "{r:#?}");
    let r = crate::fixtures::run_adversarial(
        "import time\nt = time.time()\nwhile time.time() - t < 3600:\n    pass",
        &crate::fixtures::cpu_capped(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_random_requests_end_with_memory_and_small_ones_work() {
    for script in [
        "import random\nrandom.randbytes(10**9)",
        "import random\nrandom.getrandbits(10**10)",
        "import random\nrandom.choices(range(10), k=10**9)",
    ] {
        // monty's own handling (the CPython guest builds the 1 GB value
        // slowly enough to meet the 2 s total timeout first).
        let r = run_tight_on(PythonChoice::Monty, script).await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    }
    // A population beyond the 32-bit guest's reach is refused by name.
    let r = run_tight("import random\nrandom.sample(range(10**12), 10**9)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    let e = r.error.as_ref().expect("error");
    assert_eq!(e.error_type, "OverflowError");
    assert!(e.message.contains("4294967295"), "{e:?}");
    let r = run_tight("import random\n[len(random.randbytes(10**6)), 0 <= random.random() < 1]").await;
    assert_ok(&r);
    assert_eq!(r.output, json!([1_000_000, true]));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_made_after_a_refused_escape_are_still_recorded() {
    let r = run_tight("try:\n    open('/etc/shadow').read()\nexcept OSError:\n    pass\nawait echo(text='after')\nopen('/etc/shadow').read()").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("PermissionError"));
    assert_trace(&r, &[("echo", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn filling_the_host_disk_through_the_workspace_is_capped() {
    // File I/O is not script CPU: without a quota this loop wrote ~300 MB of
    // host disk per CPU-second (fixed: a per-chain workspace write quota).
    let policy = chainbox::ChainPolicy {
        max_cpu_s: 20.0,
        total_timeout_s: 30.0,
        ..crate::fixtures::tight()
    };
    for script in [
        "from pathlib import Path\nchunk = 'x' * (4 * 1024 * 1024)\ni = 0\nwhile True:\n    Path('/workspace/f' + str(i)).write_text(chunk)\n    i += 1",
        "chunk = 'x' * (4 * 1024 * 1024)\nwhile True:\n    with open('/workspace/same', 'w') as f:\n        f.write(chunk)",
    ] {
        let workspace = tempfile::tempdir().expect("temp dir");
        let ws = workspace.path();
        let options = chainbox::RunOptions {
            workspace: Some(ws.to_path_buf()),
            ..chainbox::RunOptions::default()
        };
        let started = Instant::now();
        let r = crate::fixtures::engine()
            .run_with(
                script,
                &crate::fixtures::adversarial_registry(),
                &policy,
                &chainbox::Approval::auto(chainbox::ToolRisk::Safe),
                options,
            )
            .await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
        assert_eq!(
            r.error.as_ref().map(|e| e.error_type.as_str()),
            Some("OSError"),
            "{r:#?}"
        );
        assert!(
            r.error.as_ref().is_some_and(|e| e.message.contains("write limit")),
            "{r:#?}"
        );
        let on_disk: u64 = std::fs::read_dir(ws)
            .expect("workspace")
            .map(|e| e.and_then(|e| e.metadata()).map_or(0, |m| m.len()))
            .sum();
        assert!(on_disk <= 256 * 1024 * 1024, "{on_disk} bytes written");
        // The quota, not the clock, ended it: far below the total timeout.
        assert!(started.elapsed() < Duration::from_secs(25), "{:?}", started.elapsed());
    }
    assert_next_chain_ok().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn media_results_are_not_written_through_symlinks_planted_in_a_supplied_workspace() {
    // The host writes media files itself, outside monty-fs: it followed a
    // planted `media` link out of the workspace, and overwrote the target
    // of a planted file link (fixed in `Workspace::write_file`).
    let chart = crate::fixtures::sh_tool(
        "chart",
        r#"cat >/dev/null; echo '{"content": [{"type": "image", "media_type": "image/png", "data": "aGVsbG8="}]}'"#,
    );
    let registry = crate::fixtures::adversarial_registry_with([chart]);
    let outside = tempfile::tempdir().expect("temp dir");
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "precious").expect("write");

    let dir_link = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(outside.path(), dir_link.path().join("media")).expect("symlink");
    let file_link = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(file_link.path().join("media")).expect("mkdir");
    std::os::unix::fs::symlink(&victim, file_link.path().join("media/chart_1.png")).expect("symlink");

    for ws in [dir_link.path(), file_link.path()] {
        let options = chainbox::RunOptions {
            workspace: Some(ws.to_path_buf()),
            ..chainbox::RunOptions::default()
        };
        let r = crate::fixtures::engine()
            .run_with(
                "try:\n    r = await chart()\nexcept RuntimeError as e:\n    r = 'refused: ' + str(e)\nr",
                &registry,
                &crate::fixtures::tight(),
                &chainbox::Approval::auto(chainbox::ToolRisk::Safe),
                options,
            )
            .await;
        assert_ok(&r);
        assert!(r.output.as_str().is_some_and(|s| s.starts_with("refused")), "{r:#?}");
        assert_trace(&r, &[("chart", CallStatus::Error)]);
        let needles = host_paths(&[ws, outside.path()]);
        assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .expect("outside")
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .expect("list");
    assert_eq!(names, ["victim.txt"], "a media file landed outside the workspace");
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_artifact_refs_in_load_artifact_are_value_errors() {
    let r = run_tight("out = []\nfor h in ['sha256:' + 'a' * 64, 'sha256:../../etc/passwd', '../../etc/passwd', {'artifact_ref': 1}, {'$artifact': None}, None, 12, 'x' * 100000]:\n    try:\n        load_artifact(h)\n        out.append('loaded')\n    except ValueError:\n        out.append('refused')\nout").await;
    assert_ok(&r);
    assert_eq!(r.output, json!(vec!["refused"; 8]), "{r:#?}");
    assert_trace(&r, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workspace_root_cannot_be_removed_renamed_or_emptied_out_of_it() {
    let parent = tempfile::tempdir().expect("temp dir");
    let ws = parent.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    for script in [
        "from pathlib import Path\nPath('/workspace').rmdir()",
        "from pathlib import Path\nPath('/workspace').unlink()",
        "from pathlib import Path\nPath('/workspace').rename('/workspace/b')",
        "from pathlib import Path\nPath('/workspace/a').write_text('x')\nPath('/workspace/a').rename('/etc/stolen')",
        "from pathlib import Path\nPath('/workspace/a').write_text('x')\nPath('/workspace/a').rename('/workspace/../a')",
    ] {
        let r = run_tight_in_workspace(script, &ws).await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
        let needles = host_paths(&[&ws, parent.path()]);
        assert_json_lacks(&r, &needles.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(ws.is_dir(), "the workspace root went away: {script}");
    }
    let siblings: Vec<_> = std::fs::read_dir(parent.path())
        .expect("parent")
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .expect("list");
    assert_eq!(siblings, ["ws"], "a file was moved out of the workspace");
    assert!(!Path::new("/etc/stolen").exists());
    assert_next_chain_ok().await;
}
