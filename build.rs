//! Builds the guest (`guest/runtime`, the monty interpreter) for
//! `wasm32-wasip1` so a plain `cargo build` yields a complete chainbox. The
//! guest has its own target dir (`target/guest`), profile and lock file; the
//! resulting `.wasm` is embedded into the library with `include_bytes!`.
//! No prebuilt wasm is committed.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_TARGET: &str = "wasm32-wasip1";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let guest_dir = manifest_dir.join("guest");
    for path in [
        "runtime/src",
        "runtime/build.rs",
        "runtime/Cargo.toml",
        "runtime/Cargo.lock",
        "protocol/src",
        "protocol/Cargo.toml",
        "vendor",
    ] {
        println!("cargo:rerun-if-changed={}", guest_dir.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=CHAINBOX_GUEST_WASM");

    // An escape hatch for packagers and fuzzers: use a guest built elsewhere.
    if let Ok(prebuilt) = env::var("CHAINBOX_GUEST_WASM") {
        println!("cargo:rustc-env=CHAINBOX_GUEST_WASM_PATH={prebuilt}");
        return;
    }

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<pkg>/out: share one guest build
    // across profiles and test binaries under <target>/guest.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest_dir.join("target"))
        .join("guest");

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_target_installed();

    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--release", "--locked", "--target", GUEST_TARGET])
        .arg("--manifest-path")
        .arg(guest_dir.join("runtime/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's flags are for the host target, not for wasm.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().unwrap_or_else(|e| {
        panic!("chainbox build: could not run `{cargo}` to build the guest: {e}");
    });
    if !status.success() {
        panic!(
            "chainbox build: building the wasm guest failed ({status}).\n\
             It needs the `{GUEST_TARGET}` target: `rustup target add {GUEST_TARGET}`."
        );
    }
    let wasm = target_dir
        .join(GUEST_TARGET)
        .join("release")
        .join("chainbox-guest.wasm");
    assert!(
        wasm.exists(),
        "chainbox build: guest built but {} is missing",
        wasm.display()
    );
    println!("cargo:rustc-env=CHAINBOX_GUEST_WASM_PATH={}", wasm.display());
}

/// Adds the wasm target with rustup when the active toolchain lacks it.
fn ensure_target_installed() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot
        .as_ref()
        .is_some_and(|root| root.join("lib/rustlib").join(GUEST_TARGET).exists());
    if installed {
        return;
    }
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", GUEST_TARGET]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        cmd.args(["--toolchain", &toolchain]);
    }
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!(
            "chainbox build: the `{GUEST_TARGET}` target is missing and `rustup target add {GUEST_TARGET}` failed ({s}); install it and rebuild"
        ),
        Err(e) => panic!(
            "chainbox build: the `{GUEST_TARGET}` target is missing and rustup could not be run ({e}); install the target for your toolchain and rebuild"
        ),
    }
}
