//! Many attacks at once: 1,000 chains on one engine, a tenth of each kind
//! (CPU hogs, memory bombs, budget floods, panicking tools, compile errors,
//! slow gathers, total timeouts, denied calls, script errors and honest
//! chains). Every chain must end with its own typed outcome and trace, none
//! may be starved or mixed up with another, and the engine must go on.

use std::time::{Duration, Instant};

use chainbox::{Approval, CallStatus, ChainPolicy, ChainRunResult, ChainStatus, Engine, ErrorKind, ToolRisk};
use serde_json::json;

use crate::fixtures::{
    MIB, adversarial_registry_with, assert_next_chain_ok, assert_next_chain_ok_on, engine, risky_tool,
};

const CHAINS: usize = 1000;

/// The script, policy and approval of chain `i`.
fn chain(i: usize) -> (String, ChainPolicy, Approval) {
    // Generous clocks for the chains that should finish: 1,000 chains share
    // two cores here, and the script's CPU clock is wall time in the guest.
    let base = ChainPolicy {
        max_tool_calls: 10,
        call_timeout_s: 20.0,
        approval_timeout_s: 10.0,
        total_timeout_s: 60.0,
        max_cpu_s: 20.0,
        max_memory_bytes: 32 * MIB,
        max_stdout_bytes: 1024,
        ..ChainPolicy::default()
    };
    let auto = Approval::auto(ToolRisk::Safe);
    match i % 10 {
        0 => (format!("a = await add(a={i}, b=1)\nprint('chain', a)\na"), base, auto),
        1 => (
            "await noop()\nwhile True:\n    pass".into(),
            ChainPolicy {
                max_cpu_s: 0.05,
                ..base
            },
            auto,
        ),
        2 => (
            "s = 'x' * 1024\nwhile True:\n    s = s + s".into(),
            ChainPolicy {
                max_memory_bytes: 16 * MIB,
                ..base
            },
            auto,
        ),
        3 => (
            "while True:\n    await noop()".into(),
            ChainPolicy {
                max_tool_calls: 5,
                ..base
            },
            auto,
        ),
        4 => (
            "try:\n    await explode()\nexcept RuntimeError:\n    r = 'contained'\nr".into(),
            base,
            auto,
        ),
        5 => ("def f(:\n    pass".into(), base, auto),
        6 => (
            format!(
                "import asyncio\nr = await asyncio.gather(sleep(seconds=0.1), echo(text='{i}'), sleep(seconds=0.1))\nr[1]"
            ),
            base,
            auto,
        ),
        7 => (
            "await noop()\nawait sleep(seconds=30)".into(),
            ChainPolicy {
                total_timeout_s: 2.0,
                ..base
            },
            auto,
        ),
        8 => (
            "try:\n    await launch()\n    r = 'launched'\nexcept PermissionError:\n    r = 'denied'\nr".into(),
            base,
            Approval::deny_all(),
        ),
        _ => (format!("await echo(text='{i}')\n{i} / 0"), base, auto),
    }
}

/// Checks chain `i`'s outcome against its kind.
#[track_caller]
fn check(i: usize, r: &ChainRunResult) {
    let ended = |status, kind| {
        assert_eq!(r.status, status, "chain {i}: {r:#?}");
        assert_eq!(r.error_kind(), Some(kind), "chain {i}: {r:#?}");
    };
    let statuses: Vec<_> = r.call_trace.iter().map(|c| (c.tool.as_str(), c.status)).collect();
    assert_eq!(r.tool_calls as usize, r.call_trace.len(), "chain {i}");
    match i % 10 {
        0 => {
            assert_eq!(r.status, ChainStatus::Ok, "chain {i}: {r:#?}");
            assert_eq!(r.output, json!(i as f64 + 1.0), "chain {i}: another chain's answer?");
            assert_eq!(r.stdout, format!("chain {}.0\n", i + 1), "chain {i}");
            assert_eq!(statuses, [("add", CallStatus::Ok)]);
        }
        1 => {
            ended(ChainStatus::Error, ErrorKind::Cpu);
            assert_eq!(statuses, [("noop", CallStatus::Ok)]);
        }
        2 => {
            ended(ChainStatus::Error, ErrorKind::Memory);
            assert!(statuses.is_empty());
        }
        3 => {
            ended(ChainStatus::Error, ErrorKind::ToolBudget);
            assert_eq!(statuses, vec![("noop", CallStatus::Ok); 5]);
        }
        4 => {
            assert_eq!(r.status, ChainStatus::Ok, "chain {i}: {r:#?}");
            assert_eq!(r.output, json!("contained"));
            assert_eq!(statuses, [("explode", CallStatus::Error)]);
        }
        5 => {
            ended(ChainStatus::Error, ErrorKind::Compile);
            assert!(statuses.is_empty());
        }
        6 => {
            assert_eq!(r.status, ChainStatus::Ok, "chain {i}: {r:#?}");
            assert_eq!(r.output, json!(i.to_string()), "chain {i}: another chain's answer?");
            assert_eq!(
                statuses,
                [
                    ("sleep", CallStatus::Ok),
                    ("echo", CallStatus::Ok),
                    ("sleep", CallStatus::Ok)
                ]
            );
        }
        7 => {
            ended(ChainStatus::Timeout, ErrorKind::Timeout);
            // On a starved machine the deadline may fall before the sleep
            // starts; whatever ran is recorded, the sleep never as finished.
            let full = [("noop", CallStatus::Ok), ("sleep", CallStatus::Timeout)];
            assert!(
                statuses == full
                    || statuses == full[..1]
                    || statuses == [("noop", CallStatus::Timeout)]
                    || statuses.is_empty(),
                "chain {i}: {statuses:?}"
            );
        }
        8 => {
            assert_eq!(r.status, ChainStatus::Ok, "chain {i}: {r:#?}");
            assert_eq!(r.output, json!("denied"));
            assert_eq!(statuses, [("launch", CallStatus::Denied)]);
        }
        _ => {
            ended(ChainStatus::Error, ErrorKind::Script);
            assert_eq!(
                r.error.as_ref().map(|e| e.error_type.as_str()),
                Some("ZeroDivisionError")
            );
            assert_eq!(statuses, [("echo", CallStatus::Ok)]);
        }
    }
}

/// On an engine of its own: its 1,000 chains take every slot of an engine
/// for seconds, and the other tests' chains (2 s total timeouts) timed out
/// waiting for one on the shared engine (CI, 2 cores).
#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_hostile_chains_at_once_each_end_with_their_own_typed_outcome() {
    let engine = Engine::new().expect("an engine");
    // Its CPython guest loaded before the clock starts, as the shared one's.
    engine.prepare_cpython().await.expect("the CPython guest");
    let registry = adversarial_registry_with([risky_tool("launch", ToolRisk::Critical, |_| Ok(json!("launched")))]);
    let started = Instant::now();
    let tasks: Vec<_> = (0..CHAINS)
        .map(|i| {
            let (engine, registry) = (engine.clone(), registry.clone());
            tokio::spawn(async move {
                let (script, policy, approval) = chain(i);
                engine.run(&script, &registry, &policy, &approval).await
            })
        })
        .collect();
    let mut results = Vec::with_capacity(CHAINS);
    for task in tasks {
        results.push(task.await.expect("a chain task panicked"));
    }
    let elapsed = started.elapsed();
    for (i, r) in results.iter().enumerate() {
        check(i, r);
    }
    assert!(elapsed < Duration::from_secs(60), "1,000 chains took {elapsed:?}");
    assert_next_chain_ok_on(&engine).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_chains_never_see_each_others_workspace_files() {
    let registry = crate::fixtures::adversarial_registry();
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let script = format!(
                    "from pathlib import Path\nimport os\nPath('/workspace/mine.txt').write_text('{i}')\nawait sleep(seconds=0.05)\n[Path('/workspace/mine.txt').read_text(), sorted(os.listdir('/workspace'))]"
                );
                let policy = ChainPolicy {
                    total_timeout_s: 30.0,
                    max_cpu_s: 10.0,
                    ..crate::fixtures::tight()
                };
                engine().run(&script, &registry, &policy, &Approval::auto(ToolRisk::Safe)).await
            })
        })
        .collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let r = task.await.expect("a chain task panicked");
        assert_eq!(r.status, ChainStatus::Ok, "chain {i}: {r:#?}");
        assert_eq!(
            r.output,
            json!([i.to_string(), ["mine.txt"]]),
            "chain {i} saw another workspace"
        );
        assert_eq!(r.call_trace.len(), 1);
    }
    assert_next_chain_ok().await;
}
