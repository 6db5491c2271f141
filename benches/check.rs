//! What the check before the run costs a chain: the demo script (five
//! tools, `asyncio.gather`, a loop, a dict of results) checked against the
//! demo tools' stubs by
//! - `fresh`: a new checker, as the first chain of an engine meets it (ty
//!   loads typeshed's builtins and the modules the script imports);
//! - `warm`: the engine's checker after earlier chains, on a script it has
//!   not seen (each iteration's script differs by a comment, so neither
//!   the verdict cache nor ty's cache of the script answers);
//! - `cached`: the same script again (an agent's retry, a benchmark's loop):
//!   the verdict cache.
//!
//! The target (issue 56): `warm` ≤ 1 ms.

use chainbox::TypeCheck;
use chainbox::check::Checker;
use chainbox::demo::{DEMO_SCRIPT, demo_registry};
use criterion::{Criterion, criterion_group, criterion_main};

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
    group.finish();
}

criterion_group!(benches, check);
criterion_main!(benches);
