#!/usr/bin/env bash
# Peer comparison, the one command: installs the peers (pinned, from PyPI and
# npm, into target/peers/), runs the same workloads through chainbox, native
# monty and every peer on this machine, and writes one markdown table to
# stdout and target/peers/results.md (raw JSON in target/peers/raw/).
#
#   benches/peers/run.sh
#
# PEERS_BUDGET_S (default 2) and PEERS_WARMUP_S (default 0.3) set the
# sampling time per workload and peer.
set -euo pipefail

PYDANTIC_MONTY_VERSION=1.4.0 # the monty release chainbox's guest is built from
SMOLAGENTS_VERSION=1.26.0
PYODIDE_VERSION=314.0.7

cd "$(dirname "$0")/../.."
OUT=target/peers
RAW=$OUT/raw
mkdir -p "$RAW"
rm -f "$RAW"/*.json

# The real interpreter behind the pyenv shim: the shim is a shell script with
# start-up hooks that would otherwise be counted in every Python start.
PY311=$(python3.11 -I -c 'import sys; print(sys.executable)')
echo "python3.11: $PY311" >&2
if [ ! -x "$OUT/venv/bin/python" ]; then
    "$PY311" -m venv "$OUT/venv"
fi
PY="$OUT/venv/bin/python"
"$PY" -I -m pip install -q --disable-pip-version-check \
    "pydantic-monty==$PYDANTIC_MONTY_VERSION" "smolagents==$SMOLAGENTS_VERSION" >&2

mkdir -p "$OUT/node"
printf '{"private": true, "dependencies": {"pyodide": "%s"}}\n' "$PYODIDE_VERSION" >"$OUT/node/package.json"
(cd "$OUT/node" && npm install --no-audit --no-fund --loglevel=error >&2)

load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_START=$(load)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

echo "== chainbox and native monty (cargo bench --bench peers)" >&2
cargo bench --bench peers -q >"$RAW/rust.json"
# Python peers run isolated (-I: no environment variables, no user site; -S
# where no installed package is needed) so nothing but the peer is timed;
# -B keeps __pycache__ out of the source tree.
echo "== CPython exec and subprocess" >&2
"$PY" -B -I -S benches/peers/cpython_runner.py "$PY" >"$RAW/cpython.json"
echo "== pydantic-monty" >&2
"$PY" -B -I benches/peers/pydantic_monty_runner.py >"$RAW/pydantic_monty.json"
echo "== Pyodide in Node" >&2
env -u NODE_OPTIONS node benches/peers/pyodide_runner.mjs "$OUT/node" >"$RAW/pyodide.json"
echo "== smolagents" >&2
"$PY" -B -I benches/peers/smolagents_runner.py >"$RAW/smolagents.json"

cat >"$RAW/machine.json" <<JSON
{"started": "$STARTED", "finished": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "cpus": $(nproc),
 "loadavg_start": "$LOAD_START", "loadavg_end": "$(load)",
 "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)",
 "rustc": "$(rustc --version)", "node": "$(node --version)"}
JSON

"$PY" -B -I -S benches/peers/report.py "$RAW" "$OUT/results.md" "$OUT/results.json"
