"""The guest/host contract's constants the CPython guest shares with the
monty guest and the host, generated from `guest/protocol/src/lib.rs`.

Do not edit: `guest/protocol/tests/cpython_guest.rs` checks this file
against the constants, and rewrites it when run with CHAINBOX_BLESS=1:

    CHAINBOX_BLESS=1 cargo test -p chainbox-protocol
"""

# guest/protocol `PROTOCOL_VERSION`
PROTOCOL_VERSION = 6

# guest/protocol `WORKSPACE`
WORKSPACE = "/workspace"

# guest/protocol `MAX_VALUE_DEPTH`
MAX_VALUE_DEPTH = 128

# guest/protocol `LOAD_ARTIFACT_FN`
LOAD_ARTIFACT_FN = "load_artifact"

# guest/protocol `imports::C_MATH_FUNCTIONS`
C_MATH_FUNCTIONS = (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "cbrt", "erf", "erfc",
    "hypot",
)
