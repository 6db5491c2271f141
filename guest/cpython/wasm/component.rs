//! Replacing core modules inside a component's bytes: how both build-time
//! passes over the CPython guest (`hashes/patch.rs`, `interrupt/checks.rs`)
//! put their rewritten modules back.

use std::ops::Range;

use wasmparser::{Parser, Payload};

/// The byte ranges of the component's own core modules (not those of
/// nested components), in order.
pub fn top_level_modules(component: &[u8]) -> Result<Vec<Range<usize>>, String> {
    let mut modules = Vec::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(component) {
        match payload.map_err(|e| format!("reading wasm: {e}"))? {
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
pub fn replace_modules(component: &[u8], replacements: Vec<(Range<usize>, Vec<u8>)>) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(component.len() + (1 << 20));
    let mut from = 0;
    for (range, module) in replacements {
        // A component's core module section: id 1, the LEB128 size, the module.
        let size = leb128(range.len() as u64);
        let header = range
            .start
            .checked_sub(1 + size.len())
            .filter(|&h| h >= from && component[h] == 1 && component[h + 1..range.start] == size[..])
            .ok_or("unexpected encoding of a core module section")?;
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
