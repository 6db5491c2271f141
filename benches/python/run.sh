#!/usr/bin/env bash
# chainbox's Python package against pydantic-monty, one run: installs the
# release wheel (python/build-wheels.sh x86_64 makes it) and pinned
# pydantic-monty into a fresh virtualenv target/pybench, runs
# benches/python/bench.py there, and writes its table to stdout and
# target/pybench/results.md (raw JSON beside it).
#
#   benches/python/run.sh            # ~3 min
#   benches/python/run.sh --quick    # fewer samples, to try it out
#   RUST=1 benches/python/run.sh     # also criterion's `start` of the Rust library
#                                    # (cargo bench --bench chain), for the ratio
set -euo pipefail
PYDANTIC_MONTY_VERSION=1.7.0
cd "$(dirname "$0")/../.."
wheel=$(ls target/wheels-release/chainbox-*-manylinux_2_28_x86_64.whl 2>/dev/null || true)
if [ -z "$wheel" ]; then
    echo "no release wheel in target/wheels-release: run python/build-wheels.sh x86_64 first" >&2
    exit 1
fi
venv=target/pybench
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "pydantic-monty==$PYDANTIC_MONTY_VERSION" "$wheel"
# -I and another folder: the installed wheel, not python/chainbox.
(cd /tmp && "$OLDPWD/$venv/bin/python" -I "$OLDPWD/benches/python/bench.py" --json "$OLDPWD/$venv/results.json" "$@") |
    tee "$venv/results.md"
if [ -n "${RUST:-}" ]; then
    cargo bench --bench chain -- '^start/chainbox$' 2>&1 | grep -A3 '^start/chainbox' | tee -a "$venv/results.md"
fi
