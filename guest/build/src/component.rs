//! Rewriting core modules and putting them back inside a component's
//! bytes: what both passes over the CPython guest ([`crate::hashes`],
//! [`crate::interrupt::checks`]) share.

use std::ops::Range;

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{RawSection, TypeSection};
use wasmparser::{Parser, Payload, TypeSectionReader};

use crate::Error;

/// One type section holding the types of `readers`, in order: a module's
/// own, then those a pass adds (their indices follow the module's).
pub fn type_section<'a>(readers: impl IntoIterator<Item = TypeSectionReader<'a>>) -> Result<TypeSection, Error> {
    let mut section = TypeSection::new();
    for reader in readers {
        RoundtripReencoder.parse_type_section(&mut section, reader)?;
    }
    Ok(section)
}

/// `module` re-encoded section by section: `edit` sees each payload and
/// writes what replaces it into the new module, returning `true`; a section
/// it returns `false` for is copied as it was. Code section entries reach
/// `edit` too (after their `CodeSectionStart`), and are dropped unless it
/// writes them: a pass that rewrites the code section writes it whole.
pub fn rewrite_module(
    module: &[u8],
    mut edit: impl FnMut(&Payload<'_>, &mut wasm_encoder::Module) -> Result<bool, Error>,
) -> Result<Vec<u8>, Error> {
    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload?;
        if edit(&payload, &mut out)? {
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&RawSection {
                id,
                data: &module[range.start as usize..range.end as usize],
            });
        }
    }
    Ok(out.finish())
}

/// The byte ranges of the component's own core modules (not those of
/// nested components), in order.
pub fn top_level_modules(component: &[u8]) -> Result<Vec<Range<usize>>, Error> {
    let mut modules = Vec::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload? {
            Payload::ModuleSection { unchecked_range, .. } => {
                if depth == 0 {
                    modules.push(unchecked_range.start as usize..unchecked_range.end as usize);
                }
                depth += 1;
            }
            Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(modules)
}

/// `component` with each module of `replacements` (a range from
/// [`top_level_modules`], in order, and the new module) in place of the old.
pub fn replace_modules(component: &[u8], replacements: Vec<(Range<usize>, Vec<u8>)>) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(component.len() + (1 << 20));
    let mut from = 0;
    for (range, module) in replacements {
        // A component's core module section: id 1, the LEB128 size, the module.
        let size = leb128(range.len() as u64);
        let header = range
            .start
            .checked_sub(1 + size.len())
            .filter(|&h| h >= from && component[h] == 1 && component[h + 1..range.start] == size[..])
            .ok_or(Error::ModuleSection { offset: range.start })?;
        out.extend_from_slice(&component[from..header]);
        out.push(1);
        out.extend(leb128(module.len() as u64));
        out.extend(module);
        from = range.end;
    }
    out.extend_from_slice(&component[from..]);
    Ok(out)
}

fn leb128(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{Component, CustomSection, Module, ModuleSection, NestedComponentSection};

    /// A core module with one custom section named `name` (its content).
    fn module(name: &str) -> Module {
        let mut module = Module::new();
        module.section(&CustomSection {
            name: name.into(),
            data: b"x".as_slice().into(),
        });
        module
    }

    fn component() -> Vec<u8> {
        let mut nested = Component::new();
        nested.section(&ModuleSection(&module("nested")));
        let mut component = Component::new();
        component.section(&ModuleSection(&module("first")));
        component.section(&NestedComponentSection(&nested));
        component.section(&ModuleSection(&module("second")));
        component.finish()
    }

    #[test]
    fn top_level_modules_are_the_components_own_not_a_nested_ones() {
        let component = component();
        let modules = top_level_modules(&component).expect("modules");
        let bytes: Vec<&[u8]> = modules.iter().map(|range| &component[range.clone()]).collect();
        assert_eq!(bytes, [module("first").finish(), module("second").finish()]);
    }

    #[test]
    fn replaced_modules_take_the_old_ones_places_whatever_their_size() {
        let component = component();
        let modules = top_level_modules(&component).expect("modules");
        let longer = module(&"a longer name".repeat(20)).finish();
        let replaced = replace_modules(&component, vec![(modules[1].clone(), longer.clone())]).expect("replaced");
        let after = top_level_modules(&replaced).expect("modules");
        assert_eq!(&replaced[after[0].clone()], module("first").finish());
        assert_eq!(&replaced[after[1].clone()], longer);
        assert!(replaced.ends_with(&component[modules[1].end..]));
    }

    #[test]
    fn a_replacement_at_a_range_that_is_no_module_section_is_refused() {
        let component = component();
        let modules = top_level_modules(&component).expect("modules");
        let inside = modules[0].start + 1..modules[0].end;
        let refused = replace_modules(&component, vec![(inside.clone(), Vec::new())]);
        assert!(
            matches!(refused, Err(Error::ModuleSection { offset }) if offset == inside.start),
            "{refused:?}"
        );
    }

    #[test]
    fn bytes_that_are_not_wasm_are_a_read_error() {
        let refused = top_level_modules(b"not wasm at all");
        assert!(matches!(refused, Err(Error::Read(_))), "{refused:?}");
    }

    #[test]
    fn a_module_rewritten_with_no_edit_is_the_same_module() {
        let mut original = module("kept");
        original.section(&wasm_encoder::TypeSection::new());
        let original = original.finish();
        let rewritten = rewrite_module(&original, |_, _| Ok(false)).expect("rewritten");
        assert_eq!(rewritten, original);
    }

    fn type_reader(module: &[u8]) -> TypeSectionReader<'_> {
        Parser::new(0)
            .parse_all(module)
            .find_map(|payload| match payload.expect("payload") {
                Payload::TypeSection(reader) => Some(reader),
                _ => None,
            })
            .expect("a type section")
    }

    #[test]
    fn a_type_section_from_two_readers_holds_the_first_ones_types_then_the_seconds() {
        let types = |params: &[wasm_encoder::ValType]| {
            let mut module = Module::new();
            let mut section = wasm_encoder::TypeSection::new();
            for &param in params {
                section.ty().function([param], []);
            }
            module.section(&section);
            module.finish()
        };
        use wasm_encoder::ValType::{F64, I32, I64};
        let (first, second) = (types(&[I32]), types(&[I64, F64]));
        let mut module = Module::new();
        module.section(&type_section([type_reader(&first), type_reader(&second)]).expect("types"));
        assert_eq!(module.finish(), types(&[I32, I64, F64]));
    }

    #[test]
    fn a_section_the_edit_writes_replaces_the_old_one() {
        let original = module("old").finish();
        let rewritten = rewrite_module(&original, |payload, out| {
            Ok(match payload {
                Payload::CustomSection(_) => {
                    out.section(&CustomSection {
                        name: "new".into(),
                        data: b"x".as_slice().into(),
                    });
                    true
                }
                _ => false,
            })
        })
        .expect("rewritten");
        assert_eq!(rewritten, module("new").finish());
    }
}
