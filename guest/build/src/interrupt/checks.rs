//! Interruption points for the CPython guest: a load of the guard page
//! (`page.rs`) at every loop header and at the entry of every function that
//! calls, in every core module of the component that uses its memory. Run
//! by chainbox's `build.rs` after the hashes are spliced.
//!
//! Each check of a function reads a different byte of the page (or the
//! same byte with another load instruction): Cranelift's alias analysis
//! drops a load identical to an earlier one that dominates it when no
//! store or call comes between, so a store-free loop (a string search, a
//! strip) reached after an earlier check lost its own, and ran to its end
//! with the page protected. Loads of different addresses or kinds are
//! never merged, so every check stays.
//!
//! Why: the guest must stop when its chain is over its CPU or time limit,
//! and wasmtime's epoch checks (a load, a compare and a branch at the same
//! points) cost a CPU-bound script a quarter of its time, because CPython's
//! dispatch loop passes a loop header at every bytecode. A load whose value
//! is dropped costs almost nothing; the host stops the guest by making the
//! page unreadable (`src/sandbox/interrupt.rs`), and the next check traps.
//! This is wasmtime's own plan for cheaper epochs (its PR #12990, not
//! released), done on the wasm instead of in Cranelift.
//!
//! Why these points suffice: code without loops or calls runs a bounded
//! number of instructions; a loop passes its header at every iteration; an
//! unbounded sequence of calls enters calling functions unboundedly often
//! (a leaf function returns after bounded work). Cranelift keeps a load
//! that may trap even when its value is unused.
//!
//! Each `memory.copy` and `memory.fill` also becomes a call of a function
//! added here, which does the same unless its bytes touch the guard span
//! (the 64 KiB from the guard page: the most a host page can protect),
//! and then copies or fills byte by byte in wasm. Wasmtime runs the bulk
//! instructions as host code (a libcall that bypasses the store's call
//! hook): had one touched the page while it was unreadable, the fault
//! would have been the host's, not a trap. In wasm it is a trap.

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, CodeSection, Function, FunctionSection, MemArg, ValType};
use wasmparser::{Operator, Parser, Payload, TypeRef};

use super::page::{CHECKED_BYTES, GUARD_PAGE, GUARD_SPAN};
use crate::Error;
use crate::component::{replace_modules, rewrite_module, top_level_modules, type_section};

type Result<T> = std::result::Result<T, Error>;

/// What the interruption points pass found in the component that it cannot
/// instrument.
#[derive(Debug, thiserror::Error)]
pub enum InterruptError {
    /// No core module has a memory: there is nothing to stop.
    #[error("no core module with a memory")]
    NoMemory,
    /// The module that defines the memory starts it too small to hold the
    /// guard page.
    #[error("the memory starts at {minimum} pages, too small for the guard page at {GUARD_PAGE:#x}")]
    MemoryTooSmall {
        /// Its declared minimum, in 64 KiB pages.
        minimum: u64,
    },
    /// A module with a memory lacks a section the pass rewrites.
    #[error("a module with a memory lacks a type, function or code section")]
    MissingSection,
    /// A function has more loops than there are distinct checks.
    #[error("defined function {function} has over {} loops", MAX_CHECKS - 1)]
    TooManyLoops {
        /// Its index among the module's defined functions.
        function: usize,
    },
    /// A bulk-memory instruction on another memory, or `memory.init`,
    /// which the pass does not reroute.
    #[error("unexpected bulk-memory instruction {0}")]
    BulkMemory(String),
}

/// `component` with interruption points in each top-level core module that
/// has a memory (its memory 0 is the component's one linear memory, defined
/// by the main module and imported by the others). Fails if a module's
/// memory is too small to hold the guard page at instantiation.
pub fn with_interruption_points(component: &[u8]) -> Result<Vec<u8>> {
    let mut replacements = Vec::new();
    for range in top_level_modules(component)? {
        if let Some(module) = instrumented_module(&component[range.clone()])? {
            replacements.push((range, module));
        }
    }
    if replacements.is_empty() {
        return Err(InterruptError::NoMemory.into());
    }
    replace_modules(component, replacements)
}

/// The module with its checks, or `None` if it has no memory or no code.
fn instrumented_module(module: &[u8]) -> Result<Option<Vec<u8>>> {
    // Memory 0's declared minimum pages and whether it is this module's
    // own; and the index spaces the two bulk-memory functions go after.
    let mut memory = None;
    let (mut types, mut imported_functions, mut defined_functions) = (0, 0, 0);
    let mut code = false;
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import?.ty {
                        TypeRef::Memory(m) => {
                            memory.get_or_insert((m.initial, false));
                        }
                        TypeRef::Func(_) => imported_functions += 1,
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => {
                for m in reader {
                    memory.get_or_insert((m?.initial, true));
                }
            }
            Payload::TypeSection(reader) => types = reader.count(),
            Payload::FunctionSection(reader) => defined_functions = reader.count(),
            Payload::CodeSectionStart { .. } => code = true,
            _ => {}
        }
    }
    let Some((minimum, defined)) = memory.filter(|_| code) else {
        return Ok(None);
    };
    // An imported memory's minimum is only what the importer needs; the
    // main module's declaration makes the shared memory, so it must hold
    // the page from instantiation on.
    if defined && u64::from(GUARD_PAGE) + u64::from(GUARD_SPAN) > minimum * 65536 {
        return Err(InterruptError::MemoryTooSmall { minimum }.into());
    }
    let bulk = Bulk {
        copy: imported_functions + defined_functions,
        fill: imported_functions + defined_functions + 1,
    };
    let mut seen = [false; 3];
    let out = rewrite_module(module, |payload, out| {
        match payload {
            Payload::TypeSection(reader) => {
                let mut section = type_section([reader.clone()])?;
                section.ty().function([ValType::I32; 3], []);
                out.section(&section);
                seen[0] = true;
            }
            Payload::FunctionSection(reader) => {
                let mut section = FunctionSection::new();
                RoundtripReencoder.parse_function_section(&mut section, reader.clone())?;
                section.function(types).function(types);
                out.section(&section);
                seen[1] = true;
            }
            Payload::CodeSectionStart { range, .. } => {
                let mut section = checked_code(module, range.start as usize..range.end as usize, &bulk)?;
                section.function(&guarded_copy()).function(&guarded_fill());
                out.section(&section);
                seen[2] = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if seen != [true; 3] {
        return Err(InterruptError::MissingSection.into());
    }
    Ok(Some(out))
}

/// The function indices of the added `memory.copy` and `memory.fill`.
struct Bulk {
    copy: u32,
    fill: u32,
}

/// The code section with a check at each function's entry (if it calls) and
/// at each loop header, and its bulk-memory instructions calling `bulk`'s
/// functions.
fn checked_code(module: &[u8], range: std::ops::Range<usize>, bulk: &Bulk) -> Result<CodeSection> {
    let call = |function: u32| {
        let mut sink = Function::new([]);
        sink.instructions().call(function);
        sink.into_raw_body()[1..].to_vec()
    };
    let (copy, fill) = (call(bulk.copy), call(bulk.fill));
    let mut section = CodeSection::new();
    let reader = wasmparser::CodeSectionReader::new(wasmparser::BinaryReader::new(
        &module[range.clone()],
        range.start as u64,
    ))?;
    for (index, body) in reader.into_iter().enumerate() {
        let body = body?;
        let mut operators = body.get_operators_reader()?;
        let start = operators.original_position() as usize;
        // Byte ranges to replace (empty for an insertion) and what with.
        // Check 0 is the entry's (if the function calls), loops count on.
        let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
        let mut checks = 1;
        let mut calls = false;
        while !operators.eof() {
            let at = operators.original_position() as usize;
            let operator = operators.read()?;
            let end = operators.original_position() as usize;
            match operator {
                Operator::Loop { .. } => {
                    let check = check(checks).ok_or(InterruptError::TooManyLoops { function: index })?;
                    edits.push((end, end, check));
                    checks += 1;
                }
                Operator::MemoryCopy { dst_mem: 0, src_mem: 0 } => edits.push((at, end, copy.clone())),
                Operator::MemoryFill { mem: 0 } => edits.push((at, end, fill.clone())),
                Operator::MemoryCopy { .. } | Operator::MemoryFill { .. } | Operator::MemoryInit { .. } => {
                    return Err(InterruptError::BulkMemory(format!("{operator:?}")).into());
                }
                Operator::Call { .. }
                | Operator::CallIndirect { .. }
                | Operator::ReturnCall { .. }
                | Operator::ReturnCallIndirect { .. }
                | Operator::CallRef { .. }
                | Operator::ReturnCallRef { .. } => calls = true,
                _ => {}
            }
        }
        let end = body.range().end as usize;
        let mut bytes = module[body.range().start as usize..start].to_vec();
        if calls {
            bytes.extend(check(0).expect("check 0, a load of the page's first byte, always exists"));
        }
        let mut from = start;
        for (at, to, with) in edits {
            bytes.extend_from_slice(&module[from..at]);
            bytes.extend_from_slice(&with);
            from = to;
        }
        bytes.extend_from_slice(&module[from..end]);
        section.raw(&bytes);
    }
    Ok(section)
}

/// Pushes whether `[start, start + len)` (locals, as i32) touches the
/// guard span (the most a stop may protect), in 64-bit arithmetic (no wrap).
fn touches_guard(f: &mut Function, start: u32, len: u32) {
    let page = i64::from(GUARD_PAGE);
    f.instructions()
        .local_get(start)
        .i64_extend_i32_u()
        .i64_const(page + i64::from(GUARD_SPAN))
        .i64_lt_u()
        .local_get(start)
        .i64_extend_i32_u()
        .local_get(len)
        .i64_extend_i32_u()
        .i64_add()
        .i64_const(page)
        .i64_gt_u()
        .i32_and();
}

const BYTE: MemArg = MemArg {
    offset: 0,
    align: 0,
    memory_index: 0,
};

/// Emits a loop running `step` `len` times (local `len`, counted down to
/// zero; `step` sees it already decremented).
fn count_down(f: &mut Function, len: u32, step: impl FnOnce(&mut Function)) {
    f.instructions()
        .block(BlockType::Empty)
        .loop_(BlockType::Empty)
        .local_get(len)
        .i32_eqz()
        .br_if(1)
        .local_get(len)
        .i32_const(1)
        .i32_sub()
        .local_set(len);
    step(f);
    f.instructions().br(0).end().end();
}

/// Emits `local += 1` for each of `locals`.
fn advance(f: &mut Function, locals: &[u32]) {
    for &local in locals {
        f.instructions()
            .local_get(local)
            .i32_const(1)
            .i32_add()
            .local_set(local);
    }
}

/// `memory.copy(dst, src, len)` (params 0, 1, 2), byte by byte in wasm
/// when either range touches the guard page (backwards when the ranges
/// overlap with `dst` above `src`, as `memmove`).
fn guarded_copy() -> Function {
    let mut f = Function::new([]);
    touches_guard(&mut f, 0, 2);
    touches_guard(&mut f, 1, 2);
    f.instructions().i32_or().if_(BlockType::Empty);
    f.instructions()
        .local_get(0)
        .local_get(1)
        .i32_gt_u()
        .if_(BlockType::Empty);
    // From the end: byte `len` (already decremented) of each.
    count_down(&mut f, 2, |f| {
        f.instructions()
            .local_get(0)
            .local_get(2)
            .i32_add()
            .local_get(1)
            .local_get(2)
            .i32_add()
            .i32_load8_u(BYTE)
            .i32_store8(BYTE);
    });
    f.instructions().else_();
    count_down(&mut f, 2, |f| {
        f.instructions()
            .local_get(0)
            .local_get(1)
            .i32_load8_u(BYTE)
            .i32_store8(BYTE);
        advance(f, &[0, 1]);
    });
    f.instructions().end().return_().end();
    f.instructions()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .memory_copy(0, 0)
        .end();
    f
}

/// `memory.fill(dst, value, len)` (params 0, 1, 2), byte by byte in wasm
/// when the range touches the guard page.
fn guarded_fill() -> Function {
    let mut f = Function::new([]);
    touches_guard(&mut f, 0, 2);
    f.instructions().if_(BlockType::Empty);
    count_down(&mut f, 2, |f| {
        f.instructions().local_get(0).local_get(1).i32_store8(BYTE);
        advance(f, &[0]);
    });
    f.instructions().return_().end();
    f.instructions()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .memory_fill(0)
        .end();
    f
}

/// The one-byte loads a check may use: each reads the same byte as a
/// different Cranelift load (type, extension), so the analysis that merges
/// identical loads keeps them apart.
const LOADS: usize = 4;

/// The most checks one function can have, each of them distinct.
pub const MAX_CHECKS: usize = CHECKED_BYTES as usize * LOADS;

/// Check `n` of a function (`None` past [`MAX_CHECKS`]), encoded: a load of
/// byte `n % CHECKED_BYTES` of the guard page, dropped; its kind of load
/// from `n / CHECKED_BYTES`.
fn check(n: usize) -> Option<Vec<u8>> {
    let byte = (n % CHECKED_BYTES as usize) as u64;
    let arg = wasm_encoder::MemArg {
        offset: byte,
        align: 0,
        memory_index: 0,
    };
    let mut sink = wasm_encoder::Function::new([]);
    let mut instructions = sink.instructions();
    instructions.i32_const(GUARD_PAGE as i32);
    match n / CHECKED_BYTES as usize {
        0 => instructions.i32_load8_u(arg),
        1 => instructions.i32_load8_s(arg),
        2 => instructions.i64_load8_u(arg),
        3 => instructions.i64_load8_s(arg),
        _ => return None,
    };
    instructions.drop();
    let raw = sink.into_raw_body();
    // `Function::new([])` encodes an empty locals vector (one byte 0) and
    // `into_raw_body` no `end`: the instructions are what follows.
    Some(raw[1..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_of_a_function_differs_from_the_others() {
        let checks: std::collections::HashSet<Vec<u8>> = (0..MAX_CHECKS).map(|n| check(n).expect("a check")).collect();
        assert_eq!(checks.len(), MAX_CHECKS);
    }

    #[test]
    fn there_is_no_check_past_the_last_distinct_one() {
        assert_eq!(check(MAX_CHECKS), None);
    }

    #[test]
    fn a_component_without_a_module_with_a_memory_is_refused() {
        let mut module = wasm_encoder::Module::new();
        module.section(&wasm_encoder::TypeSection::new());
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&module));
        let error = with_interruption_points(&component.finish()).expect_err("no memory");
        assert!(matches!(error, Error::Interrupt(InterruptError::NoMemory)), "{error:?}");
        assert!(error.to_string().contains("no core module with a memory"), "{error}");
    }

    #[test]
    fn a_memory_too_small_for_the_guard_page_is_refused_naming_its_size() {
        let mut types = wasm_encoder::TypeSection::new();
        types.ty().function([], []);
        let mut functions = wasm_encoder::FunctionSection::new();
        functions.function(0);
        let mut memories = wasm_encoder::MemorySection::new();
        memories.memory(wasm_encoder::MemoryType {
            minimum: 1,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        let mut code = wasm_encoder::CodeSection::new();
        let mut body = Function::new([]);
        body.instructions().end();
        code.function(&body);
        let mut module = wasm_encoder::Module::new();
        module
            .section(&types)
            .section(&functions)
            .section(&memories)
            .section(&code);
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&module));
        let error = with_interruption_points(&component.finish()).expect_err("too small");
        assert!(
            matches!(error, Error::Interrupt(InterruptError::MemoryTooSmall { minimum: 1 })),
            "{error:?}"
        );
    }
}
