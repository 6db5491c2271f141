//! Why a build pass over the CPython guest failed: one error for the
//! crate's public functions, saying which pass refused the guest and what
//! it found (build.rs prints it and stops the build).

use std::convert::Infallible;

use wasm_encoder::reencode;

use crate::hashes::HashesError;
use crate::immortal::ImmortalError;
use crate::interrupt::checks::InterruptError;

/// Why a pass over the CPython guest (or the module re-encoding both use,
/// [`crate::component`]) failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The wasm could not be parsed.
    #[error("reading wasm: {0}")]
    Read(#[from] wasmparser::BinaryReaderError),
    /// Parsed wasm could not be written back (wasm-encoder's re-encoder
    /// refused it).
    #[error("re-encoding wasm: {0}")]
    Reencode(reencode::Error),
    /// A component's core module section is not encoded as
    /// [`crate::component::replace_modules`] expects.
    #[error("unexpected encoding of the core module section at byte {offset}")]
    ModuleSection {
        /// Where the module's bytes start in the component.
        offset: usize,
    },
    /// The hash splice ([`crate::hashes`]) found libpython or `hashes.wasm`
    /// other than it expects.
    #[error(transparent)]
    Hashes(#[from] HashesError),
    /// The interruption points pass ([`crate::interrupt::checks`]) found a
    /// module other than it expects.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    /// The immortal pass ([`crate::immortal`]) found no valid list of the
    /// snapshot's objects, or one it could not follow.
    #[error(transparent)]
    Immortal(#[from] ImmortalError),
}

impl From<Infallible> for Error {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// A re-encoder's error: a parse error is [`Error::Read`], a pass's own
/// (`UserError`) is that pass's, the rest are [`Error::Reencode`].
impl<E> From<reencode::Error<E>> for Error
where
    Error: From<E>,
{
    fn from(e: reencode::Error<E>) -> Self {
        use reencode::Error as R;
        let other = match e {
            R::ParseError(e) => return Error::Read(e),
            R::UserError(e) => return Error::from(e),
            R::CanonicalizedHeapTypeReference => R::CanonicalizedHeapTypeReference,
            R::InvalidConstExpr => R::InvalidConstExpr,
            R::InvalidCodeSectionSize => R::InvalidCodeSectionSize,
            R::UnexpectedNonCoreModuleSection => R::UnexpectedNonCoreModuleSection,
            R::UnexpectedNonComponentSection => R::UnexpectedNonComponentSection,
            R::UnsupportedCoreTypeInComponent => R::UnsupportedCoreTypeInComponent,
        };
        Error::Reencode(other)
    }
}
