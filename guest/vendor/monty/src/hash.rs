//! Single source of truth for hashing Python values.
//!
//! Defines:
//!
//! * [`HashValue`] — a verified Python hash. Construction goes through
//!   [`HashValue::from_raw`]; storing or comparing hashes anywhere in the
//!   runtime should use this type rather than a bare `u64` so the invariant
//!   is enforced by the type system.
//!
//!   Internally backed by a [`NonZero<u64>`] holding the **bit-inverse** of
//!   the raw hash. The inversion is invisible to callers (`from_raw` /
//!   `get` translate at the boundary) but means `Option<HashValue>` is
//!   niche-packed into 8 bytes — `None` is the bit pattern `0`, the inverse
//!   of the reserved `u64::MAX` sentinel.
//! * [`hash_python_str`] / [`hash_python_bytes`] / [`hash_python_long_int`]
//!   — the canonical hash functions for `str`, `bytes` and arbitrary-precision
//!   `int`. Routing every `str`/`bytes`/`int` hash through these helpers
//!   keeps the invariant "interned and heap values with equal content hash
//!   identically" local rather than scattered, since otherwise dict lookups
//!   would silently miss.
//! * [`RESERVED_STRING_HASHES`] — lazily computed hashes for the reserved ASCII
//!   single-character strings and the empty string.

use std::{
    collections::hash_map::DefaultHasher,
    fmt,
    hash::{Hash, Hasher},
    num::NonZero,
    sync::atomic::{AtomicU64, Ordering},
};

use num_bigint::BigInt;
// chainbox patch: imports for this file's patches (CHAINBOX.md)
use num_traits::ToPrimitive;

use crate::heap::HeapId;

/// A verified Python hash value.
///
/// Internally a [`NonZero<u64>`] holding the bit-inverse of the raw hash, so
/// `Option<HashValue>` niche-packs into 8 bytes. Construct via
/// [`HashValue::from_raw`]; extract via [`HashValue::get`] (both translate
/// the inversion at the boundary).
///
/// The bit-inversion is purely an implementation detail of the niche
/// packing — none of the public traits leak it. [`Hash`], [`fmt::Debug`],
/// [`serde::Serialize`] and [`serde::Deserialize`] all hand-translate to/from
/// the raw `u64` form, so:
///
/// * Composite hashes that fold a `HashValue` see the same bytes `get()`
///   returns (independent of storage layout — a future change to e.g.
///   `NonMaxU64` would leave tuple/dict hashes invariant).
/// * Debug output shows the raw hash (`HashValue(5)`, not the inverted bits).
/// * Snapshots store the raw hash, so the wire format is decoupled from the
///   niche-packing representation.
///
/// Stored in interner hash tables, returned by `Value::py_hash`, and used
/// wherever a known-good hash needs to be passed around.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct HashValue(NonZero<u64>);

impl HashValue {
    /// Wraps a freshly-computed raw hash.
    ///
    /// Bit-inverts and stores as `NonZero<u64>`. The single edge case where
    /// `!hash == 0` (i.e. raw `hash == u64::MAX`) maps to
    /// [`NonZero::<u64>::MIN`] — equivalent to bumping the raw hash by 1.
    /// Mirrors CPython's reservation of `Py_hash_t = -1`. Bias: 1 in 2^64,
    /// no impact on common hashes like `hash(0) == 0`.
    #[inline]
    #[must_use]
    pub const fn new(hash: u64) -> Self {
        Self(match NonZero::new(!hash) {
            Some(nz) => nz,
            None => NonZero::<u64>::MIN,
        })
    }

    /// Returns the underlying `u64` for use in modulo arithmetic, hashbrown
    /// indexing, and other places that need a bare hash.
    #[inline]
    #[must_use]
    pub const fn raw(self) -> u64 {
        !self.0.get()
    }
}

impl Hash for HashValue {
    /// Folds the raw hash (not the stored, inverted form) so that
    /// composite hashes are independent of the niche-packing representation.
    /// Without this, a future change to the internal layout would silently
    /// alter every tuple / namedtuple / dataclass hash.
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.raw().hash(state);
    }
}

impl fmt::Debug for HashValue {
    /// Prints the raw hash, not the stored bit-inverted form, so debugging
    /// output matches `get()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HashValue").field(&self.raw()).finish()
    }
}

impl serde::Serialize for HashValue {
    /// Emits the raw hash so the wire format is decoupled from the
    /// niche-packing representation.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for HashValue {
    /// Reads a raw `u64` and reconstructs via [`HashValue::from_raw`], so
    /// even a pathological wire value of `u64::MAX` is handled by the same
    /// sentinel-collision path as fresh hashes.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::new(u64::deserialize(deserializer)?))
    }
}

// chainbox patch: the numeric hashes below are CPython's on a 64-bit build
// (Python/pyhash.c, Objects/longobject.c, Objects/tupleobject.c), not
// upstream's own. A set iterates in the order its elements' hashes place
// them, and `hash()` is visible to scripts, so any other hash gives a
// different answer than CPython for `list({(1, 2), (0, 5)})` or
// `hash(2**70)`. Strings and bytes keep monty's hash: CPython randomises
// theirs per process, so no order over them is CPython's own.

/// `_PyHASH_BITS`: numeric hashes are reduced modulo the Mersenne prime `2**61 - 1`.
const HASH_BITS: u32 = 61;
/// `_PyHASH_MODULUS`, `2**61 - 1`.
pub(crate) const HASH_MODULUS: u64 = (1 << HASH_BITS) - 1;
/// `_PyHASH_INF`: `hash(float('inf'))`.
const HASH_INF: u64 = 314_159;

/// `hash(n)` for an `int` that fits in `i64`: `n` itself below the modulus,
/// reduced modulo `2**61 - 1` (keeping the sign) above it; `-1` becomes `-2`
/// through [`HashValue::new`].
#[inline]
pub(crate) fn hash_i64(i: i64) -> HashValue {
    let magnitude = i.unsigned_abs();
    let reduced = if magnitude < HASH_MODULUS {
        magnitude
    } else {
        magnitude % HASH_MODULUS
    };
    HashValue::new(if i < 0 { reduced.wrapping_neg() } else { reduced })
}

/// `hash(None)`: a constant since CPython 3.12 (`0xFCA86420`).
pub(crate) const fn hash_none() -> HashValue {
    HashValue::new(0xFCA8_6420)
}

/// Hashes a float as CPython's `_Py_HashDouble`: the value modulo
/// `2**61 - 1`, so an integral value hashes like the equal `int`
/// (`hash(1.0) == hash(1)`) and `hash(0.5)` is `2**60`. A NaN hashes as 0
/// (CPython hashes a NaN by its address, which a script cannot predict).
pub(crate) fn hash_f64(f: f64) -> HashValue {
    if f.is_infinite() {
        return HashValue::new(if f > 0.0 { HASH_INF } else { HASH_INF.wrapping_neg() });
    }
    if f.is_nan() {
        return HashValue::new(0);
    }
    let (mut m, mut e) = frexp(f);
    let negative = m < 0.0;
    if negative {
        m = -m;
    }
    // Process 28 bits at a time, as CPython does.
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & HASH_MODULUS) | (x >> (HASH_BITS - 28));
        m *= 268_435_456.0; // 2**28
        e -= 28;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "m is in [0, 2**28)"
        )]
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= HASH_MODULUS {
            x -= HASH_MODULUS;
        }
    }
    // Reduce the exponent modulo HASH_BITS, then rotate by it.
    let bits = HASH_BITS.cast_signed();
    let e = if e >= 0 { e % bits } else { bits - 1 - ((-1 - e) % bits) }.cast_unsigned();
    x = ((x << e) & HASH_MODULUS) | (x >> (HASH_BITS - e));
    HashValue::new(if negative { x.wrapping_neg() } else { x })
}

/// `frexp`: `f == m * 2**e` with `0.5 <= |m| < 1` (both 0 for 0), for finite `f`.
fn frexp(f: f64) -> (f64, i32) {
    if f == 0.0 {
        return (f, 0);
    }
    let bits = f.to_bits();
    #[expect(clippy::cast_possible_truncation, reason = "the exponent field is 11 bits")]
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    if exponent == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(f * 18_014_398_509_481_984.0); // 2**54
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exponent - 1022)
}

/// CPython's tuple hash (xxHash-based, `tuplehash` in Objects/tupleobject.c),
/// fed one element hash at a time. Also the hash of a named tuple, a frozen
/// dataclass (the tuple of its fields), a `range` and a `timedelta`.
pub(crate) struct TupleHasher {
    acc: u64,
    len: u64,
}

const XXPRIME_1: u64 = 11_400_714_785_074_694_791;
const XXPRIME_2: u64 = 14_029_467_366_897_019_727;
const XXPRIME_5: u64 = 2_870_177_450_012_600_261;

impl TupleHasher {
    pub(crate) const fn new() -> Self {
        Self { acc: XXPRIME_5, len: 0 }
    }

    /// Folds in the next element's hash.
    pub(crate) fn add(&mut self, lane: HashValue) {
        self.acc = self.acc.wrapping_add(lane.raw().wrapping_mul(XXPRIME_2));
        self.acc = self.acc.rotate_left(31);
        self.acc = self.acc.wrapping_mul(XXPRIME_1);
        self.len += 1;
    }

    pub(crate) fn finish(self) -> HashValue {
        let acc = self.acc.wrapping_add(self.len ^ (XXPRIME_5 ^ 3_527_539));
        HashValue::new(if acc == u64::MAX { 1_546_275_796 } else { acc })
    }
}

/// The hash of a tuple of the given element hashes.
pub(crate) fn hash_tuple_of(lanes: impl IntoIterator<Item = HashValue>) -> HashValue {
    let mut hasher = TupleHasher::new();
    for lane in lanes {
        hasher.add(lane);
    }
    hasher.finish()
}

/// CPython's `frozenset` hash over its members' hashes (`frozenset_hash` in
/// Objects/setobject.c): order-independent, so any order of the same members
/// gives it.
pub(crate) fn hash_frozenset_of(member_hashes: impl IntoIterator<Item = u64>) -> HashValue {
    fn shuffle_bits(h: u64) -> u64 {
        ((h ^ 89_869_747) ^ (h << 16)).wrapping_mul(3_644_798_167)
    }
    let mut hash: u64 = 0;
    let mut len: u64 = 0;
    for h in member_hashes {
        hash ^= shuffle_bits(h);
        len += 1;
    }
    hash ^= (len + 1).wrapping_mul(1_927_868_237);
    hash ^= (hash >> 11) ^ (hash >> 25);
    hash = hash.wrapping_mul(69_069).wrapping_add(907_133_923);
    HashValue::new(if hash == u64::MAX { 590_923_713 } else { hash })
}

/// Hashes any `Hash` value with a fresh [`DefaultHasher`].
///
/// Keeps the hasher boilerplate in one place for the cold `Value::py_hash` arms
/// (functions, named builtins, heap identities), so the hot arms (int/str/ref)
/// never pay for constructing a hasher they don't use.
#[inline]
pub(crate) fn hash_one(value: impl Hash) -> HashValue {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    HashValue::new(hasher.finish())
}

/// Hashes a heap value by its identity (`HeapId`).
///
/// The canonical hash for objects that compare by identity — user classes,
/// instances, bound methods, and cells (CPython's default for objects without
/// a user `__hash__`). Keeps the `DefaultHasher` boilerplate in one place.
#[inline]
pub(crate) fn identity_hash(id: HeapId) -> HashValue {
    hash_one(id)
}

/// Hashes a value with no heap identity (a builtin, type, marker or singleton)
/// by its stable name. Dict and set entries persist their hash in dumps, so a
/// hash tied to an enum's declaration order would break lookups in older dumps
/// once a variant is inserted. `kind` keeps `int` apart from the string `'int'`.
pub(crate) fn hash_named(kind: &'static str, name: &str) -> HashValue {
    hash_one((kind, name))
}

/// Hashes a string using the canonical Python-string hash function.
///
/// Both heap-allocated `Str` values and interned strings must use this so
/// that an interned `"foo"` and a heap `"foo"` hash identically — required
/// for dict-key consistency.
#[inline]
pub(crate) fn hash_python_str(s: &str) -> HashValue {
    // chainbox patch: CPython's `_Py_HashBytes` gives the empty string 0
    // whatever the process's seed, so `{'', 1}` has a fixed order there.
    if s.is_empty() {
        return HashValue::new(0);
    }
    let mut hasher = DefaultHasher::new();
    s.hash(&mut hasher);
    HashValue::new(hasher.finish())
}

/// Hashes a bytes value using the canonical Python-bytes hash function.
///
/// Counterpart to [`hash_python_str`] for `bytes`. Used by both heap `Bytes`
/// and the interned bytes table.
#[inline]
pub(crate) fn hash_python_bytes(b: &[u8]) -> HashValue {
    // chainbox patch (CHAINBOX.md)
    if b.is_empty() {
        return HashValue::new(0);
    }
    let mut hasher = DefaultHasher::new();
    b.hash(&mut hasher);
    HashValue::new(hasher.finish())
}

/// Hashes a `BigInt` as CPython hashes an `int`: its value modulo `2**61 - 1`,
/// keeping the sign (see [`hash_i64`]).
///
/// Used by heap `LongInt::py_hash` and by `Interns::long_int_hash` so that
/// interned and heap-allocated long ints with equal value hash identically.
#[inline]
pub(crate) fn hash_python_long_int(bi: &BigInt) -> HashValue {
    if let Some(i) = bi.to_i64() {
        return hash_i64(i);
    }
    let reduced = (bi.magnitude() % HASH_MODULUS)
        .to_u64()
        .expect("a value below the modulus fits in u64");
    HashValue::new(if bi.sign() == num_bigint::Sign::Minus {
        reduced.wrapping_neg()
    } else {
        reduced
    })
}

/// A value paired with its precomputed Python [`HashValue`].
///
/// Used in the interner storage so each entry carries its own hash next to
/// the value — push-the-pair instead of parallel arrays. This makes it
/// impossible to forget to keep the value and hash in sync, and makes
/// serde recompute-on-deserialise local to this type.
///
/// Constructors, `SerializeHashed` and `Deserialize` impls are provided for
/// each concrete value type used by the interners. Adding another requires a
/// constructor and both serde halves.
///
/// # Wire format
///
/// `Serialize` writes only the value (the hash is recomputable): text and
/// big integers as `T`'s own serialised form, `Vec<u8>` as a byte string via
/// `serde_bytes`, chosen by the private `SerializeHashed` trait. `Deserialize`
/// reads the same form and rebuilds the hash via the appropriate
/// `hash_python_*` helper, so round-tripping through serde is lossless and any
/// deserialiser-supplied bytes always produce a hash consistent with the
/// canonical helpers.
#[derive(Debug, Clone)]
pub(crate) struct WithHash<T> {
    value: T,
    hash: HashValue,
}

impl<T> WithHash<T> {
    /// Borrow the wrapped value.
    #[inline]
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The precomputed [`HashValue`].
    #[inline]
    pub fn hash(&self) -> HashValue {
        self.hash
    }
}

impl<T: AsRef<str>> WithHash<T> {
    /// Caches the Python hash for owned or borrowed string storage.
    #[inline]
    pub fn for_str(value: T) -> Self {
        let hash = hash_python_str(value.as_ref());
        Self { value, hash }
    }
}

impl WithHash<Vec<u8>> {
    /// Construct from an owned `Vec<u8>`, hashing via [`hash_python_bytes`].
    #[inline]
    pub fn for_bytes(value: Vec<u8>) -> Self {
        let hash = hash_python_bytes(&value);
        Self { value, hash }
    }
}

impl WithHash<BigInt> {
    /// Construct from an owned `BigInt`, hashing via [`hash_python_long_int`].
    #[inline]
    pub fn for_long_int(value: BigInt) -> Self {
        let hash = hash_python_long_int(&value);
        Self { value, hash }
    }
}

// `Serialize` emits just the inner value. The hash is recomputable from the
// value during deserialisation, so we don't waste bytes encoding it (and we
// don't risk locking the snapshot format to the current hash function).
impl<T: SerializeHashed> serde::Serialize for WithHash<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize_hashed(serializer)
    }
}

/// How a hashed value is written: byte payloads go out as a byte string rather
/// than one integer per byte, everything else as itself.
trait SerializeHashed {
    fn serialize_hashed<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

impl SerializeHashed for Vec<u8> {
    fn serialize_hashed<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_bytes::serialize(self, serializer)
    }
}

/// Text and big integers already have the right serde form.
macro_rules! serialize_hashed_as_self {
    ($($ty:ty),*) => {$(
        impl SerializeHashed for $ty {
            fn serialize_hashed<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(self, serializer)
            }
        }
    )*};
}

serialize_hashed_as_self!(String, Box<str>, BigInt);

// `Deserialize` is hand-written per concrete `T` so the right
// `hash_python_*` helper is invoked.
impl<'de> serde::Deserialize<'de> for WithHash<String> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::for_str(String::deserialize(deserializer)?))
    }
}

impl<'de> serde::Deserialize<'de> for WithHash<Box<str>> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::for_str(Box::<str>::deserialize(deserializer)?))
    }
}

impl<'de> serde::Deserialize<'de> for WithHash<Vec<u8>> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::for_bytes(serde_bytes::deserialize(deserializer)?))
    }
}

impl<'de> serde::Deserialize<'de> for WithHash<BigInt> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::for_long_int(BigInt::deserialize(deserializer)?))
    }
}

/// Per-slot lazy `static` hash table.
///
/// `[AtomicU64; N]` storing the inner bits of [`HashValue`] (i.e. the
/// bit-inverted raw hash). `0` is the "uncomputed" sentinel — naturally
/// equivalent to [`Option<HashValue>`]'s `None` since `HashValue`'s niche
/// is exactly `0`.
///
/// On the first access of slot `i` the closure is invoked, the result is
/// stored, and subsequent accesses return it directly. Two threads racing
/// to fill the same slot is benign: they compute the same value and one
/// wins the store; the other's store overwrites with the same bits.
///
/// Used for the reserved ASCII and empty-string hash table.
/// `Cell<Option<HashValue>>` would be the equivalent for non-`static` /
/// per-instance use (Phase 2's per-type heap caches).
pub(crate) struct LazyHashTable<const N: usize> {
    cells: [AtomicU64; N],
}

impl<const N: usize> LazyHashTable<N> {
    /// Construct an empty table — every slot starts uncomputed (`0`).
    pub const fn new() -> Self {
        Self {
            cells: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Returns the cached [`HashValue`] for `index`, or computes and stores it.
    ///
    /// `Ordering::Relaxed` suffices: the only invariant is "any non-zero
    /// value observed is a valid `HashValue`'s inner bits" — true by
    /// construction since we only store `HashValue::0.get()` (which is
    /// guaranteed non-zero by `NonZero<u64>`).
    #[inline]
    pub fn get_or_compute(&self, index: usize, compute: impl FnOnce() -> HashValue) -> HashValue {
        if let Some(stored) = NonZero::new(self.cells[index].load(Ordering::Relaxed)) {
            HashValue(stored)
        } else {
            let h = compute();
            self.cells[index].store(h.0.get(), Ordering::Relaxed);
            h
        }
    }
}

/// Per-slot lazy hashes for ASCII IDs 0–127 and the empty-string ID 128.
/// Each slot hashes the matching entry of [`crate::intern::RESERVED_STRS`].
pub(crate) static RESERVED_STRING_HASHES: LazyHashTable<129> = LazyHashTable::new();
