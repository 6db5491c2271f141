//! chainbox patch: the C math-library functions, computed where the embedder
//! says (see `monty_types::CMathFn` for why this matters to answers).
//!
//! Every float result CPython takes from its C library goes through here:
//! the `math` module, `float ** float`, `complex`'s `abs`/`**`, `random`'s
//! distributions and the ports of CPython's own `gamma`/`lgamma`. The chainbox
//! guest installs a hook that asks the host, so answers equal native
//! CPython's on the host bit for bit; without a hook, Rust's implementations.

use std::sync::OnceLock;

use monty_types::CMathFn;

/// Computes one C math function: `f(x)`, or `f(x, y)` for binary ones.
pub type CMathHook = fn(CMathFn, f64, f64) -> f64;

static HOOK: OnceLock<CMathHook> = OnceLock::new();

/// Installs the function that computes [`CMathFn`]s for every later run in
/// this process; returns `false` (and changes nothing) if one was set already.
pub fn set_c_math(hook: CMathHook) -> bool {
    HOOK.set(hook).is_ok()
}

fn call(f: CMathFn, x: f64, y: f64) -> f64 {
    match HOOK.get() {
        Some(hook) => hook(f, x, y),
        None => rust(f, x, y),
    }
}

/// Rust's implementation of `f`, used when no hook is set.
fn rust(f: CMathFn, x: f64, y: f64) -> f64 {
    match f {
        CMathFn::Sin => x.sin(),
        CMathFn::Cos => x.cos(),
        CMathFn::Tan => x.tan(),
        CMathFn::Asin => x.asin(),
        CMathFn::Acos => x.acos(),
        CMathFn::Atan => x.atan(),
        CMathFn::Atan2 => x.atan2(y),
        CMathFn::Sinh => x.sinh(),
        CMathFn::Cosh => x.cosh(),
        CMathFn::Tanh => x.tanh(),
        CMathFn::Asinh => x.asinh(),
        CMathFn::Acosh => x.acosh(),
        CMathFn::Atanh => x.atanh(),
        CMathFn::Exp => x.exp(),
        CMathFn::Exp2 => x.exp2(),
        CMathFn::Expm1 => x.exp_m1(),
        CMathFn::Log => x.ln(),
        CMathFn::Log2 => x.log2(),
        CMathFn::Log10 => x.log10(),
        CMathFn::Log1p => x.ln_1p(),
        CMathFn::Pow => x.powf(y),
        CMathFn::Cbrt => x.cbrt(),
        CMathFn::Erf => libm::erf(x),
        CMathFn::Erfc => libm::erfc(x),
        CMathFn::Hypot => x.hypot(y),
    }
}

macro_rules! unary {
    ($($name:ident => $f:ident),* $(,)?) => {$(
        #[doc = concat!("C's `", stringify!($name), "(x)`.")]
        pub(crate) fn $name(x: f64) -> f64 {
            call(CMathFn::$f, x, 0.0)
        }
    )*};
}

unary! {
    sin => Sin, cos => Cos, tan => Tan, asin => Asin, acos => Acos, atan => Atan,
    sinh => Sinh, cosh => Cosh, tanh => Tanh, asinh => Asinh, acosh => Acosh, atanh => Atanh,
    exp => Exp, exp2 => Exp2, expm1 => Expm1, log => Log, log2 => Log2, log10 => Log10,
    log1p => Log1p, cbrt => Cbrt, erf => Erf, erfc => Erfc,
}

/// C's `atan2(y, x)`.
pub(crate) fn atan2(y: f64, x: f64) -> f64 {
    call(CMathFn::Atan2, y, x)
}

/// C's `pow(x, y)`.
pub(crate) fn pow(x: f64, y: f64) -> f64 {
    call(CMathFn::Pow, x, y)
}

/// C's `hypot(x, y)`.
pub(crate) fn hypot(x: f64, y: f64) -> f64 {
    call(CMathFn::Hypot, x, y)
}
