//! Makes the CPython guest's snapshot objects immortal: writes CPython's
//! immortal reference count into every object the guest package listed
//! (`immortal.py` in the guest package), in the memory image componentize-py
//! took of the initialised interpreter.
//!
//! Why: every chain starts from that image, and a pool slot copies the
//! image back into each page its chain wrote. A trivial chain wrote ~600
//! pages, nearly all of them because it raised and lowered the reference
//! counts of snapshot objects spread over the heap; CPython skips counting
//! for an immortal object, so those pages stay untouched.
//!
//! The image is the active data segments of the one core module that has
//! them all (component-init's snapshot). The guest left a record there
//! ([`MAGIC`], the address of its list, the list's length, both xor'ed with
//! [`CHECK`]); the list's items are the objects' addresses. Each count is
//! written in place: the component keeps its size and layout.

use std::ops::Range;

use wasmparser::{DataKind, Operator, Parser, Payload};

use crate::Error;
use crate::component::top_level_modules;

/// The record's first bytes (`_MAGIC` in `immortal.py`).
const MAGIC: &[u8; 8] = b"CBimmort";
/// What the record's last word xors with (`_CHECK` in `immortal.py`).
const CHECK: u32 = 0x9E37_79B9;
/// CPython 3.14's count for an object made immortal at run time on a
/// 32-bit build (`_Py_IMMORTAL_INITIAL_REFCNT`, `5 << 28`): below the
/// statically allocated objects' `6 << 28`, at or above the `1 << 30` from
/// which `Py_INCREF`/`Py_DECREF` leave a count alone.
const IMMORTAL: u32 = 5 << 28;
/// `_Py_IMMORTAL_MINIMUM_REFCNT` on a 32-bit build.
const IMMORTAL_MINIMUM: u32 = 1 << 30;

/// Why the snapshot's objects could not be made immortal.
#[derive(Debug, thiserror::Error)]
pub enum ImmortalError {
    /// No module's data segments hold a valid record, or several
    /// different ones do.
    #[error(
        "the CPython guest's memory image holds {0} different records of the objects to make immortal (expected 1)"
    )]
    Records(usize),
    /// The list holds another number of objects than its record says.
    #[error("the list of objects to make immortal holds {now} objects, its record says {listed}")]
    ListChanged {
        /// The record's length.
        listed: u32,
        /// The list's.
        now: u32,
    },
    /// A data segment's offset is not an `i32.const`.
    #[error("a data segment of the CPython guest's memory image has an offset other than i32.const")]
    Offset,
    /// An object's count lies where the image has no segment.
    #[error("the object at address {0:#x} lies outside the CPython guest's memory image")]
    Outside(u32),
    /// An object listed has a count of 0: it was freed after being listed.
    #[error("the object at address {0:#x} was freed after being listed (its reference count is 0)")]
    Freed(u32),
}

/// What the pass did: how many objects it made immortal and how many were
/// immortal already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Immortalized {
    /// Objects whose count the pass wrote.
    pub made: usize,
    /// Objects listed that were immortal already (statically allocated,
    /// interned strings).
    pub already: usize,
}

/// One active data segment: where it lies in memory, and where its bytes
/// are in the component.
struct Segment {
    address: u32,
    bytes: Range<usize>,
}

/// The memory image: the segments of one module, by address.
struct Image {
    segments: Vec<Segment>,
}

impl Image {
    /// Where `address` is in the component, if a segment covers it.
    fn locate(&self, address: u32) -> Option<usize> {
        let i = self.segments.partition_point(|s| s.address <= address).checked_sub(1)?;
        let s = &self.segments[i];
        let at = (address - s.address) as usize;
        (at < s.bytes.len()).then(|| s.bytes.start + at)
    }

    /// The little-endian word at `address`. A byte no segment covers is
    /// 0: the image leaves out runs of zeros (65 bytes or more), so a word
    /// may begin or end in one.
    fn word(&self, component: &[u8], address: u32) -> u32 {
        let mut bytes = [0u8; 4];
        for (i, byte) in bytes.iter_mut().enumerate() {
            if let Some(at) = address.checked_add(i as u32).and_then(|a| self.locate(a)) {
                *byte = component[at];
            }
        }
        u32::from_le_bytes(bytes)
    }

    /// Writes `value` at `address`; `None` if it would write a byte other
    /// than 0 where no segment is.
    fn set_word(&self, component: &mut [u8], address: u32, value: u32) -> Option<()> {
        let places: [Option<usize>; 4] =
            std::array::from_fn(|i| address.checked_add(i as u32).and_then(|a| self.locate(a)));
        let bytes = value.to_le_bytes();
        if places
            .iter()
            .zip(bytes)
            .any(|(place, byte)| place.is_none() && byte != 0)
        {
            return None;
        }
        for (place, byte) in places.into_iter().zip(bytes) {
            if let Some(place) = place {
                component[place] = byte;
            }
        }
        Some(())
    }

    /// The list address and length of each valid record (the magic
    /// followed by a list's address, its length and their check).
    fn records(&self, component: &[u8]) -> Vec<(u32, u32)> {
        let mut found = Vec::new();
        for s in &self.segments {
            let data = &component[s.bytes.clone()];
            let mut from = 0;
            while let Some(at) = find(&data[from..], MAGIC).map(|at| from + at) {
                from = at + 1;
                let address = s.address + at as u32 + MAGIC.len() as u32;
                let [list, len, check] = [0, 4, 8].map(|i| self.word(component, address + i));
                if list ^ len ^ CHECK == check {
                    found.push((list, len));
                }
            }
        }
        found
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The active data segments of the core module at `module` in `component`.
fn image(component: &[u8], module: Range<usize>) -> Result<Image, Error> {
    let mut segments = Vec::new();
    for payload in Parser::new(0).parse_all(&component[module.clone()]) {
        let Payload::DataSection(reader) = payload? else {
            continue;
        };
        for data in reader {
            let data = data?;
            let DataKind::Active { offset_expr, .. } = data.kind else {
                continue;
            };
            let mut ops = offset_expr.get_operators_reader();
            let Operator::I32Const { value } = ops.read()? else {
                return Err(ImmortalError::Offset.into());
            };
            // The bytes borrow from the component: their place is theirs.
            let start = data.data.as_ptr() as usize - component.as_ptr() as usize;
            segments.push(Segment {
                address: value as u32,
                bytes: start..start + data.data.len(),
            });
        }
    }
    segments.sort_by_key(|s| s.address);
    Ok(Image { segments })
}

/// Returns `component` with every object its guest listed made immortal in
/// its memory image, and what was done.
pub fn immortalize(component: &[u8]) -> Result<(Vec<u8>, Immortalized), Error> {
    // A stale copy of the record may lie in freed memory next to the
    // live one: copies that agree are one record.
    let mut records: Vec<((u32, u32), Image)> = Vec::new();
    for module in top_level_modules(component)? {
        let image = image(component, module)?;
        let mut found = image.records(component);
        found.sort_unstable();
        found.dedup();
        match found[..] {
            [] => {}
            [record] => records.push((record, image)),
            _ => return Err(ImmortalError::Records(found.len()).into()),
        }
    }
    let count = records.len();
    let Ok([((list, len), image)]) = <[_; 1]>::try_from(records) else {
        return Err(ImmortalError::Records(count).into());
    };
    let mut out = component.to_vec();
    // A list on 32-bit CPython: count, type, size, then its items' array.
    let size = image.word(&out, list + 8);
    let items = image.word(&out, list + 12);
    if size != len {
        return Err(ImmortalError::ListChanged { listed: len, now: size }.into());
    }
    let mut done = Immortalized { made: 0, already: 0 };
    for i in 0..len {
        let object = image.word(&out, items + 4 * i);
        let count = image.word(&out, object);
        match count {
            0 => return Err(ImmortalError::Freed(object).into()),
            c if c >= IMMORTAL_MINIMUM => done.already += 1,
            _ => {
                image
                    .set_word(&mut out, object, IMMORTAL)
                    .ok_or(ImmortalError::Outside(object))?;
                done.made += 1;
            }
        }
    }
    Ok((out, done))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{Component, ConstExpr, DataSection, MemorySection, MemoryType, Module, ModuleSection};

    /// A component whose one module's memory image is `segments`
    /// (address, bytes).
    fn component(segments: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut module = Module::new();
        let mut memories = MemorySection::new();
        memories.memory(MemoryType {
            minimum: 1,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        module.section(&memories);
        let mut data = DataSection::new();
        for (address, bytes) in segments {
            data.active(0, &ConstExpr::i32_const(*address as i32), bytes.iter().copied());
        }
        module.section(&data);
        let mut component = Component::new();
        component.section(&ModuleSection(&module));
        component.finish()
    }

    fn words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn record(list: u32, len: u32) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(words(&[list, len, list ^ len ^ CHECK]));
        bytes
    }

    /// A list at 0x2000 of the objects at `objects`, its items at 0x3000,
    /// and its record at 0x1000.
    fn listed(objects: &[u32]) -> Vec<(u32, Vec<u8>)> {
        let len = objects.len() as u32;
        vec![
            (0x1000, record(0x2000, len)),
            (0x2000, words(&[1, 0x9999, len, 0x3000, len])),
            (0x3000, words(objects)),
        ]
    }

    /// The word at `address` of the one module's image in `component`.
    fn word_at(component: &[u8], address: u32) -> u32 {
        let module = top_level_modules(component).expect("modules")[0].clone();
        image(component, module).expect("image").word(component, address)
    }

    #[test]
    fn a_listed_object_gets_the_immortal_count_and_an_immortal_one_keeps_its_own() {
        let mut segments = listed(&[0x4000, 0x5000]);
        segments.push((0x4000, words(&[3, 0x9999])));
        segments.push((0x5000, words(&[7 << 28, 0x9999])));
        let (out, done) = immortalize(&component(&segments)).expect("immortalized");
        assert_eq!(done, Immortalized { made: 1, already: 1 });
        assert_eq!(word_at(&out, 0x4000), IMMORTAL);
        assert_eq!(word_at(&out, 0x5000), 7 << 28);
        assert_eq!(word_at(&out, 0x4004), 0x9999, "only the count is written");
        assert_eq!(out.len(), component(&segments).len(), "the component keeps its layout");
    }

    #[test]
    fn a_count_whose_zero_bytes_the_image_left_out_is_written() {
        // The count 0x100 is 00 01 00 00: a segment may begin at its 01.
        let mut segments = listed(&[0x4000]);
        segments.push((0x4001, vec![1, 0, 0, 0x99, 0x99]));
        let (out, done) = immortalize(&component(&segments)).expect("immortalized");
        assert_eq!(done.made, 1);
        assert_eq!(word_at(&out, 0x4000), IMMORTAL);
    }

    #[test]
    fn an_object_freed_after_being_listed_is_refused() {
        let mut segments = listed(&[0x4000]);
        segments.push((0x4004, words(&[0x9999])));
        let error = immortalize(&component(&segments)).expect_err("a freed object");
        assert!(
            matches!(error, Error::Immortal(ImmortalError::Freed(0x4000))),
            "{error:?}"
        );
    }

    #[test]
    fn a_list_whose_length_is_not_its_records_is_refused() {
        let mut segments = listed(&[0x4000]);
        segments[1] = (0x2000, words(&[1, 0x9999, 2, 0x3000, 2]));
        let error = immortalize(&component(&segments)).expect_err("a changed list");
        assert!(
            matches!(error, Error::Immortal(ImmortalError::ListChanged { listed: 1, now: 2 })),
            "{error:?}"
        );
    }

    #[test]
    fn a_count_the_image_does_not_cover_is_refused() {
        // The count is 3 (03 00 00 00) and no segment holds its top byte,
        // where the immortal count's 0x50 would go.
        let mut segments = listed(&[0x4000]);
        segments.push((0x4000, vec![3]));
        let error = immortalize(&component(&segments)).expect_err("an uncovered count");
        assert!(
            matches!(error, Error::Immortal(ImmortalError::Outside(0x4000))),
            "{error:?}"
        );
    }

    #[test]
    fn a_stale_copy_of_the_record_is_the_same_record() {
        let mut segments = listed(&[0x4000]);
        segments.push((0x4000, words(&[3, 0x9999])));
        segments.push((0x6000, record(0x2000, 1)));
        assert!(immortalize(&component(&segments)).is_ok());
    }

    #[test]
    fn two_different_records_or_none_are_refused() {
        let mut segments = listed(&[0x4000]);
        segments.push((0x4000, words(&[3, 0x9999])));
        segments.push((0x6000, record(0x2400, 1)));
        let error = immortalize(&component(&segments)).expect_err("two records");
        assert!(matches!(error, Error::Immortal(ImmortalError::Records(2))), "{error:?}");
        let error = immortalize(&component(&[(0x4000, words(&[3, 0x9999]))])).expect_err("no record");
        assert!(matches!(error, Error::Immortal(ImmortalError::Records(0))), "{error:?}");
    }

    #[test]
    fn a_magic_not_followed_by_its_check_is_no_record() {
        let mut segments = listed(&[0x4000]);
        segments.push((0x4000, words(&[3, 0x9999])));
        let mut broken = MAGIC.to_vec();
        broken.extend(words(&[0x2400, 1, 0]));
        segments.push((0x6000, broken));
        assert!(immortalize(&component(&segments)).is_ok());
    }
}
