#!/usr/bin/env bash
# Installs the Python MCP clients' packages (the MCP Python SDK, pinned by
# requirements.txt next to this script) into the virtualenv
# $CHAINBOX_PYCLIENTS, by default target/pyclients, for oauth_client.py: the
# end-to-end tests of `chainbox serve --auth-issuer` run it with
# target/pyclients/bin/python. Does nothing when those requirements are
# already installed there. Run by .ci/run before `cargo test`, and usable by
# the tests themselves when the virtualenv is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${CHAINBOX_PYCLIENTS:-$root/target/pyclients}"
if cmp -s "$here/requirements.txt" "$venv/.installed-requirements.txt" && [ -x "$venv/bin/python" ]; then
    exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
cp "$here/requirements.txt" "$venv/.installed-requirements.txt"
echo "Python MCP clients installed in $venv"
