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

# Runs one peer into $RAW/<file>. A peer that fails is a row of the report
# saying so, not the end of the run; one that fails after printing its
# figures (pydantic-monty's runner has died with SIGABRT at exit) keeps them.
FAILED=()
peer() {
  local name=$1 file=$RAW/$2
  shift 2
  echo "== $name" >&2
  local status=0
  "$@" >"$file.tmp" || status=$?
  if [ "$status" -ne 0 ]; then
    if python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$file.tmp" 2>/dev/null; then
      echo "warning: $name exited with status $status after printing its figures; kept" >&2
    else
      echo "warning: $name failed with status $status; reported as failed" >&2
      printf '[{"peer": "%s", "failed": "exit status %s"}]\n' "$name" "$status" >"$file.tmp"
      FAILED+=("$name")
    fi
  fi
  mv "$file.tmp" "$file"
}

peer "chainbox and native monty (cargo bench --bench peers)" rust.json cargo bench --bench peers -q
# Python peers run isolated (-I: no environment variables, no user site; -S
# where no installed package is needed) so nothing but the peer is timed;
# -B keeps __pycache__ out of the source tree.
peer "CPython exec and subprocess" cpython.json "$PY" -B -I -S benches/peers/cpython_runner.py "$PY"
peer pydantic_monty pydantic_monty.json "$PY" -B -I benches/peers/pydantic_monty_runner.py
peer pyodide pyodide.json env -u NODE_OPTIONS node benches/peers/pyodide_runner.mjs "$OUT/node"
peer smolagents smolagents.json "$PY" -B -I benches/peers/smolagents_runner.py

cat >"$RAW/machine.json" <<JSON
{"started": "$STARTED", "finished": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "cpus": $(nproc),
 "loadavg_start": "$LOAD_START", "loadavg_end": "$(load)",
 "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)",
 "rustc": "$(rustc --version)", "node": "$(node --version)"}
JSON

"$PY" -B -I -S benches/peers/report.py "$RAW" "$OUT/results.md" "$OUT/results.json"
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "peers that failed: ${FAILED[*]} (see the report)" >&2
fi
