//! The C math library both guests compute their transcendental functions
//! with: the host's own, the one native CPython on this machine calls.
//!
//! CPython's `math.sin`, `float ** float`, `random.gauss` and the rest take
//! their last bits from the platform's C library, and those bits differ
//! between libraries (wasi-libc's musl code and glibc disagree on 1–10 % of
//! `sin`/`cos`/`atan2`/`tanh` arguments, and on half the `cbrt`s), so a guest
//! computing them itself gives a different `repr` than CPython. The guests
//! ask the host instead (`chainbox_protocol::imports::C_MATH`).
//!
//! The functions are looked up by name in the process's C library rather
//! than declared `extern`, because Rust's `compiler-builtins` defines some
//! of them itself (`cbrt`, correctly rounded where glibc's is not) and a
//! static definition wins the link.

use std::sync::OnceLock;

use chainbox_protocol::imports::{C_MATH_BINARY, C_MATH_FUNCTIONS};

type Unary = unsafe extern "C" fn(f64) -> f64;
type Binary = unsafe extern "C" fn(f64, f64) -> f64;

/// One function found in the C library, by arity.
#[derive(Clone, Copy)]
enum Found {
    Unary(Unary),
    Binary(Binary),
}

/// `C_MATH_FUNCTIONS[code]` of `x` (and `y`, for the binary ones) as the
/// host's C library computes it; `None` for an unknown code.
pub(crate) fn eval(code: u32, x: f64, y: f64) -> Option<f64> {
    static TABLE: OnceLock<Vec<Option<Found>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| C_MATH_FUNCTIONS.iter().map(|name| lookup(name)).collect());
    let name = C_MATH_FUNCTIONS.get(usize::try_from(code).ok()?)?;
    Some(match table.get(code as usize).copied().flatten() {
        // SAFETY: the symbol is the C library's function of this name, whose
        // C signature is `double f(double)`, or `double f(double, double)`
        // for the `C_MATH_BINARY` ones; it has no preconditions.
        Some(Found::Unary(g)) => unsafe { g(x) },
        Some(Found::Binary(g)) => unsafe { g(x, y) },
        None => rust(name, x, y),
    })
}

#[cfg(unix)]
fn lookup(name: &str) -> Option<Found> {
    let c_name = std::ffi::CString::new(name).ok()?;
    // SAFETY: `dlsym` with `RTLD_DEFAULT` only reads the NUL-terminated name.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c_name.as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    // SAFETY: see `eval`: the symbol is the C function of that name and arity.
    Some(unsafe {
        if C_MATH_BINARY.contains(&name) {
            Found::Binary(std::mem::transmute::<*mut libc::c_void, Binary>(symbol))
        } else {
            Found::Unary(std::mem::transmute::<*mut libc::c_void, Unary>(symbol))
        }
    })
}

#[cfg(not(unix))]
fn lookup(_: &str) -> Option<Found> {
    None
}

/// Rust's implementation, for a platform whose C library cannot be searched.
fn rust(name: &str, x: f64, y: f64) -> f64 {
    match name {
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "atan2" => x.atan2(y),
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "asinh" => x.asinh(),
        "acosh" => x.acosh(),
        "atanh" => x.atanh(),
        "exp" => x.exp(),
        "exp2" => x.exp2(),
        "expm1" => x.exp_m1(),
        "log" => x.ln(),
        "log2" => x.log2(),
        "log10" => x.log10(),
        "log1p" => x.ln_1p(),
        "pow" => x.powf(y),
        "cbrt" => x.cbrt(),
        "hypot" => x.hypot(y),
        // SAFETY: C99's `double erf(double)`/`erfc`, in every C library;
        // Rust's standard library has no stable equivalent.
        "erf" => unsafe { erf(x) },
        "erfc" => unsafe { erfc(x) },
        _ => f64::NAN,
    }
}

unsafe extern "C" {
    fn erf(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_is_found_in_the_c_library() {
        for name in C_MATH_FUNCTIONS {
            assert!(lookup(name).is_some(), "{name} not found");
        }
    }

    #[test]
    fn cbrt_is_the_c_librarys_not_compiler_builtins() {
        // glibc's cbrt(3.375) is one ulp above 1.5 (CPython on Linux says
        // 1.5000000000000002); compiler-builtins' is exactly 1.5.
        let code = C_MATH_FUNCTIONS.iter().position(|&n| n == "cbrt").unwrap() as u32;
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        if glibc {
            assert_eq!(eval(code, 3.375, 0.0), Some(1.5000000000000002));
        }
    }

    #[test]
    fn an_unknown_code_is_none() {
        assert_eq!(eval(C_MATH_FUNCTIONS.len() as u32, 1.0, 1.0), None);
    }
}
