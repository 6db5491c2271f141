//! Builds both guests so a plain `cargo build` yields a complete chainbox:
//! the monty guest (`guest/runtime`) for `wasm32-wasip1` with cargo, in its
//! own target dir (`target/guest`), profile and lock file; and the CPython
//! guest (`guest/cpython`), a WebAssembly component made by PyPI's
//! `componentize-py` (pinned, installed with `python3 -m pip` into
//! `target/guest/componentize-py`) from the WIT world and the guest package,
//! with 64-bit CPython's numeric hashes (`guest/cpython/hashes`) spliced
//! into its libpython and interruption points in its code, by the passes of
//! `guest/build` (the `chainbox-guest-build` crate).
//! Both `.wasm` files are embedded into the library with `include_bytes!`.
//! No prebuilt wasm is committed.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

use chainbox_guest_build::{hashes, immortal, inputs, interrupt};

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
    // The monty guest's compile (minutes when cold, mostly one thread at its
    // end: LTO with one codegen unit) runs while the CPython guest is made
    // (pip, componentize-py, the passes: ~20 s, one thread): the two overlap
    // instead of adding up at the tail of a cold build, where this script
    // is all that runs before the library's own compile.
    let monty = match env::var("CHAINBOX_GUEST_WASM") {
        // An escape hatch for packagers and fuzzers: use a guest built elsewhere.
        Ok(prebuilt) => {
            println!("cargo:rustc-env=CHAINBOX_GUEST_WASM_PATH={prebuilt}");
            None
        }
        Err(_) => Some(spawn_monty_guest(&guest_dir, &guest_target_dir(&manifest_dir))),
    };
    build_cpython_guest(&manifest_dir);
    if let Some(child) = monty {
        finish_monty_guest(child, &guest_target_dir(&manifest_dir));
    }
}

/// Starts the monty guest's build: `guest/runtime` for wasm with cargo, in
/// its own target dir (`target_dir`), profile and lock file.
fn spawn_monty_guest(guest_dir: &Path, target_dir: &Path) -> std::process::Child {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_target_installed();

    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "--release", "--locked", "--target", GUEST_TARGET])
        .arg("--manifest-path")
        .arg(guest_dir.join("runtime/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        // This script's stdout is cargo's directives; the build's output is
        // for the log.
        .stdout(std::io::stderr());
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
    cmd.spawn().unwrap_or_else(|e| {
        panic!("chainbox build: could not run `{cargo}` to build the guest: {e}");
    })
}

/// Waits for the monty guest's build and tells the library where the guest
/// is (`CHAINBOX_GUEST_WASM_PATH`).
fn finish_monty_guest(mut child: std::process::Child, target_dir: &Path) {
    let status = child.wait().unwrap_or_else(|e| {
        panic!("chainbox build: waiting for the guest's build failed: {e}");
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

/// Where both guests are built: `<target>/guest`. OUT_DIR is
/// `<target>/<profile>/build/<pkg>/out`, so one guest build is shared
/// across profiles and test binaries.
fn guest_target_dir(manifest_dir: &Path) -> PathBuf {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    out_dir
        .ancestors()
        .nth(4)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest_dir.join("target"))
        .join("guest")
}

/// componentize-py, pinned: the CPython (3.14) it embeds is part of the guest.
const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// Builds the CPython guest component (or takes `CHAINBOX_CPYTHON_WASM`) and
/// tells the library where it is (`CHAINBOX_CPYTHON_WASM_PATH`).
fn build_cpython_guest(manifest_dir: &Path) {
    let source = manifest_dir.join("guest").join("cpython");
    let passes = manifest_dir.join("guest").join("build");
    for path in CPYTHON_SOURCES {
        println!("cargo:rerun-if-changed={}", source.join(path).display());
    }
    for path in PASSES_SOURCES {
        println!("cargo:rerun-if-changed={}", passes.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=CHAINBOX_CPYTHON_WASM");
    println!("cargo:rerun-if-env-changed=PYTHON");
    if let Ok(prebuilt) = env::var("CHAINBOX_CPYTHON_WASM") {
        println!("cargo:rustc-env=CHAINBOX_CPYTHON_WASM_PATH={prebuilt}");
        return;
    }
    let guest_dir = guest_target_dir(manifest_dir);
    let python = env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let tool_dir = guest_dir.join("componentize-py");
    let marker = tool_dir.join(format!("{COMPONENTIZE_PY}.installed"));
    if !marker.exists() {
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
            ])
            .arg("--target")
            .arg(&tool_dir)
            .arg("--upgrade")
            .arg(COMPONENTIZE_PY)
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "chainbox build: the CPython guest is built with PyPI's `{COMPONENTIZE_PY}`, installed with \
                     `{python} -m pip`, but `{python}` could not be run ({e}).\n\
                     Install python3 (3.9 or newer, with pip), or set PYTHON to one, or set \
                     CHAINBOX_CPYTHON_WASM to a prebuilt guest component."
                )
            });
        if !status.success() {
            panic!(
                "chainbox build: `{python} -m pip install {COMPONENTIZE_PY}` failed ({status}); \
                 the CPython guest needs it (PyPI must be reachable, and python3 needs pip)"
            );
        }
        std::fs::write(&marker, b"").expect("chainbox build: write the componentize-py marker");
    }
    let wasm = guest_dir.join("chainbox-cpython.wasm");
    // The dev, test and clippy builds each run this script: build the
    // component once per content of its inputs (~20-40 s each time).
    let key = guest_dir.join("chainbox-cpython.wasm.inputs");
    let inputs = cpython_inputs(&source, &passes);
    if wasm.exists() && std::fs::read(&key).is_ok_and(|k| k == inputs) {
        println!("cargo:rustc-env=CHAINBOX_CPYTHON_WASM_PATH={}", wasm.display());
        return;
    }
    let unpatched = guest_dir.join("chainbox-cpython.unpatched.wasm");
    let status = Command::new(&python)
        .env("PYTHONPATH", &tool_dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-c",
            "import sys, componentize_py; sys.argv[0] = 'componentize-py'; sys.exit(componentize_py.script())",
        ])
        .arg("--quiet")
        .arg("-d")
        .arg(source.join("wit"))
        .args(["-w", "chain", "componentize", "chainbox_guest", "-p"])
        .arg(source.join("src"))
        .arg("-o")
        .arg(&unpatched)
        .status()
        .unwrap_or_else(|e| panic!("chainbox build: could not run componentize-py with `{python}`: {e}"));
    if !status.success() || !unpatched.exists() {
        panic!("chainbox build: componentize-py failed to build the CPython guest ({status})");
    }
    let hashes = build_hashes(&source.join("hashes").join("hashes.rs"), &guest_dir);
    let component = std::fs::read(&unpatched).expect("chainbox build: read the CPython guest");
    let patched = hashes::patch_component(&component, &hashes)
        .unwrap_or_else(|e| panic!("chainbox build: splicing the numeric hashes into libpython failed: {e}"));
    let patched = interrupt::checks::with_interruption_points(&patched)
        .unwrap_or_else(|e| panic!("chainbox build: putting interruption points into the CPython guest failed: {e}"));
    let (patched, done) = immortal::immortalize(&patched)
        .unwrap_or_else(|e| panic!("chainbox build: making the CPython snapshot's objects immortal failed: {e}"));
    // Not a cargo directive: kept in the build script's output file.
    println!(
        "chainbox build: {} snapshot objects made immortal ({} were already)",
        done.made, done.already
    );
    std::fs::write(&wasm, patched).expect("chainbox build: write the CPython guest");
    std::fs::write(&key, &inputs).expect("chainbox build: write the CPython guest's input key");
    println!("cargo:rustc-env=CHAINBOX_CPYTHON_WASM_PATH={}", wasm.display());
}

/// Builds `hashes.rs` for wasm with the toolchain's own `rustc` (a single
/// `no_std` file: no cargo project, no dependencies) and returns the module.
fn build_hashes(source: &Path, guest_dir: &Path) -> Vec<u8> {
    ensure_target_installed();
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = guest_dir.join("cpython-hashes.wasm");
    let status = Command::new(&rustc)
        .args(["--edition", "2024", "--target", GUEST_TARGET, "--crate-type", "cdylib"])
        .args(["-C", "opt-level=3", "-C", "panic=abort", "-C", "strip=symbols"])
        .arg(source)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "chainbox build: could not run `{rustc}` to build {}: {e}",
                source.display()
            )
        });
    if !status.success() {
        panic!(
            "chainbox build: building {} for {GUEST_TARGET} failed ({status})",
            source.display()
        );
    }
    std::fs::read(&out).expect("chainbox build: read the built hashes module")
}

/// What the CPython guest is built from in `guest/cpython`: the WIT world,
/// the guest package (`src/chainbox_guest/`) and the hashes' source.
const CPYTHON_SOURCES: [&str; 3] = ["wit", "src", "hashes"];

/// What the passes over it are in `guest/build`.
const PASSES_SOURCES: [&str; 2] = ["Cargo.toml", "src"];

/// Everything the CPython guest is built from, as one key (see
/// [`inputs::build_key`]): the pinned componentize-py, then every file of
/// [`CPYTHON_SOURCES`] (in `source`) and [`PASSES_SOURCES`] (in `passes`).
fn cpython_inputs(source: &Path, passes: &Path) -> Vec<u8> {
    let roots: Vec<PathBuf> = CPYTHON_SOURCES
        .iter()
        .map(|dir| source.join(dir))
        .chain(PASSES_SOURCES.iter().map(|path| passes.join(path)))
        .collect();
    inputs::build_key(COMPONENTIZE_PY, &roots)
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
