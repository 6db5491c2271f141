//! The CPython guest's interruption points (`guest/cpython/interrupt`), on a
//! small module instrumented as the build instruments the guest: a loop
//! stops (traps) once the guard page is unreadable, and `memory.copy` and
//! `memory.fill`, which the pass routes through its own functions, still
//! copy and fill exactly as wasm's instructions do, on the guard page too.

#[path = "../../guest/cpython/wasm/component.rs"]
mod cpython_component;

#[path = "../../guest/cpython/interrupt"]
mod interrupt {
    pub mod checks;
    pub mod page;
}

use std::time::Duration;

use interrupt::page::GUARD_PAGE;
use wasm_encoder::{
    CodeSection, Component, ExportKind, ExportSection, Function, FunctionSection, MemorySection, MemoryType,
    ModuleSection, TypeSection, ValType,
};
use wasmparser::{Parser, Payload};
use wasmtime::{Engine, Instance, Memory, Module, Store, Trap};

const PAGES: u64 = 4;

/// A module with a memory of [`PAGES`] and three exports: `copy(dst, src,
/// len)` and `fill(dst, value, len)` (the bulk instructions), and `spin()`,
/// a loop that never ends.
fn module() -> wasm_encoder::Module {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32; 3], []);
    types.ty().function([], []);
    let mut functions = FunctionSection::new();
    functions.function(0).function(0).function(1);
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
        .export("spin", ExportKind::Func, 2);
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
    code.function(&copy).function(&fill).function(&spin);
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
    // `copy`, `fill`, `spin`, then the guarded copy and fill, which alone
    // hold the instructions.
    assert_eq!((functions, bulk), (5, 2));
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

#[cfg(unix)]
#[test]
fn a_loop_traps_once_the_guard_page_is_unreadable() {
    let (mut store, instance, memory) = instance(&instrumented());
    let page = memory.data_ptr(&store) as usize + GUARD_PAGE as usize;
    let spin = instance.get_typed_func::<(), ()>(&mut store, "spin").expect("spin");
    let protector = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: a page-aligned page inside the instance's linear memory,
        // which outlives this thread (joined below, before the store drops).
        let done = unsafe { libc::mprotect(page as *mut libc::c_void, 4096, libc::PROT_NONE) };
        assert_eq!(done, 0);
    });
    let error = spin.call(&mut store, ()).expect_err("the loop ends only by trapping");
    protector.join().expect("protector");
    assert_eq!(
        error.downcast_ref::<Trap>(),
        Some(&Trap::MemoryOutOfBounds),
        "{error:?}"
    );
    // SAFETY: as above; readable again before the store is dropped.
    let done = unsafe { libc::mprotect(page as *mut libc::c_void, 4096, libc::PROT_READ | libc::PROT_WRITE) };
    assert_eq!(done, 0);
}
