#!/usr/bin/env python3
"""An expression battery (tests/generated/batteries/) checked against the
CPython running this script rather than the CPython guest: for what the
guest, a 32-bit build, was not the reference of before stop 42 spliced
64-bit CPython's numeric hashes into it (the order of sets of tuples,
floats, big or negative ints).

    python3 tests/generated/host_battery.py target/release/chainbox tests/generated/batteries/sets.py 1500 1

All expressions run in one script on monty (`--python monty`) and here;
each whose repr (or exception type and message) differs is printed. The
host's CPython version shows where it differs from 3.14's (hash(None) is
an address before 3.12; 3.11 rebuilt a constant frozenset from its own
order, so `[x for x in {3, 40, 99, 1000}]` differs there).
"""
import importlib.util, json, os, random, subprocess, sys, tempfile

BIN, GEN, N, SEED = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("battery", GEN)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
rng = random.Random(SEED)
exprs = [gen.expr(rng) for _ in range(N)]
body = getattr(gen, "PRELUDE", "") + "\n_out = []\n" + "".join(
    f"try:\n    _out.append(repr({e}))\nexcept Exception as _e:\n    _out.append(type(_e).__name__ + ': ' + str(_e))\n"
    for e in exprs
)
namespace = {}
exec(body, namespace)
want = namespace["_out"]
with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, "battery.py")
    policy = os.path.join(tmp, "policy.toml")
    with open(script, "w") as f:
        f.write(body + "_out\n")
    with open(policy, "w") as f:
        f.write("max_inline_result_bytes = 10000000\n")
    run = subprocess.run([BIN, "run", script, "--json", "--python", "monty", "--policy", policy], capture_output=True, text=True)
result = json.loads(run.stdout)
got = result.get("output")
if not isinstance(got, list):
    sys.exit(f"the battery script failed on monty: {result.get('error')}")
bad = [(e, w, o) for e, w, o in zip(exprs, want, got) if w != o]
for e, w, o in bad:
    print("EXPR", e, "\n  host: ", w, "\n  monty:", o)
print(f"{len(bad)}/{len(exprs)} differ")
