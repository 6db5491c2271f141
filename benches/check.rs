//! What the check before the run costs a chain: the demo script (five
//! tools, `asyncio.gather`, a loop, a dict of results) checked against the
//! demo tools' stubs by
//! - `fresh`: a new checker, as the first chain of an engine meets it (ty
//!   loads typeshed's builtins and the modules the script imports);
//! - `warm`: the engine's checker after earlier chains, on a script it has
//!   not seen (each iteration's script differs by a comment, so neither
//!   the verdict cache nor ty's cache of the script answers);
//! - `cached`: the same script again (an agent's retry, a benchmark's loop):
//!   the verdict cache;
//! - `warm_one_call`, `warm_no_call`: as `warm`, a script of one tool call,
//!   and one with no tool call (a comprehension and `sum`).
//!
//! The target (issue 56): `warm` ≤ 1 ms.
//!
//! `flow` is the data-flow analysis of the same script, with
//! `get_weather` and `list_orders` untrusted and `render_chart` high risk
//! (every argument guarded): what a chain pays when any tool is untrusted.

use std::sync::Arc;

use async_trait::async_trait;
use chainbox::check::Checker;
use chainbox::demo::{DEMO_SCRIPT, demo_registry};
use chainbox::flow::FlowTools;
use chainbox::tools::{Tool, ToolContext, ToolError, ToolInfo, ToolOutput};
use chainbox::{ChainPolicy, ToolRegistry, ToolRisk, TypeCheck};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value};

/// A demo tool's declaration, marked for the data-flow policy.
struct Marked(ToolInfo);

#[async_trait]
impl Tool for Marked {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn execute(&self, _: ToolContext, _: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("not run"))
    }
}

fn check(c: &mut Criterion) {
    let registry = demo_registry();
    let mut group = c.benchmark_group("check");
    group.sample_size(20);
    group.bench_function("fresh", |b| {
        b.iter(|| Checker::default().check(DEMO_SCRIPT, &registry, TypeCheck::Enforce, false))
    });
    group.sample_size(200);
    let checker = Checker::default();
    let mut n = 0u64;
    group.bench_function("warm", |b| {
        b.iter(|| {
            n += 1;
            let script = format!("{DEMO_SCRIPT}\n# {n}\n");
            let verdict = checker.check(&script, &registry, TypeCheck::Enforce, false);
            assert!(!verdict.refused(), "{verdict:?}");
        })
    });
    group.bench_function("cached", |b| {
        b.iter(|| checker.check(DEMO_SCRIPT, &registry, TypeCheck::Enforce, false))
    });
    // Smaller scripts, each with a changing comment as `warm`'s: one tool
    // call, and no tool call (ty still reads the script).
    for (name, script) in [
        ("warm_one_call", "w = await get_weather(city='Paris')\nw\n"),
        (
            "warm_no_call",
            "xs = [i * i for i in range(10)]\nsum(x for x in xs if x % 2)\n",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let script = format!("{script}# {n}\n");
                let verdict = checker.check(&script, &registry, TypeCheck::Enforce, false);
                assert!(!verdict.refused(), "{verdict:?}");
            })
        });
    }
    group.finish();
}

fn flow(c: &mut Criterion) {
    let demo = demo_registry();
    let marked = demo.iter().filter_map(|tool| tool.as_local()).map(|tool| {
        let mut info = tool.info().clone();
        match info.name.as_str() {
            "get_weather" | "list_orders" => info = info.with_untrusted_output(),
            "render_chart" => info = info.with_risk(ToolRisk::High),
            _ => {}
        }
        Arc::new(Marked(info)) as Arc<dyn Tool>
    });
    let registry = ToolRegistry::from_local(marked.collect::<Vec<_>>()).expect("registry");
    let tools = FlowTools::new(&registry, &ChainPolicy::default());
    assert!(tools.is_active());
    c.bench_function("check/flow", |b| {
        b.iter(|| {
            let verdict = chainbox::check::flow::analyze(DEMO_SCRIPT, &tools, false);
            assert!(verdict.taint_of("render_chart").is_some());
        })
    });
}

criterion_group!(benches, check, flow);
criterion_main!(benches);
