//! A chain's randomness comes from its seed (`RunOptions::seed`): on both
//! guests, the same seed draws the same values (so a replay of the chain
//! sees what the first run saw), another seed or no seed other ones.
//! (That a CPython chain draws the same on a spare instance as on a fresh
//! one is `guests::tests`, which can see which one it got.)

use chainbox::{Approval, ChainPolicy, PythonChoice, RunOptions, ToolRisk};
use serde_json::Value;

use crate::fixtures::{assert_ok, engine, registry};

/// What the monty guest can draw: `random`'s module functions and an
/// unseeded `random.Random()`, before and after a tool call.
const MONTY_DRAWS: &str = "import random
drawn = [random.random(), random.randint(1, 10**9)]
await add(a=1, b=2)
drawn + [random.Random().random(), random.randrange(10**12), random.random()]";

/// What the CPython guest can draw besides: `uuid.uuid4`, `os.urandom`,
/// `secrets`, `tempfile`'s names.
const CPYTHON_DRAWS: &str = "import os, random, secrets, tempfile, uuid
drawn = [random.random(), random.randint(1, 10**9)]
await add(a=1, b=2)
temp = os.path.basename(tempfile.mkstemp(dir='.')[1])
drawn + [str(uuid.uuid4()), os.urandom(8).hex(), secrets.token_hex(8), random.Random().random(), temp, random.random()]";

const GUESTS: [PythonChoice; 2] = [PythonChoice::Monty, PythonChoice::Cpython];

/// The answer of `script` on `python` under `seed`: a list of draws.
async fn run_seeded(python: PythonChoice, script: &str, seed: Option<u64>) -> Vec<Value> {
    let policy = ChainPolicy {
        python,
        ..ChainPolicy::default()
    };
    let options = RunOptions {
        seed,
        ..RunOptions::default()
    };
    let r = engine()
        .run_with(script, &registry(), &policy, &Approval::auto(ToolRisk::Safe), options)
        .await;
    assert_ok(&r);
    r.output.as_array().expect("a list of draws").clone()
}

/// Everything the guest of `python` can draw, under `seed`.
async fn draws(python: PythonChoice, seed: Option<u64>) -> Vec<Value> {
    let script = match python {
        PythonChoice::Cpython => CPYTHON_DRAWS,
        _ => MONTY_DRAWS,
    };
    run_seeded(python, script, seed).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_seeded_chain_draws_the_same_values_every_run() {
    for python in GUESTS {
        let first = draws(python, Some(46)).await;
        for round in 0..3 {
            assert_eq!(draws(python, Some(46)).await, first, "{python:?}, round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_seed_draws_other_values() {
    for python in GUESTS {
        let ours = draws(python, Some(46)).await;
        let theirs = draws(python, Some(47)).await;
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_ne!(a, b, "{python:?}: draw {i} is the same under seeds 46 and 47");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unseeded_chain_draws_fresh_values_every_run() {
    for python in GUESTS {
        let first = draws(python, None).await;
        let second = draws(python, None).await;
        for (i, (a, b)) in first.iter().zip(&second).enumerate() {
            assert_ne!(a, b, "{python:?}: draw {i} is the same in two unseeded chains");
        }
    }
}

/// Both guests seed `random` as CPython does (624 words of entropy,
/// `init_by_array`) from the same stream: a seed draws the same `random`
/// values on monty as on CPython, so a script's values do not depend on
/// which guest `auto` gave it.
#[tokio::test(flavor = "multi_thread")]
async fn a_seed_draws_the_same_random_values_on_both_guests() {
    let script = "import random\n[random.random(), random.randint(1, 10**9), random.getrandbits(64), random.Random().random(), random.random()]";
    let on_monty = run_seeded(PythonChoice::Monty, script, Some(46)).await;
    let on_cpython = run_seeded(PythonChoice::Cpython, script, Some(46)).await;
    assert_eq!(on_monty, on_cpython);
}
