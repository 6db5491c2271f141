//! A chain's randomness: the one generator behind its WASI context's secure
//! random functions, which is where every guest reads entropy. The monty
//! guest's `random` seeds itself with `getrandom` (WASI `random_get`); the
//! CPython guest's `os.urandom`, and with it `random`'s seed,
//! `random.Random()`, `uuid.uuid4`, `secrets` and `tempfile`'s names, reads
//! `wasi:random/random`. The insecure interfaces keep wasmtime-wasi's
//! defaults: neither guest imports them
//! (`tests::neither_guest_imports_the_insecure_random_interfaces`).
//!
//! The generator is ChaCha20, keyed per chain when its instance is ready
//! ([`Entropy::start`]): from the chain's seed (`RunOptions::seed`), so a
//! replay of the chain draws the same bytes in the same order, or from the
//! OS. A spare instance is made before its chain is known, so its WASI
//! context holds a [`Source`] that its chain restarts; what the spare drew
//! before (its own start-up, a CPython spare's warm-up run) is no part of
//! the chain's stream.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rand::SeedableRng;
use rand::rngs::ChaCha20Rng;
use rand::{TryCryptoRng, TryRng};
use sha2::{Digest, Sha256};

/// Labels the key derivation, so a chain's key is no other use's SHA-256 of
/// the same eight bytes.
const KEY_LABEL: &[u8] = b"chainbox chain seed v1\0";

/// The store's handle on its WASI context's [`Source`]: restarts it for the
/// chain.
#[derive(Clone)]
pub(crate) struct Entropy(Arc<Restart>);

/// The generator a [`Source`] takes up at its next draw, and how many times
/// one was given (the source compares it with the last it took up).
struct Restart {
    generator: Mutex<Option<ChaCha20Rng>>,
    restarts: AtomicU64,
}

/// What the WASI context draws from: its own generator, replaced by the
/// one [`Entropy::start`] gave at the first draw after it. wasmtime-wasi
/// draws one `u32` per random byte, so a draw costs an atomic load, not a
/// lock.
pub(crate) struct Source {
    generator: ChaCha20Rng,
    restarts: u64,
    restart: Arc<Restart>,
}

impl Entropy {
    /// A generator keyed from the OS, for a store until its chain starts
    /// it, and the source its WASI context draws from.
    pub(crate) fn new() -> (Entropy, Source) {
        let restart = Arc::new(Restart {
            generator: Mutex::new(None),
            restarts: AtomicU64::new(0),
        });
        let source = Source {
            generator: generator(None),
            restarts: 0,
            restart: Arc::clone(&restart),
        };
        (Entropy(restart), source)
    }

    /// Restarts the source for a chain: keyed from `seed`, so the chain
    /// draws the same stream every time it runs with it, or from the OS.
    pub(crate) fn start(&self, seed: Option<u64>) {
        // No code that can panic runs under the lock: a poisoned one holds
        // a whole generator.
        *self.0.generator.lock().unwrap_or_else(PoisonError::into_inner) = Some(generator(seed));
        self.0.restarts.fetch_add(1, Ordering::Release);
    }
}

impl Source {
    /// The generator to draw from: the restarted one, if there was a
    /// restart since the last draw.
    fn current(&mut self) -> &mut ChaCha20Rng {
        let restarts = self.restart.restarts.load(Ordering::Acquire);
        if restarts != self.restarts {
            let given = self
                .restart
                .generator
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(given) = given {
                self.generator = given;
            }
            self.restarts = restarts;
        }
        &mut self.generator
    }
}

/// ChaCha20 keyed from `seed`, or from the OS (through rand's thread
/// generator, as wasmtime-wasi's own default is).
fn generator(seed: Option<u64>) -> ChaCha20Rng {
    match seed {
        Some(seed) => ChaCha20Rng::from_seed(key_of(seed)),
        None => ChaCha20Rng::from_rng(&mut rand::rng()),
    }
}

/// The ChaCha20 key of `seed`: the SHA-256 of a label and its eight
/// little-endian bytes. Spelled out rather than rand's `seed_from_u64`,
/// whose expansion a rand release may change: a seed kept in a journal must
/// give the same stream under a later build of the host.
fn key_of(seed: u64) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(KEY_LABEL);
    hash.update(seed.to_le_bytes());
    hash.finalize().into()
}

impl TryRng for Source {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.current().try_next_u32()
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.current().try_next_u64()
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.current().try_fill_bytes(dst)
    }
}

impl TryCryptoRng for Source {}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    fn draw(source: &mut Source) -> [u8; 32] {
        let mut bytes = [0; 32];
        source.fill_bytes(&mut bytes);
        bytes
    }

    #[test]
    fn a_seed_gives_the_same_stream_every_time_it_starts() {
        let (entropy, mut source) = Entropy::new();
        let before = draw(&mut source);
        entropy.start(Some(7));
        let first = (draw(&mut source), draw(&mut source));
        entropy.start(Some(7));
        assert_eq!((draw(&mut source), draw(&mut source)), first);
        assert_ne!(first.0, first.1);
        assert_ne!(before, first.0);
    }

    /// What a source drew before its chain started it (a spare's start-up
    /// and warm-up) moves the chain's stream on by nothing.
    #[test]
    fn a_started_source_draws_its_seeds_stream_from_the_start_whatever_it_drew_before() {
        let (entropy, mut fresh) = Entropy::new();
        entropy.start(Some(7));
        let expected = draw(&mut fresh);
        let (entropy, mut spare) = Entropy::new();
        for _ in 0..100 {
            draw(&mut spare);
        }
        entropy.start(Some(7));
        assert_eq!(draw(&mut spare), expected);
    }

    #[test]
    fn other_seeds_and_no_seed_give_other_streams() {
        let (entropy, mut source) = Entropy::new();
        let mut seen = Vec::new();
        for seed in [Some(7), Some(8), None, None] {
            entropy.start(seed);
            seen.push(draw(&mut source));
        }
        for (i, a) in seen.iter().enumerate() {
            assert!(seen[i + 1..].iter().all(|b| a != b), "{seen:?}");
        }
    }

    /// The stream of a seed is fixed: a journal's seed must give the same
    /// values under a later build of the host (a change here breaks the
    /// journals stored before it). Seed 0: the key is the SHA-256 of
    /// `chainbox chain seed v1\0` and eight zero bytes, `30cf72a5…`; the
    /// stream is its ChaCha20 keystream (RFC 8439, nonce and counter 0).
    #[test]
    fn the_stream_of_a_seed_is_the_chacha20_keystream_of_its_labelled_sha256() {
        assert_eq!(
            hex(&key_of(0)),
            "30cf72a51c0fe573664bd2a75463e3e4fe42427f2c72635bbad4e0e9824f06e6"
        );
        let (entropy, mut source) = Entropy::new();
        entropy.start(Some(0));
        assert_eq!(hex(&draw(&mut source)[..16]), "ddde9978525ef93446aa3a9c840425e1");
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The insecure interfaces keep wasmtime-wasi's generators, keyed from
    /// the OS when a spare's WASI context is built, before its chain is
    /// known: no guest may read them.
    #[test]
    fn neither_guest_imports_the_insecure_random_interfaces() {
        let component = crate::guests::CPYTHON_WASM;
        for (name, guest) in [("monty", crate::guests::GUEST_WASM), ("cpython", component)] {
            assert!(
                !guest.windows(b"random/insecure".len()).any(|w| w == b"random/insecure"),
                "the {name} guest imports wasi:random/insecure*"
            );
        }
        assert!(
            component
                .windows(b"wasi:random/random".len())
                .any(|w| w == b"wasi:random/random")
        );
    }
}
