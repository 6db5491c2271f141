#!/usr/bin/env bash
# Installs the MCP servers the tests run against, and oidc-provider for the
# OAuth authorization server of the auth tests (auth_server.mjs), pinned by
# package.json and package-lock.json next to this script, into
# $CHAINBOX_MCP_SERVERS, by
# default target/mcp-servers. Does nothing when that lock is already
# installed there. Run by .ci/run before `cargo test`, and by the tests
# themselves when the servers are missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prefix="${CHAINBOX_MCP_SERVERS:-$root/target/mcp-servers}"
mkdir -p "$prefix"
if cmp -s "$here/package-lock.json" "$prefix/.installed-lock.json" && [ -d "$prefix/node_modules" ]; then
    exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$prefix/"
# --ignore-scripts: the servers ship built; no install script needs to run.
(cd "$prefix" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
cp "$here/package-lock.json" "$prefix/.installed-lock.json"
echo "MCP test servers installed in $prefix"
