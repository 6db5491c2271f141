//! The CPython guest's interruption points (`guest/build`'s `interrupt`), on a
//! small module instrumented as the build instruments the guest: a loop
//! stops (traps) once the guard page is unreadable, a store-free loop after
//! an earlier check too (Cranelift merges identical loads, so each check
//! reads its own byte), and `memory.copy` and `memory.fill`, which the pass
//! routes through its own functions, still copy and fill exactly as wasm's
//! instructions do, on the guard page too, and trap in wasm anywhere in
//! the guard span (a host page may be up to 64 KiB). The built CPython
//! guest's checks are each their function's own.

use std::time::Duration;

use chainbox_guest_build::component as cpython_component;
use chainbox_guest_build::interrupt;
use chainbox_guest_build::interrupt::page::{CHECKED_BYTES, GUARD_PAGE, GUARD_SPAN};
use wasm_encoder::{
    CodeSection, Component, ExportKind, ExportSection, Function, FunctionSection, MemorySection, MemoryType,
    ModuleSection, TypeSection, ValType,
};
use wasmparser::{Parser, Payload};
use wasmtime::{Engine, Instance, Memory, Module, Store, Trap, WasmParams};

const PAGES: u64 = 4;

/// A module with a memory of [`PAGES`] and these exports: `copy(dst, src,
/// len)` and `fill(dst, value, len)` (the bulk instructions), `spin()`, a
/// loop that never ends, and two store-free loops counting `n: i64` down,
/// each reached after an earlier check: `scan_after_loop(n)` after a loop,
/// `scan_after_entry(n)` at the start of a function that calls.
fn module() -> wasm_encoder::Module {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32; 3], []);
    types.ty().function([], []);
    types.ty().function([ValType::I64], []);
    let mut functions = FunctionSection::new();
    functions
        .function(0)
        .function(0)
        .function(1)
        .function(1)
        .function(2)
        .function(2);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: PAGES,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports
        .export("memory", ExportKind::Memory, 0)
        .export("copy", ExportKind::Func, 0)
        .export("fill", ExportKind::Func, 1)
        .export("spin", ExportKind::Func, 2)
        .export("scan_after_loop", ExportKind::Func, 4)
        .export("scan_after_entry", ExportKind::Func, 5);
    let mut code = CodeSection::new();
    let mut copy = Function::new([]);
    copy.instructions()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .memory_copy(0, 0)
        .end();
    let mut fill = Function::new([]);
    fill.instructions()
        .local_get(0)
        .local_get(1)
        .local_get(2)
        .memory_fill(0)
        .end();
    let mut spin = Function::new([]);
    spin.instructions()
        .loop_(wasm_encoder::BlockType::Empty)
        .br(0)
        .end()
        .end();
    let nop = {
        let mut f = Function::new([]);
        f.instructions().end();
        f
    };
    let count_down = |f: &mut Function| {
        f.instructions()
            .loop_(wasm_encoder::BlockType::Empty)
            .local_get(0)
            .i64_const(1)
            .i64_sub()
            .local_tee(0)
            .i64_eqz()
            .i32_eqz()
            .br_if(0)
            .end();
    };
    let mut scan_after_loop = Function::new([]);
    // A loop run once (its header's check), then the scan.
    scan_after_loop
        .instructions()
        .loop_(wasm_encoder::BlockType::Empty)
        .end();
    count_down(&mut scan_after_loop);
    scan_after_loop.instructions().end();
    let mut scan_after_entry = Function::new([]);
    count_down(&mut scan_after_entry);
    scan_after_entry.instructions().call(3).end();
    code.function(&copy)
        .function(&fill)
        .function(&spin)
        .function(&nop)
        .function(&scan_after_loop)
        .function(&scan_after_entry);
    let mut module = wasm_encoder::Module::new();
    module
        .section(&types)
        .section(&functions)
        .section(&memories)
        .section(&exports)
        .section(&code);
    module
}

/// The module as the build leaves it: wrapped in a component, instrumented,
/// taken out again.
fn instrumented() -> Vec<u8> {
    let mut component = Component::new();
    component.section(&ModuleSection(&module()));
    let instrumented = interrupt::checks::with_interruption_points(&component.finish()).expect("instrumented");
    for payload in Parser::new(0).parse_all(&instrumented) {
        if let Ok(Payload::ModuleSection { unchecked_range, .. }) = payload {
            return instrumented[unchecked_range.start as usize..unchecked_range.end as usize].to_vec();
        }
    }
    panic!("no module in the instrumented component");
}

fn instance(wasm: &[u8]) -> (Store<()>, Instance, Memory) {
    let engine = Engine::default();
    let module = Module::new(&engine, wasm).expect("valid module");
    let mut store = Store::new(&engine, ());
    let instance = Instance::new(&mut store, &module, &[]).expect("instance");
    let memory = instance.get_memory(&mut store, "memory").expect("memory");
    (store, instance, memory)
}

/// Runs `calls` of `export` on the module before and after instrumenting,
/// from the same patterned memory, and returns both memories.
fn both(export: &str, calls: &[(u32, u32, u32)]) -> (Vec<u8>, Vec<u8>) {
    let run = |wasm: &[u8]| {
        let (mut store, instance, memory) = instance(wasm);
        for (i, byte) in memory.data_mut(&mut store).iter_mut().enumerate() {
            *byte = (i * 7 % 251) as u8;
        }
        let f = instance
            .get_typed_func::<(u32, u32, u32), ()>(&mut store, export)
            .expect("export");
        for &args in calls {
            f.call(&mut store, args).expect("call");
        }
        memory.data(&store).to_vec()
    };
    let original = module().finish();
    (run(&original), run(&instrumented()))
}

#[test]
fn the_bulk_instructions_become_calls_of_two_added_functions() {
    let mut functions = 0;
    let mut bulk = 0;
    for payload in Parser::new(0).parse_all(&instrumented()) {
        if let Ok(Payload::CodeSectionEntry(body)) = payload {
            functions += 1;
            let mut operators = body.get_operators_reader().expect("operators");
            while !operators.eof() {
                if let Ok(wasmparser::Operator::MemoryCopy { .. } | wasmparser::Operator::MemoryFill { .. }) =
                    operators.read()
                {
                    bulk += 1;
                }
            }
        }
    }
    // `copy`, `fill`, `spin`, `nop`, the two scans, then the guarded copy
    // and fill, which alone hold the instructions.
    assert_eq!((functions, bulk), (8, 2));
}

#[test]
fn memory_copy_across_the_guard_page_copies_as_wasm_does() {
    let g = GUARD_PAGE;
    let calls = [
        (g - 100, 200, 4096 + 200), // into it from below
        (300, g + 10, 5000),        // out of it
        (g + 8, g, 3000),           // overlapping, destination above: backwards
        (g, g + 8, 3000),           // overlapping, destination below: forwards
        (g + 4000, 0, 0),           // nothing
        (1000, 2000, 3000),         // far from it: the instruction itself
    ];
    let (original, instrumented) = both("copy", &calls);
    assert!(original == instrumented, "memory differs after the copies");
}

#[test]
fn memory_fill_across_the_guard_page_fills_as_wasm_does() {
    let g = GUARD_PAGE;
    let calls = [(g - 10, 0xab, 100), (g + 4090, 0x1cd, 20), (5, 7, 1000), (g, 1, 0)];
    let (original, instrumented) = both("fill", &calls);
    assert!(original == instrumented, "memory differs after the fills");
}

/// Makes `len` bytes at `address` unreadable (`protect`) or readable.
#[cfg(unix)]
fn protect(address: usize, len: usize, protect: bool) {
    let flags = match protect {
        true => libc::PROT_NONE,
        false => libc::PROT_READ | libc::PROT_WRITE,
    };
    // SAFETY: page-aligned bytes inside an instance's linear memory, which
    // outlives every use here (made readable again before its store drops).
    let done = unsafe { libc::mprotect(address as *mut libc::c_void, len, flags) };
    assert_eq!(done, 0, "{}", std::io::Error::last_os_error());
}

/// Calls `export(params)` on the instrumented module, makes the first 4
/// KiB of the guard page unreadable 50 ms in (the smallest host page), and
/// asserts the call ends by trapping there.
#[cfg(unix)]
fn stops_once_the_page_is_unreadable<P: WasmParams>(export: &str, params: P) {
    let (mut store, instance, memory) = instance(&instrumented());
    let page = memory.data_ptr(&store) as usize + GUARD_PAGE as usize;
    let f = instance.get_typed_func::<P, ()>(&mut store, export).expect("export");
    let protector = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        protect(page, CHECKED_BYTES as usize, true);
    });
    let ended = f.call(&mut store, params);
    protector.join().expect("protector");
    protect(page, CHECKED_BYTES as usize, false);
    let error = ended.expect_err("the loop ran to its end with the guard page unreadable");
    assert_eq!(
        error.downcast_ref::<Trap>(),
        Some(&Trap::MemoryOutOfBounds),
        "{error:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_loop_traps_once_the_guard_page_is_unreadable() {
    stops_once_the_page_is_unreadable("spin", ());
}

/// 2^34 rounds: many seconds unchecked, far past the 50 ms of the test.
const LONG_SCAN: i64 = 1 << 34;

#[cfg(unix)]
#[test]
fn a_store_free_loop_after_a_loop_traps_once_the_guard_page_is_unreadable() {
    stops_once_the_page_is_unreadable("scan_after_loop", LONG_SCAN);
}

#[cfg(unix)]
#[test]
fn a_store_free_loop_at_a_calling_functions_start_traps_once_the_guard_page_is_unreadable() {
    stops_once_the_page_is_unreadable("scan_after_entry", LONG_SCAN);
}

/// On a host with 64 KiB pages a stop protects the whole guard span: a
/// bulk copy or fill anywhere in it must trap in wasm (as wasmtime's bulk
/// libcall, it would fault in host code and take the process down).
#[cfg(unix)]
#[test]
fn bulk_memory_anywhere_in_the_guard_span_traps_in_wasm() {
    let (mut store, instance, memory) = instance(&instrumented());
    let span = memory.data_ptr(&store) as usize + GUARD_PAGE as usize;
    let far = GUARD_PAGE + GUARD_SPAN - 4096;
    let copy = instance
        .get_typed_func::<(u32, u32, u32), ()>(&mut store, "copy")
        .expect("copy");
    let fill = instance
        .get_typed_func::<(u32, u32, u32), ()>(&mut store, "fill")
        .expect("fill");
    protect(span, GUARD_SPAN as usize, true);
    let copied = copy.call(&mut store, (far, 0, 64));
    let read = copy.call(&mut store, (0, far + 100, 64));
    let filled = fill.call(&mut store, (far + 200, 7, 64));
    protect(span, GUARD_SPAN as usize, false);
    for (what, ended) in [("copy into", copied), ("copy out of", read), ("fill of", filled)] {
        let error = ended.expect_err(what);
        assert_eq!(
            error.downcast_ref::<Trap>(),
            Some(&Trap::MemoryOutOfBounds),
            "{what} the span: {error:?}"
        );
    }
}

/// The checks of one function body: `i32.const GUARD_PAGE; <load> offset;
/// drop`, as (the load's name, its offset).
fn checks_of(body: &wasmparser::FunctionBody<'_>) -> Vec<(String, u64)> {
    let mut operators = body.get_operators_reader().expect("operators");
    let mut window: Vec<wasmparser::Operator<'_>> = Vec::new();
    let mut checks = Vec::new();
    while !operators.eof() {
        window.push(operators.read().expect("operator"));
        if window.len() > 3 {
            window.remove(0);
        }
        if let [
            wasmparser::Operator::I32Const { value },
            load,
            wasmparser::Operator::Drop,
        ] = &window[..]
            && *value == GUARD_PAGE as i32
        {
            let memarg = match load {
                wasmparser::Operator::I32Load8U { memarg }
                | wasmparser::Operator::I32Load8S { memarg }
                | wasmparser::Operator::I64Load8U { memarg }
                | wasmparser::Operator::I64Load8S { memarg } => memarg,
                _ => continue,
            };
            checks.push((
                format!("{load:?}").split(' ').next().unwrap_or_default().to_owned(),
                memarg.offset,
            ));
        }
    }
    checks
}

/// Each check of a function of the built CPython guest is a different load
/// (another byte, or another kind of load), all in the guard page's first
/// 4 KiB: none can be merged into another.
#[test]
fn every_check_of_the_built_cpython_guest_is_its_functions_own() {
    let component = std::fs::read(env!("CHAINBOX_CPYTHON_WASM_PATH")).expect("the built CPython guest");
    let (mut functions, mut total) = (0, 0);
    for range in cpython_component::top_level_modules(&component).expect("modules") {
        for payload in Parser::new(0).parse_all(&component[range]) {
            if let Ok(Payload::CodeSectionEntry(body)) = payload {
                let checks = checks_of(&body);
                let distinct: std::collections::BTreeSet<_> = checks.iter().collect();
                assert_eq!(
                    distinct.len(),
                    checks.len(),
                    "a function reads one check twice: {checks:?}"
                );
                assert!(checks.iter().all(|(_, offset)| *offset < u64::from(CHECKED_BYTES)));
                functions += usize::from(!checks.is_empty());
                total += checks.len();
            }
        }
    }
    // 21,174 when this was written; thousands in any build.
    assert!(
        total > 10_000 && functions > 1_000,
        "{total} checks in {functions} functions"
    );
}
