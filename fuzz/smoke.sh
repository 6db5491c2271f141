#!/usr/bin/env bash
# Smoke-runs the chainbox fuzz targets for SECONDS each (default 60):
#
#   fuzz/smoke.sh                  # both targets
#   fuzz/smoke.sh guest_messages   # one target
#   SECONDS_PER_TARGET=600 fuzz/smoke.sh chain
#
# Crashes land in fuzz/artifacts/<target>/; turn each into a regression test
# in tests/it/fuzz_regressions.rs. The working corpus is fuzz/corpus/<target>/
# (not committed), seeded from fuzz/seeds/<target>/.
#
# The chain target's first run compiles the guest with the instrumented
# Cranelift before fuzzing starts (several minutes on 2 cores); the result is
# cached like any chainbox engine's (~/.cache/chainbox), so later runs start
# at once.
#
# Toolchain: cargo-fuzz needs nightly features. The crate's rust-version
# (1.99) can be newer than the installed nightly, so by default this uses
# the pinned toolchain with RUSTC_BOOTSTRAP=1; set FUZZ_TOOLCHAIN=nightly to
# use a recent enough nightly instead.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${SECONDS_PER_TARGET:-60}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(guest_messages chain)

toolchain=()
if [ -n "${FUZZ_TOOLCHAIN:-}" ]; then
    toolchain=("+$FUZZ_TOOLCHAIN")
else
    export RUSTC_BOOTSTRAP=1
fi

# Reuse the guest the main build already made rather than rebuilding it
# under the fuzz flags (build.rs honours CHAINBOX_GUEST_WASM).
guest=../target/guest/wasm32-wasip1/release/chainbox-guest.wasm
if [ -z "${CHAINBOX_GUEST_WASM:-}" ] && [ -f "$guest" ]; then
    export CHAINBOX_GUEST_WASM="$PWD/$guest"
fi

# 16 codegen units: wasmtime builds much faster, fuzzing barely slower.
build=(cargo "${toolchain[@]}" fuzz build --codegen-units 16)
"${build[@]}"

for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    case "$target" in
        # A chain may legitimately take its full 1 s total timeout; 10 s is a hang.
        chain) extra=(-timeout=10 -max_len=4096) ;;
        *) extra=(-timeout=5) ;;
    esac
    echo "== $target: ${seconds}s"
    cargo "${toolchain[@]}" fuzz run --codegen-units 16 "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 "${extra[@]}"
done
