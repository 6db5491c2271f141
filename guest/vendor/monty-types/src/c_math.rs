//! chainbox patch: the C math-library functions CPython delegates to.
//!
//! CPython's `math` module is "mostly thin wrappers around the platform C
//! math library", and `float.__pow__`, `complex`, `random` and its own
//! `gamma`/`lgamma` call the same functions. Their last bits differ between
//! libraries (glibc's `sin(6.9)` is one ulp below musl's, glibc's
//! `cbrt(3.375)` is one ulp above 1.5), and `repr` shows every bit, so an
//! interpreter that computes them with its own library gives a different
//! answer than CPython on the same machine. [`CMathFn`] names each function
//! so an embedder can have them computed by the host's C library (the
//! chainbox guest does, through one host import: `monty::set_c_math`);
//! without that, monty uses Rust's implementations.

/// One C math-library function, with a stable code for crossing a wasm
/// boundary as an integer. Unary functions ignore their second argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CMathFn {
    Sin = 0,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Pow,
    Cbrt,
    Erf,
    Erfc,
    Hypot,
}

impl CMathFn {
    /// Every function, indexed by its code.
    pub const ALL: [Self; 25] = [
        Self::Sin,
        Self::Cos,
        Self::Tan,
        Self::Asin,
        Self::Acos,
        Self::Atan,
        Self::Atan2,
        Self::Sinh,
        Self::Cosh,
        Self::Tanh,
        Self::Asinh,
        Self::Acosh,
        Self::Atanh,
        Self::Exp,
        Self::Exp2,
        Self::Expm1,
        Self::Log,
        Self::Log2,
        Self::Log10,
        Self::Log1p,
        Self::Pow,
        Self::Cbrt,
        Self::Erf,
        Self::Erfc,
        Self::Hypot,
    ];

    /// The function's code: its index in [`ALL`](Self::ALL).
    #[must_use]
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The function's C name (`log` is the natural logarithm).
    #[must_use]
    pub fn c_name(self) -> &'static str {
        match self {
            Self::Sin => "sin",
            Self::Cos => "cos",
            Self::Tan => "tan",
            Self::Asin => "asin",
            Self::Acos => "acos",
            Self::Atan => "atan",
            Self::Atan2 => "atan2",
            Self::Sinh => "sinh",
            Self::Cosh => "cosh",
            Self::Tanh => "tanh",
            Self::Asinh => "asinh",
            Self::Acosh => "acosh",
            Self::Atanh => "atanh",
            Self::Exp => "exp",
            Self::Exp2 => "exp2",
            Self::Expm1 => "expm1",
            Self::Log => "log",
            Self::Log2 => "log2",
            Self::Log10 => "log10",
            Self::Log1p => "log1p",
            Self::Pow => "pow",
            Self::Cbrt => "cbrt",
            Self::Erf => "erf",
            Self::Erfc => "erfc",
            Self::Hypot => "hypot",
        }
    }

    /// Whether the function takes two arguments (`atan2(y, x)`, `pow`, `hypot`).
    #[must_use]
    pub fn is_binary(self) -> bool {
        matches!(self, Self::Atan2 | Self::Pow | Self::Hypot)
    }
}
