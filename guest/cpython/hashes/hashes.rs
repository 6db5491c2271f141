//! 64-bit CPython's numeric hashes, spliced into the CPython guest's
//! libpython (see `patch.rs`, which the build runs on the component).
//!
//! The guest's CPython is a wasm32 build: `Py_hash_t` is 32 bits, numbers
//! are hashed modulo 2**31 - 1 and tuples and frozensets are mixed with
//! 32-bit constants. Python's `hash()` is patched in Python, but sets order their
//! members by the interpreter's own hashes, so a script's `{(1, 2), (3, 4)}`,
//! `{0.5, 1.5}` or `{10**12, 3 * 10**12}` listed its members in another
//! order than 64-bit CPython (and monty). These functions compute the 64-bit
//! hash; the patched slots keep its low 32 bits (a set's first probe and
//! its order are the hash's low bits) and leave the whole hash where
//! `object_hash` finds it, so a tuple mixes its items' full 64-bit hashes.
//!
//! (`Fraction.__hash__` is Python: the guest module gives `fractions` the
//! 64-bit modulus.)
//!
//! Built with `rustc --target wasm32-wasip1 --crate-type cdylib`: no data,
//! no globals, no stack, so the functions can be copied into another module
//! whose memory 0 is the interpreter's. Layouts are CPython 3.14's on wasm32.

#![no_std]

/// `_PyHASH_BITS` and `_PyHASH_MODULUS` of 64-bit CPython.
const BITS: u32 = 61;
const MODULUS: u64 = (1 << BITS) - 1;
/// `_PyHASH_INF` and `_PyHASH_IMAG`.
const INF: i64 = 314_159;
const IMAG: u64 = 1_000_003;
/// `PyLong_SHIFT`: the guest's ints have 30-bit digits (`sys.int_info`).
const DIGIT_BITS: u32 = 30;
/// `_PyTuple_HASH_XXPRIME_*` of 64-bit CPython.
const XXPRIME_1: u64 = 11400714785074694791;
const XXPRIME_2: u64 = 14029467366897019727;
const XXPRIME_5: u64 = 2870177450012600261;

#[link(wasm_import_module = "chainbox")]
unsafe extern "C" {
    /// `PyObject_Hash(object)`: the 64-bit hash a patched function computed,
    /// or the 32-bit one sign-extended; -1 is an error.
    fn object_hash(object: u32) -> i64;
    /// The 32-bit slot value of a 64-bit hash (its low bits; a low half of -1,
    /// the error value, is 2**31 - 1), keeping the hash for `object_hash`.
    fn narrow(hash: i64) -> i32;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// The `u32` at `address` of the interpreter's memory.
unsafe fn word(address: u32) -> u32 {
    unsafe { core::ptr::read(address as usize as *const u32) }
}

/// The `f64` at `address` of the interpreter's memory.
unsafe fn double(address: u32) -> f64 {
    unsafe { core::ptr::read(address as usize as *const f64) }
}

/// -1 is every slot's error value: a hash of -1 is -2 in CPython.
fn not_error(hash: i64) -> i64 {
    if hash == -1 { -2 } else { hash }
}

/// `long_hash` (Objects/longobject.c): `lv_tag` at 8 (digit count << 3,
/// sign in the low two bits: 0 positive, 1 zero, 2 negative), digits at 12.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_long_hash(int: u32) -> i32 {
    let tag = unsafe { word(int + 8) };
    let digits = tag >> 3;
    let sign = 1 - (tag & 3) as i64;
    if digits <= 1 {
        let value = sign * unsafe { word(int + 12) } as i64;
        return unsafe { narrow(not_error(value)) };
    }
    let mut x: u64 = 0;
    for i in (0..digits).rev() {
        x = ((x << DIGIT_BITS) & MODULUS) | (x >> (BITS - DIGIT_BITS));
        x += unsafe { word(int + 12 + 4 * i) } as u64;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    unsafe { narrow(not_error((x as i64).wrapping_mul(sign))) }
}

/// What `slot_tp_hash` makes of the int a `__hash__` written in Python
/// returned (it calls this instead of `PyLong_AsSsize_t`): 64-bit CPython
/// takes the value itself when it fits in 64 bits and the int's hash
/// otherwise; the 32-bit build took the hash past 32 bits, so a
/// `__hash__` returning `hash((self.x, self.y))` (a dataclass's) put its
/// object in another slot. Never -1 with an error set: an int is at hand.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_hash_of_int(int: u32) -> i32 {
    let tag = unsafe { word(int + 8) };
    let digits = tag >> 3;
    let negative = tag & 3 == 2;
    let digit = |i: u32| unsafe { word(int + 12 + 4 * i) } as u64;
    let magnitude = match digits {
        0 => Some(0),
        1 => Some(digit(0)),
        2 => Some(digit(0) | digit(1) << DIGIT_BITS),
        // 2 * 30 bits, and 4 more in the third digit.
        3 if digit(2) < 16 => Some(digit(0) | digit(1) << DIGIT_BITS | digit(2) << (2 * DIGIT_BITS)),
        _ => None,
    };
    match magnitude {
        Some(m) if !negative && m <= i64::MAX as u64 => unsafe { narrow(m as i64) },
        Some(m) if negative && m <= 1 << 63 => unsafe { narrow((m as i64).wrapping_neg()) },
        _ => unsafe { chainbox_long_hash(int) },
    }
}

/// `frexp` of a finite, non-zero `value`: a mantissa in [0.5, 1) with the
/// value's sign, and the exponent. Inlined: a returned pair would go
/// through the stack, which the spliced functions do not have.
#[inline(always)]
fn frexp(value: f64) -> (f64, i32) {
    let (value, scaled) = if value.to_bits() & (0x7ff << 52) == 0 {
        // Subnormal: scale it into the normal range first.
        (value * 18446744073709551616.0, 64)
    } else {
        (value, 0)
    };
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    (
        f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52)),
        exponent - 1022 - scaled,
    )
}

/// `_Py_HashDouble` (Python/pyhash.c) of a value that is not a NaN (whose
/// hash is its object's address, left to the patched function's own code).
fn double_hash(value: f64) -> i64 {
    if value == 0.0 {
        return 0;
    }
    if value - value != 0.0 {
        return if value > 0.0 { INF } else { -INF };
    }
    let (mut m, mut e) = frexp(value);
    let mut sign = 1i64;
    if m < 0.0 {
        sign = -1;
        m = -m;
    }
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & MODULUS) | (x >> (BITS - 28));
        m *= 268435456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= MODULUS {
            x -= MODULUS;
        }
    }
    let e = if e >= 0 {
        e % BITS as i32
    } else {
        BITS as i32 - 1 - ((-1 - e) % BITS as i32)
    } as u32;
    x = ((x << e) & MODULUS) | (x >> (BITS - e));
    not_error((x as i64).wrapping_mul(sign))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_double_hash(value: f64) -> i32 {
    unsafe { narrow(double_hash(value)) }
}

/// A `complex` (real part at 8, imaginary at 16) with no NaN part.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_complex_has_no_nan(complex: u32) -> i32 {
    let (real, imag) = unsafe { (double(complex + 8), double(complex + 16)) };
    (real == real && imag == imag) as i32
}

/// `complex_hash` (Objects/complexobject.c) of a complex with no NaN part.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_complex_hash(complex: u32) -> i32 {
    let (real, imag) = unsafe { (double(complex + 8), double(complex + 16)) };
    let combined = (double_hash(real) as u64).wrapping_add(IMAG.wrapping_mul(double_hash(imag) as u64));
    unsafe { narrow(not_error(combined as i64)) }
}

/// `tuple_hash` (Objects/tupleobject.c) over the items' 64-bit hashes:
/// length at 8, items at 16. The tuple's cached hash (at 12) is not used:
/// the snapshot's tuples cached 32-bit ones.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_tuple_hash(tuple: u32) -> i32 {
    let length = unsafe { word(tuple + 8) };
    let mut acc = XXPRIME_5;
    for i in 0..length {
        let lane = unsafe { object_hash(word(tuple + 16 + 4 * i)) };
        if lane == -1 {
            return -1;
        }
        acc = acc.wrapping_add((lane as u64).wrapping_mul(XXPRIME_2));
        acc = acc.rotate_left(31);
        acc = acc.wrapping_mul(XXPRIME_1);
    }
    acc = acc.wrapping_add(length as u64 ^ (XXPRIME_5 ^ 3527539));
    if acc == u64::MAX {
        acc = 1546275796;
    }
    unsafe { narrow(acc as i64) }
}

/// `frozenset_hash` (Objects/setobject.c) over the members' 64-bit hashes:
/// `used` at 12, `mask` at 16, `table` at 20 (entries of a key and its
/// hash, 8 bytes; no key is empty, a stored hash of -1 the dummy). CPython
/// xors every entry's shuffled hash and takes the empty and dummy ones out
/// again, so only the members count. The cached hash (at 24) is not used:
/// the snapshot's frozensets cached 32-bit ones.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_frozenset_hash(set: u32) -> i32 {
    let (used, mask, table) = unsafe { (word(set + 12), word(set + 16), word(set + 20)) };
    let mut acc: u64 = 0;
    let mut entry = table;
    let end = table + 8 * mask;
    while entry <= end {
        if unsafe { word(entry) } != 0 && unsafe { word(entry + 4) } != u32::MAX {
            let lane = unsafe { object_hash(word(entry)) };
            if lane == -1 {
                return -1;
            }
            let h = lane as u64;
            acc ^= ((h ^ 89869747) ^ (h << 16)).wrapping_mul(3644798167);
        }
        entry += 8;
    }
    acc ^= (used as u64 + 1).wrapping_mul(1927868237);
    acc ^= (acc >> 11) ^ (acc >> 25);
    acc = acc.wrapping_mul(69069).wrapping_add(907133923);
    if acc == u64::MAX {
        acc = 590923713;
    }
    unsafe { narrow(acc as i64) }
}

/// `a * b` modulo the Mersenne prime `MODULUS`, for `a, b < MODULUS`, in
/// 64-bit halves (a `u128` product is a `__multi3` call returning through
/// the stack). With 2**61 = 1 (mod MODULUS): 2**64 = 8, and a middle term
/// `m * 2**32` is `(m >> 29) + (m & (2**29 - 1)) * 2**32`.
fn mul_mod(a: u64, b: u64) -> u64 {
    let (a_high, a_low) = (a >> 32, a & 0xffff_ffff);
    let (b_high, b_low) = (b >> 32, b & 0xffff_ffff);
    let high = (a_high * b_high) << 3;
    let middle = a_high * b_low + a_low * b_high;
    let low = a_low * b_low;
    let sum = high + (middle >> 29) + ((middle & ((1 << 29) - 1)) << 32) + (low >> BITS) + (low & MODULUS);
    let sum = (sum & MODULUS) + (sum >> BITS);
    if sum >= MODULUS { sum - MODULUS } else { sum }
}

fn pow_mod(mut base: u64, mut exponent: u64) -> u64 {
    let mut result = 1;
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = mul_mod(result, base);
        }
        base = mul_mod(base, base);
        exponent >>= 1;
    }
    result
}

/// `_PyHASH_10INV`: the inverse of 10 modulo `MODULUS`.
const INVERSE_OF_10: u64 = 2075258708292324556;

/// A `Decimal` (Modules/_decimal: `hash` at 8, then its `mpd_t`: `flags` at
/// 12, `exp` at 16, `len` at 24, `data` at 32) that is finite (not NaN or
/// infinite, which the patched `dec_hash` hashes itself).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_decimal_is_finite(decimal: u32) -> i32 {
    (unsafe { word(decimal + 12) } & 0xe == 0) as i32
}

/// `Decimal.__hash__` of a finite decimal as 64-bit CPython computes it
/// (Lib/_pydecimal.py): the coefficient (base 10**9 words, least
/// significant first) times 10**exp, modulo `MODULUS`, with the sign.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chainbox_decimal_hash(decimal: u32) -> i32 {
    let negative = unsafe { word(decimal + 12) } & 1 == 1;
    let exponent = unsafe { word(decimal + 16) } as i32;
    let words = unsafe { word(decimal + 24) };
    let data = unsafe { word(decimal + 32) };
    let mut coefficient = 0;
    for i in (0..words).rev() {
        coefficient = mul_mod(coefficient, 1_000_000_000) + unsafe { word(data + 4 * i) } as u64;
        if coefficient >= MODULUS {
            coefficient -= MODULUS;
        }
    }
    let scale = if exponent >= 0 {
        pow_mod(10, exponent as u64)
    } else {
        pow_mod(INVERSE_OF_10, exponent.unsigned_abs() as u64)
    };
    let hash = mul_mod(coefficient, scale) as i64;
    unsafe { narrow(not_error(if negative { -hash } else { hash })) }
}
