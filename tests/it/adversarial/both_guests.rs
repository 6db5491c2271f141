//! The attacks of this suite against both guests: each hostile script runs
//! on monty and on CPython (the policy's `python` forces one) and must end
//! the same way on both: the same status, error kind and trace, the limit
//! named by the same `error.kind`; afterwards a chain on each guest still
//! runs. The escape routes only CPython has (`ctypes`, `socket`,
//! `subprocess`, `importlib`, `sys.modules`, `gc`, `__subclasses__`, WASI's
//! files) are tried on CPython alone, below.

use chainbox::{
    Approval, CallStatus, ChainPolicy, ChainRunResult, ChainStatus, ErrorKind, Interpreter, PythonChoice, ToolRisk,
};
use serde_json::json;

use crate::fixtures::{
    MIB, adversarial_registry, adversarial_registry_with, assert_ended, assert_next_chain_ok, assert_ok, cpu_capped,
    engine, fn_tool, tight,
};

/// Runs `script` on `python` under `policy` against the adversarial registry.
async fn run_on(python: PythonChoice, script: &str, policy: &ChainPolicy) -> ChainRunResult {
    let policy = ChainPolicy {
        python,
        ..policy.clone()
    };
    engine()
        .run(
            script,
            &adversarial_registry(),
            &policy,
            &Approval::auto(ToolRisk::Safe),
        )
        .await
}

/// What must match between the guests: status and error kind; the
/// exception's type for a script error (a limit is named by its kind: monty
/// raises its own `MemoryError` a little below the cap CPython hits); the
/// trace's tools; and their statuses when the script ended by itself (calls
/// cut short by a limit end as the host's timing has them).
fn ending(
    r: &ChainRunResult,
) -> (
    ChainStatus,
    Option<ErrorKind>,
    Option<String>,
    Vec<String>,
    Vec<CallStatus>,
) {
    let kind = r.error.as_ref().map(|e| e.kind);
    let script_ended = matches!(kind, None | Some(ErrorKind::Script));
    (
        r.status,
        kind,
        r.error
            .as_ref()
            .filter(|e| e.kind == ErrorKind::Script)
            .map(|e| e.error_type.clone()),
        r.call_trace.iter().map(|c| c.tool.clone()).collect(),
        r.call_trace.iter().filter(|_| script_ended).map(|c| c.status).collect(),
    )
}

/// Runs `script` on both guests, asserts they end alike and the engine
/// still runs chains on both, and returns the CPython result.
async fn on_both(script: &str, policy: &ChainPolicy) -> ChainRunResult {
    let monty = run_on(PythonChoice::Monty, script, policy).await;
    let cpython = run_on(PythonChoice::Cpython, script, policy).await;
    assert_eq!(monty.interpreter, Interpreter::Monty);
    assert_eq!(cpython.interpreter, Interpreter::Cpython);
    assert_eq!(
        ending(&monty),
        ending(&cpython),
        "monty: {monty:#?}\ncpython: {cpython:#?}"
    );
    assert_next_chain_ok().await;
    assert_next_cpython_chain_ok().await;
    cpython
}

/// The engine survived for CPython chains: a call, a gathered pair and a
/// little computation succeed with a clean trace.
async fn assert_next_cpython_chain_ok() {
    let script = "import asyncio\na = await add(a=1, b=2)\nb = await asyncio.gather(add(a=a, b=1), echo(text='ok'))\n[a, b, sum(range(100))]";
    let r = run_on(PythonChoice::Cpython, script, &tight()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!([3.0, [4.0, "ok"], 4950]), "{r:?}");
    assert!(r.call_trace.iter().all(|c| c.status == CallStatus::Ok), "{r:?}");
}

/// [`tight`] with CPU and time to spare, for attacks on something else.
fn roomy() -> ChainPolicy {
    ChainPolicy {
        max_cpu_s: 10.0,
        total_timeout_s: 10.0,
        ..tight()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_loop_ends_with_kind_cpu_on_both_guests() {
    let r = on_both("await noop()\nwhile True:\n    pass", &cpu_capped()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
}

/// The loop is the C library's (CPython's `sum` over a range), not the
/// script's: the CPython guest's interruption points are in every loop of
/// its code, not only the interpreter's.
#[tokio::test(flavor = "multi_thread")]
async fn a_loop_inside_a_builtin_ends_with_kind_cpu_on_both_guests() {
    let r = on_both("await noop()\nsum(range(10**15))", &cpu_capped()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_eq!(r.tool_calls, 1);
}

/// A script that spends its time crossing into the host (each `print` is a
/// host call) is stopped too: stopped while in the host, it traps on its
/// way back.
#[tokio::test(flavor = "multi_thread")]
async fn printing_forever_ends_with_kind_cpu_on_both_guests() {
    let r = on_both("while True:\n    print('x' * 100)", &cpu_capped()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_eq!(r.stdout.len(), 4096);
}

/// The total timeout leaves the first call room to finish on a loaded
/// machine (at 1 s, a monty chain under a full test run once timed out
/// before its `noop` had run).
#[tokio::test(flavor = "multi_thread")]
async fn a_cpu_bound_script_past_the_total_timeout_ends_with_kind_timeout_on_both_guests() {
    let policy = ChainPolicy {
        max_cpu_s: 30.0,
        total_timeout_s: 3.0,
        ..tight()
    };
    let r = on_both("await noop()\nwhile True:\n    pass", &policy).await;
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
    assert_eq!(r.call_trace.len(), 1);
    assert_eq!(r.call_trace[0].status, CallStatus::Ok, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_doubling_string_ends_with_kind_memory_on_both_guests() {
    let r = on_both(
        "await echo(text='a')\ns = 'x' * 1024\nwhile True:\n    s = s + s",
        &roomy(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert!(r.usage.peak_memory_bytes <= 64 * MIB, "{:?}", r.usage);
}

/// One limit, one error: whichever guest runs out and however it meets the
/// cap (monty's own stop or the wasm memory's), the chain reports the
/// policy's `max_memory_bytes` with the same type and message.
#[tokio::test(flavor = "multi_thread")]
async fn running_out_of_memory_reads_the_same_on_both_guests_and_names_the_policy_limit() {
    let policy = roomy();
    let expected = format!(
        "the script needed more than {} bytes of memory (max_memory_bytes)",
        policy.max_memory_bytes
    );
    for script in [
        "l = []\nwhile True:\n    l.append('abcdefgh' * 100)",
        "keep = []\nwhile True:\n    try:\n        keep.append('x' * 10**6)\n    except MemoryError:\n        pass",
    ] {
        for python in [PythonChoice::Monty, PythonChoice::Cpython] {
            let r = run_on(python, script, &policy).await;
            assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
            let error = r.error.as_ref().expect("an error");
            assert_eq!(
                (error.error_type.as_str(), error.message.as_str()),
                ("MemoryLimitExceeded", expected.as_str()),
                "{python:?}: {r:#?}"
            );
        }
    }
    assert_next_chain_ok().await;
    assert_next_cpython_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_growing_list_ends_with_kind_memory_on_both_guests() {
    let r = on_both("l = []\nwhile True:\n    l.append('abcdefgh' * 100)", &roomy()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
}

#[tokio::test(flavor = "multi_thread")]
async fn unbounded_recursion_is_a_recursion_error_on_both_guests() {
    let r = on_both("def f(n):\n    return f(n + 1)\nf(0)", &roomy()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("RecursionError"));
}

#[tokio::test(flavor = "multi_thread")]
async fn data_nested_past_the_stack_is_a_recursion_error_on_both_guests() {
    // Walks over nested data stop where the stack does (CPython 3.12+). On
    // an 8 MiB wasm stack the CPython guest trapped comparing two
    // self-referential dicts, and on 32 MiB dropping `d`.
    let r = on_both(
        "a, b = {}, {}\na['x'], b['x'] = a, b\nd = {}\nfor i in range(100000):\n    d = {'k': d}\nout = []\nfor f in [lambda: a == b, lambda: repr(d), lambda: str([d])]:\n    try:\n        f()\n        out.append('ok')\n    except RecursionError:\n        out.append('RecursionError')\nd = None\nassert out == ['RecursionError'] * 3, out\nout",
        &roomy(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(vec!["RecursionError"; 3]), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_print_flood_is_capped_on_both_guests() {
    let r = on_both("for i in range(20000):\n    print('x' * 100)\n'done'", &roomy()).await;
    assert_ok(&r);
    assert_eq!(r.stdout.len(), 4096);
    assert!(r.usage.stdout_truncated);
    assert_eq!(r.usage.stdout_bytes, 20000 * 101);
}

/// A tool's own work is not the script's CPU: a call awaited alone (on
/// CPython, run inline on the chain's thread) that spins twice the chain's
/// `max_cpu_s` leaves the script its whole budget, on both guests.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_spinning_past_max_cpu_s_is_not_the_scripts_cpu_on_both_guests() {
    let spin = fn_tool("spin", &["seconds"], |a| {
        let seconds = a.get("seconds").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
        let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
        let mut n = 0u64;
        while std::time::Instant::now() < until {
            n = std::hint::black_box(n.wrapping_add(1));
        }
        Ok(json!(seconds))
    });
    let registry = adversarial_registry_with([spin]);
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let policy = ChainPolicy {
            python,
            call_timeout_s: 5.0,
            approval_timeout_s: 2.0,
            ..cpu_capped()
        };
        let r = engine()
            .run(
                "await spin(seconds=0.6)\nsum(range(100000))",
                &registry,
                &policy,
                &Approval::auto(ToolRisk::Safe),
            )
            .await;
        assert_ok(&r);
        assert_eq!(r.output, json!(4999950000u64), "{python:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_call_budget_ends_the_chain_with_kind_tool_budget_on_both_guests() {
    let r = on_both("for i in range(100):\n    await noop()", &tight()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
    assert_eq!(r.tool_calls, 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gathered_call_past_the_budget_ends_the_chain_on_both_guests() {
    let r = on_both(
        "import asyncio\nawait asyncio.gather(*[noop() for _ in range(30)])",
        &tight(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sleeping_tool_past_the_total_timeout_ends_with_kind_timeout_on_both_guests() {
    let policy = ChainPolicy {
        call_timeout_s: 30.0,
        approval_timeout_s: 20.0,
        ..tight()
    };
    let r = on_both("await noop()\nawait sleep(seconds=30)", &policy).await;
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sleeping_script_past_the_total_timeout_ends_with_kind_timeout_on_both_guests() {
    let r = on_both("import time\ntime.sleep(30)", &tight()).await;
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_argument_is_refused_before_the_tool_on_both_guests() {
    let script = "try:\n    await echo(text='x' * (2 * 1024 * 1024))\nexcept ValueError as e:\n    r = 'refused'\nr";
    let r = on_both(script, &roomy()).await;
    assert_ok(&r);
    assert_eq!(r.output, json!("refused"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_result_is_offloaded_and_refused_whole_on_both_guests() {
    let policy = ChainPolicy {
        max_result_bytes: MIB,
        ..roomy()
    };
    let script = "h = await big(n=4 * 1024 * 1024)\ntry:\n    load_artifact(h)\n    r = 'kept'\nexcept ValueError:\n    r = 'refused'\nr";
    let r = on_both(script, &policy).await;
    assert_ok(&r);
    assert_eq!(r.output, json!("refused"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_big_result_is_offloaded_and_loaded_back_on_both_guests() {
    let r = on_both(
        "h = await big(n=100000)\nv = load_artifact(h)\n[sorted(h), len(v)]",
        &roomy(),
    )
    .await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["artifact_ref", "media_type", "preview", "size"], 100000])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_nested_too_deep_is_refused_on_both_guests() {
    let script = "try:\n    await deep(n=5000)\n    r = 'kept'\nexcept Exception as e:\n    r = type(e).__name__\nr";
    on_both(script, &roomy()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_tool_is_a_runtime_error_on_both_guests() {
    let r = on_both(
        "try:\n    await explode()\nexcept RuntimeError:\n    r = 'caught'\nr",
        &roomy(),
    )
    .await;
    assert_ok(&r);
}

#[tokio::test(flavor = "multi_thread")]
async fn host_files_stay_out_of_reach_on_both_guests() {
    let script = "try:\n    open('/etc/passwd').read()\n    r = 'read'\nexcept OSError:\n    r = 'refused'\nr";
    let r = on_both(script, &roomy()).await;
    assert_eq!(r.output, json!("refused"));
}

#[tokio::test(flavor = "multi_thread")]
async fn dot_dot_out_of_the_workspace_stays_out_of_reach_on_both_guests() {
    let script = "try:\n    open('/workspace/../../../../etc/passwd').read()\n    r = 'read'\nexcept OSError:\n    r = 'refused'\nr";
    let r = on_both(script, &roomy()).await;
    assert_eq!(r.output, json!("refused"));
}

// ------------------------------------------------ CPython's own escape routes

/// Runs `script` on CPython under [`roomy`] limits; then a chain still runs.
async fn on_cpython(script: &str) -> ChainRunResult {
    let r = run_on(PythonChoice::Cpython, script, &roomy()).await;
    assert_eq!(r.interpreter, Interpreter::Cpython);
    assert_next_cpython_chain_ok().await;
    r
}

/// The script's answer as a string, failing with the whole result if it is none.
fn answer(r: &ChainRunResult) -> String {
    match r.output.as_str() {
        Some(s) => s.to_owned(),
        None => panic!("no string answer: {r:#?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn native_extensions_and_processes_cannot_be_imported_on_cpython() {
    let script = "out = []\nfor m in ['ctypes', '_ctypes', 'socket', '_socket', 'subprocess', 'multiprocessing', 'ssl', 'select', 'mmap']:\n    try:\n        __import__(m)\n        out.append(m + ': imported')\n    except ImportError:\n        out.append(m + ': refused')\n'; '.join(out)";
    let r = on_cpython(script).await;
    let text = answer(&r);
    assert!(!text.contains("imported"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn importlib_and_sys_modules_do_not_bring_blocked_modules_back_on_cpython() {
    let script = "import importlib, sys\nout = []\nfor how in [lambda: importlib.import_module('_socket'), lambda: sys.modules['_socket'], lambda: importlib.__import__('subprocess')]:\n    try:\n        how()\n        out.append('got')\n    except (ImportError, KeyError):\n        out.append('refused')\nout";
    let r = on_cpython(script).await;
    assert_eq!(r.output, json!(["refused", "refused", "refused"]), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn process_functions_of_os_fail_clearly_on_cpython() {
    let script = "import os\nout = []\nfor name in ['system', 'popen', 'fork', 'execv', 'spawnv', 'kill']:\n    f = getattr(os, name, None)\n    try:\n        f('true') if f else None\n        out.append(name + (': ran' if f else ': absent'))\n    except Exception as e:\n        out.append(name + ': ' + type(e).__name__)\nout";
    let r = on_cpython(script).await;
    let text = r.output.to_string();
    assert!(!text.contains(": ran"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_reached_through_loaded_modules_cannot_connect_on_cpython() {
    let script = "import asyncio.base_events as b\nsock = getattr(b, 'socket', None)\ntry:\n    s = sock.socket()\n    s.connect(('127.0.0.1', 22))\n    r = 'connected'\nexcept Exception as e:\n    r = type(e).__name__\nr";
    let r = on_cpython(script).await;
    assert_ne!(r.output, json!("connected"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn subclasses_and_gc_walks_find_nothing_that_runs_a_process_on_cpython() {
    // `subprocess.Popen` is loaded (asyncio imports it) and reachable from
    // `object.__subclasses__()`; WASI has no processes, so it cannot start one.
    let script = "import gc\nobjs = len(gc.get_objects())\nout = []\nfor c in object.__subclasses__():\n    if c.__name__ in ('Popen', 'CDLL'):\n        try:\n            c(['true'])\n            out.append(c.__name__ + ': ran')\n        except Exception as e:\n            out.append(c.__name__ + ': ' + type(e).__name__)\n[out, objs > 0]";
    let r = on_cpython(script).await;
    assert_ok(&r);
    assert!(!r.output.to_string().contains(": ran"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_filesystem_shows_only_the_workspace_on_cpython() {
    let script = "import os\nopen('note.txt', 'w').write('hi')\n[os.getcwd(), sorted(os.listdir('/workspace')), dict(os.environ)]";
    let r = on_cpython(script).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["/workspace", ["note.txt"], {}]), "{r:#?}");
    let listing = run_on(PythonChoice::Cpython, "import os\nos.listdir('/')", &roomy()).await;
    let text = listing.output.to_string();
    assert!(!text.contains("etc") && !text.contains("root"), "{listing:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn filling_the_host_disk_through_the_workspace_is_capped_on_both_guests() {
    // WASI file writes run on the host's blocking threads, outside the
    // chain's CPU clock: without the quota a CPython chain wrote host disk
    // at disk speed for its whole total timeout.
    // Room for the CPython guest's writes (WASI streams take 4 KiB per
    // blocking write) on a loaded machine: the quota, not a limit, must end it.
    let policy = ChainPolicy {
        max_cpu_s: 30.0,
        total_timeout_s: 60.0,
        ..tight()
    };
    for script in [
        "from pathlib import Path\nchunk = 'x' * (4 * 1024 * 1024)\ni = 0\nwhile True:\n    Path('/workspace/f' + str(i)).write_text(chunk)\n    i += 1",
        "chunk = 'x' * (4 * 1024 * 1024)\nwhile True:\n    with open('/workspace/same', 'w') as f:\n        f.write(chunk)",
    ] {
        for python in [PythonChoice::Monty, PythonChoice::Cpython] {
            let workspace = tempfile::tempdir().expect("temp dir");
            let options = chainbox::RunOptions {
                workspace: Some(workspace.path().to_path_buf()),
                ..chainbox::RunOptions::default()
            };
            let policy = ChainPolicy {
                python,
                ..policy.clone()
            };
            let r = engine()
                .run_with(
                    script,
                    &adversarial_registry(),
                    &policy,
                    &Approval::auto(ToolRisk::Safe),
                    options,
                )
                .await;
            assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
            assert_eq!(
                r.error.as_ref().map(|e| e.error_type.as_str()),
                Some("OSError"),
                "{r:#?}"
            );
            let on_disk: u64 = std::fs::read_dir(workspace.path())
                .expect("workspace")
                .map(|e| e.and_then(|e| e.metadata()).map_or(0, |m| m.len()))
                .sum();
            assert!(on_disk <= 256 * MIB, "{python:?}: {on_disk} bytes written");
        }
    }
    assert_next_chain_ok().await;
    assert_next_cpython_chain_ok().await;
}
