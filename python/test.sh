#!/usr/bin/env bash
# Builds the `chainbox` Python package (python/: a maturin wheel of the
# crate chainbox-python, dev profile, in the root's target/) and runs its
# tests (python/tests) with pytest in the virtualenv target/pyvenv, whose
# pinned requirements (requirements-test.txt) are installed only when they
# change. One test installs the wheel into a fresh virtualenv and imports it.
set -euo pipefail
cd "$(dirname "$0")"
# This crate's features should be the root tests' (python/Cargo.toml: the
# root's dev-dependencies mirrored), or the build below compiles wasmtime,
# chainbox and more a second time: slower, not wrong, so only a warning.
features() { cargo tree "$@" -e normal,build -f '{p} [{f}]' --prefix none --no-dedupe | grep -v -e '^pyo3' -e '^chainbox-python ' | sort -u; }
if ! diff <(features -p chainbox-python) <(features -p chainbox -e dev) >/dev/null; then
    echo "warning: python/Cargo.toml's features differ from the root tests' (mirror the root's [dev-dependencies]); chainbox is built twice:" >&2
    diff <(features -p chainbox-python) <(features -p chainbox -e dev) >&2 || true
fi
venv=../target/pyvenv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! cmp -s requirements-test.txt "$venv/requirements-test.txt"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements-test.txt
    cp requirements-test.txt "$venv/requirements-test.txt"
fi
# The package's own types (it ships py.typed), as a user's mypy --strict sees them.
"$venv/bin/mypy" --strict --python-version 3.10 --cache-dir "$venv/mypy-cache" chainbox
wheels=../target/pywheels
rm -rf "$wheels"
"$venv/bin/maturin" build --profile dev --interpreter "$venv/bin/python" --out "$wheels"
wheel=$(ls "$wheels"/chainbox-*.whl)
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# `pytest`, not `python -m pytest`: the latter puts python/ on sys.path and
# would import the source folder chainbox/ instead of the installed wheel.
CHAINBOX_WHEEL=$(realpath "$wheel") "$venv/bin/pytest" -q -p no:cacheprovider "$@"
