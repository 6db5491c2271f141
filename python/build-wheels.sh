#!/usr/bin/env bash
# Builds the release wheels of the `chainbox` Python package: one abi3
# wheel (CPython 3.10 and newer) per Linux architecture, tagged
# manylinux_2_28 (glibc 2.28 or newer), both guests embedded, so that
# `pip install chainbox-*.whl` is the whole set-up. Cross-compiles with
# zig as the C compiler and linker (maturin --zig), which links against
# glibc 2.28's symbols whatever this machine's glibc is.
#
#   python/build-wheels.sh                 # both: x86_64 and aarch64
#   python/build-wheels.sh x86_64          # or aarch64: one of them
#
# Tools, pinned, in the virtualenv target/wheel-tools: maturin and zig (PyPI's
# ziglang). The wheels go to target/wheels-release. Not part of .ci/run: each
# is a release build of the whole engine (~20 min on 2 cores).
set -euo pipefail
# One compound command, read whole before it runs: editing this file while
# a build runs does not change what the running script does next.
{
cd "$(dirname "$0")"
MATURIN=maturin==1.16.0
ZIG=ziglang==0.17.0
tools=../target/wheel-tools
out=../target/wheels-release
if [ ! -x "$tools/bin/python" ]; then
    python3 -m venv "$tools"
fi
if [ "$(cat "$tools/pins" 2>/dev/null)" != "$MATURIN $ZIG" ]; then
    "$tools/bin/pip" install --quiet --disable-pip-version-check "$MATURIN" "$ZIG"
    echo "$MATURIN $ZIG" >"$tools/pins"
fi
# maturin finds zig as `python -m ziglang` of the python on PATH.
export PATH="$(realpath "$tools/bin"):$PATH"

SMOKE='
import chainbox

@chainbox.tool
def get_weather(city: str) -> dict:
    """Current weather of a city."""
    return {"city": city, "temp_c": 21}

@chainbox.tool(risk="critical")
async def send_email(to: str, body: str) -> str:
    """Sends an email."""
    return "sent"

script = """
w = await get_weather(city="Paris")
await send_email(to="ops@example.com", body=f"{w[\"city\"]}: {w[\"temp_c\"]} C")
"""
for python in ("monty", "cpython"):
    engine = chainbox.Engine({"max_tool_calls": 20}, python=python)
    result = engine.run(script, tools=[get_weather, send_email],
                        approve=lambda call: call.arguments["to"].endswith("@example.com"))
    result.raise_for_status()
    assert result.output == "sent" and result.interpreter == python, (result.output, result.interpreter)
    print(f"smoke test, {python}: {result.output!r}, calls {[c.tool for c in result.calls]}")
print(chainbox.stubs([get_weather, send_email]))
'

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)
toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' ../rust-toolchain.toml)
for arch in "${arches[@]}"; do
    case "$arch" in
        x86_64 | aarch64) triple="$arch-unknown-linux-gnu" ;;
        *) echo "build-wheels.sh: unknown architecture '$arch' (x86_64, aarch64)" >&2; exit 2 ;;
    esac
    # rust-toolchain.toml lists only the host's and the guest's targets, and
    # rustup does not install a toolchain's targets on its own here.
    if ! rustup target list --toolchain "$toolchain" --installed | grep -qx "$triple"; then
        rustup target add --toolchain "$toolchain" "$triple"
    fi
    rm -f "$out"/chainbox-*-"manylinux_2_28_$arch".whl
    start=$(date +%s)
    maturin build --release --zig --compatibility manylinux_2_28 --target "$triple" --out "$out"
    wheel=$(ls "$out"/chainbox-*-"manylinux_2_28_$arch".whl)
    echo "build-wheels.sh: $arch built in $(( $(date +%s) - start )) s: $wheel ($(du -h "$wheel" | cut -f1))"
    # The newest glibc symbol version the extension needs: 2.28 at most.
    unzip -p "$wheel" chainbox/_chainbox.abi3.so >"$tools/_chainbox.so"
    glibc=$(objdump -T "$tools/_chainbox.so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
    echo "build-wheels.sh: $arch: $(file -b "$tools/_chainbox.so" | cut -d, -f1-2); needs $glibc"
    if [ "$(printf '%s\n' "$glibc" GLIBC_2.28 | sort -V | tail -1)" != GLIBC_2.28 ]; then
        echo "build-wheels.sh: $arch: needs $glibc, newer than manylinux_2_28's GLIBC_2.28" >&2
        exit 1
    fi
    # On this machine's architecture: installed alone into a fresh
    # virtualenv, it runs docs/python.md's first example on both guests.
    if [ "$arch" = "$(uname -m)" ]; then
        smoke=../target/wheel-smoke
        rm -rf "$smoke"
        python3 -m venv "$smoke"
        "$smoke/bin/pip" install --quiet --disable-pip-version-check "$wheel"
        (cd / && "$(realpath "$OLDPWD/$smoke")/bin/python" -I -c "$SMOKE")
    fi
done
exit
}
