//! Splices `guest/cpython/hashes/hashes.rs` (built for wasm) into the
//! CPython guest's libpython, so sets order numbers and tuples as 64-bit
//! CPython does (why: the top of `hashes.rs`). Run by chainbox's `build.rs`
//! on the component componentize-py made.
//!
//! Only libpython's core module changes. The spliced functions, two glue
//! functions (`narrow`, `object_hash`), two globals and their types go after
//! everything the module had (no index moves); six hash functions
//! (`long_hash`, `_Py_HashDouble`, `complex_hash`, `tuple_hash`,
//! `frozenset_hash`, `dec_hash`, found by the module's name section) get a
//! prologue that calls the 64-bit version and returns (their own code stays
//! behind it, for NaNs, whose hash is their address, and a decimal's
//! infinities); the set functions that probe a table shift a 64-bit
//! `perturb` (`perturb_in_64_bits`); the three that hash a set key as a
//! frozenset with inlined code take `chainbox_frozenset_hash`'s instead
//! (`rehash_inlined_frozenset`); and `slot_tp_hash` converts a Python
//! `__hash__`'s int with `chainbox_hash_of_int` (`redirect_call`). The
//! snapshot componentize-py took of the initialised interpreter keeps the
//! 32-bit hashes: the guest rehashes its containers (see
//! `_STALE_CONTAINERS` in the guest package's `stale.py`).

use std::ops::Range;

use wasm_encoder::reencode::{Error as ReencodeError, Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, CodeSection, ConstExpr, Function, FunctionSection, GlobalSection, GlobalType, ValType};
use wasmparser::{KnownCustom, Name, Operator, Parser, Payload, TypeRef};

use crate::Error;
use crate::component::{replace_modules, rewrite_module, top_level_modules, type_section};

/// A libpython function whose hash gets the 64-bit version, the spliced
/// function that computes it, and the prologue's shape.
struct Target {
    name: &'static str,
    params: &'static [ValType],
    prologue: Prologue,
}

enum Prologue {
    /// `return hash64(arg0)`.
    Always(&'static str),
    /// `if v == v return hash64(v)` for `_Py_HashDouble(inst, v)`: a NaN's
    /// hash is its object's address.
    NotNan(&'static str),
    /// `if test(arg0) return hash64(arg0)`.
    When(&'static str, &'static str),
}

const TARGETS: &[Target] = &[
    Target {
        name: "long_hash",
        params: &[ValType::I32],
        prologue: Prologue::Always("chainbox_long_hash"),
    },
    Target {
        name: "tuple_hash",
        params: &[ValType::I32],
        prologue: Prologue::Always("chainbox_tuple_hash"),
    },
    Target {
        name: "frozenset_hash",
        params: &[ValType::I32],
        prologue: Prologue::Always("chainbox_frozenset_hash"),
    },
    Target {
        name: "_Py_HashDouble",
        params: &[ValType::I32, ValType::F64],
        prologue: Prologue::NotNan("chainbox_double_hash"),
    },
    Target {
        name: "complex_hash",
        params: &[ValType::I32],
        prologue: Prologue::When("chainbox_complex_has_no_nan", "chainbox_complex_hash"),
    },
    Target {
        name: "dec_hash",
        params: &[ValType::I32],
        prologue: Prologue::When("chainbox_decimal_is_finite", "chainbox_decimal_hash"),
    },
];

/// setobject.c's functions that probe a set's table (`set_insert_clean` is
/// inlined into the last two): their `perturb` is made 64 bits wide (see
/// `perturb_in_64_bits`). Every function that probes a set's table must be
/// here, or a set would look for a member where it did not put it.
const PROBING: &[&str] = &[
    "set_add_entry_takeref",
    "set_lookkey",
    "set_merge_lock_held",
    "set_table_resize",
];

/// setobject.c's functions that look a set up as a frozenset (`{1, 2} in
/// s`, `s.discard({1})`, `s.remove({1})`) with `frozenset_hash_impl`
/// inlined: the 32-bit hash it computed is replaced by
/// `chainbox_frozenset_hash` of the key, their second parameter (see
/// `rehash_inlined_frozenset`).
const INLINED_FROZENSET_HASH: (&[&str], &str) = (
    &["set_contains_lock_held", "set_discard", "set_remove"],
    "chainbox_frozenset_hash",
);

/// `slot_tp_hash` (a `__hash__` written in Python) converts the int it got
/// with this call, which is redirected to `chainbox_hash_of_int`.
const SLOT_HASH: (&str, &str, &str) = ("slot_tp_hash", "PyLong_AsSsize_t", "chainbox_hash_of_int");

type Result<T> = std::result::Result<T, Error>;

/// What the hash splice found in libpython or `hashes.wasm` that it does not
/// expect: a function it patches is missing or has changed shape (a new
/// CPython or compiler), or `hashes.wasm` uses what the splice cannot move.
#[derive(Debug, thiserror::Error)]
pub enum HashesError {
    /// No core module defines `tuple_hash`.
    #[error("no core module defines `tuple_hash` (libpython not found)")]
    NoLibpython,
    /// Two core modules define `tuple_hash`.
    #[error("two core modules define `tuple_hash`")]
    TwoLibpythons,
    /// libpython's name section has no function of this name.
    #[error("libpython has no `{0}`")]
    NoFunction(String),
    /// The function is libpython's import, not one of its own.
    #[error("libpython's `{0}` is not a defined function")]
    NotDefined(&'static str),
    /// The function's parameters are not the ones its patch expects.
    #[error("libpython's `{0}` takes other parameters than expected")]
    OtherParameters(&'static str),
    /// libpython lacks a section the splice rewrites.
    #[error("libpython lacks a type, global or code section")]
    MissingSection,
    /// A function to patch was not met in the code section.
    #[error("not every patched function was found in the code section")]
    NotAllPatched,
    /// A set-probing function does not shift its `perturb` as expected.
    #[error("a set-probing function has no `perturb >>= 5`")]
    NoPerturbShift,
    /// A function with `frozenset_hash_impl` inlined writes the key it hashes.
    #[error("a function with `frozenset_hash_impl` inlined writes its key parameter")]
    KeyWritten,
    /// A function has other than one inlined `frozenset_hash_impl`.
    #[error("expected one inlined `frozenset_hash_impl`, found {0}")]
    InlinedHashes(usize),
    /// `slot_tp_hash` has other than one call to redirect.
    #[error("expected one call to redirect, found {0}")]
    Redirects(usize),
    /// `hashes.wasm` imports something other than a function.
    #[error("hashes.wasm imports a non-function `{0}`")]
    NonFunctionImport(String),
    /// `hashes.wasm` imports a function the splice does not provide.
    #[error("hashes.wasm imports an unknown `{0}`")]
    UnknownImport(String),
    /// `hashes.wasm` does not import a glue function the splice provides.
    #[error("hashes.wasm imports no `{0}`")]
    NoImport(&'static str),
    /// `hashes.wasm` does not export a function the splice calls.
    #[error("hashes.wasm exports no `{0}`")]
    NoExport(&'static str),
    /// `hashes.wasm` has no type section.
    #[error("hashes.wasm has no types")]
    NoTypes,
    /// `hashes.wasm` defines globals (a stack?) or data, which the splice
    /// does not move.
    #[error("hashes.wasm has {0}")]
    Unmovable(&'static str),
    /// `hashes.wasm` calls a function outside its index space.
    #[error("hashes.wasm calls function {0}")]
    UnknownCall(u32),
    /// `hashes.wasm` uses a global, a table or an indirect call.
    #[error("hashes.wasm uses {0}")]
    Unsupported(&'static str),
}

/// Returns `component` with its libpython module patched by `hashes` (the
/// wasm `hashes.rs` builds to).
pub fn patch_component(component: &[u8], hashes: &[u8]) -> Result<Vec<u8>> {
    let mut libpython = None;
    for range in top_level_modules(component)? {
        let names = function_names(&component[range.clone()])?;
        if names.iter().any(|(_, name)| name == "tuple_hash") {
            if libpython.is_some() {
                return Err(HashesError::TwoLibpythons.into());
            }
            libpython = Some((range, names));
        }
    }
    let (range, names) = libpython.ok_or(HashesError::NoLibpython)?;
    let patched = patch_module(&component[range.clone()], &names, hashes)?;
    replace_modules(component, vec![(range, patched)])
}

fn to_usize(range: &Range<u64>) -> Range<usize> {
    range.start as usize..range.end as usize
}

/// The function names of a core module's name section, by index.
fn function_names(module: &[u8]) -> Result<Vec<(u32, String)>> {
    let mut names = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        if let Payload::CustomSection(section) = payload?
            && let KnownCustom::Name(reader) = section.as_known()
        {
            for name in reader {
                if let Name::Function(map) = name? {
                    for naming in map {
                        let naming = naming?;
                        names.push((naming.index, naming.name.to_string()));
                    }
                }
            }
        }
    }
    Ok(names)
}

/// What `hashes.wasm` holds: its types, the imports' type indices by name,
/// its functions' type indices and bodies, its exports.
struct Hashes<'a> {
    types: wasmparser::TypeSectionReader<'a>,
    imports: Vec<(String, u32)>,
    functions: Vec<u32>,
    bodies: Vec<wasmparser::FunctionBody<'a>>,
    exports: Vec<(String, u32)>,
}

fn read_hashes(wasm: &[u8]) -> Result<Hashes<'_>> {
    let mut types = None;
    let (mut imports, mut functions, mut bodies, mut exports) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::TypeSection(reader) => types = Some(reader),
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    match import.ty {
                        TypeRef::Func(ty) => imports.push((format!("{}.{}", import.module, import.name), ty)),
                        _ => return Err(HashesError::NonFunctionImport(import.name.to_string()).into()),
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    functions.push(ty?);
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(body),
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export?;
                    if export.kind == wasmparser::ExternalKind::Func {
                        exports.push((export.name.to_string(), export.index));
                    }
                }
            }
            Payload::GlobalSection(s) if s.count() > 0 => {
                return Err(HashesError::Unmovable("globals (a stack?)").into());
            }
            Payload::DataSection(s) if s.count() > 0 => return Err(HashesError::Unmovable("data").into()),
            _ => {}
        }
    }
    let types = types.ok_or(HashesError::NoTypes)?;
    Ok(Hashes {
        types,
        imports,
        functions,
        bodies,
        exports,
    })
}

/// Re-encodes the spliced functions: their calls and types point into
/// libpython's index spaces; globals, tables and indirect calls are refused.
struct Splice {
    type_base: u32,
    functions: Vec<u32>,
}

impl Reencode for Splice {
    type Error = HashesError;

    fn type_index(&mut self, ty: u32) -> std::result::Result<u32, ReencodeError<HashesError>> {
        Ok(self.type_base + ty)
    }

    fn function_index(&mut self, func: u32) -> std::result::Result<u32, ReencodeError<HashesError>> {
        self.functions
            .get(func as usize)
            .copied()
            .ok_or(ReencodeError::UserError(HashesError::UnknownCall(func)))
    }

    fn global_index(&mut self, _: u32) -> std::result::Result<u32, ReencodeError<HashesError>> {
        Err(ReencodeError::UserError(HashesError::Unsupported("a global")))
    }

    fn table_index(&mut self, _: u32) -> std::result::Result<u32, ReencodeError<HashesError>> {
        Err(ReencodeError::UserError(HashesError::Unsupported("a table")))
    }
}

fn patch_module(module: &[u8], names: &[(u32, String)], hashes_wasm: &[u8]) -> Result<Vec<u8>> {
    let hashes = read_hashes(hashes_wasm)?;
    let index_of = |name: &str| {
        names
            .iter()
            .find(|(_, n)| n == name)
            .map(|(i, _)| *i)
            .ok_or_else(|| HashesError::NoFunction(name.to_string()))
    };
    let object_hash = index_of("PyObject_Hash")?;

    // First pass: the index spaces the additions go after.
    let (mut imported_functions, mut imported_globals, mut types, mut defined_globals) = (0, 0, 0, 0);
    let mut function_types = Vec::new();
    let mut type_params: Vec<Vec<ValType>> = Vec::new();
    for payload in Parser::new(0).parse_all(module) {
        match payload? {
            Payload::TypeSection(reader) => {
                types = reader.count();
                for ty in reader.into_iter_err_on_gc_types() {
                    let ty = ty?;
                    let params = ty
                        .params()
                        .iter()
                        .map(|p| RoundtripReencoder.val_type(*p))
                        .collect::<std::result::Result<_, _>>();
                    type_params.push(params?);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import?.ty {
                        TypeRef::Func(_) => imported_functions += 1,
                        TypeRef::Global(_) => imported_globals += 1,
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    function_types.push(ty?);
                }
            }
            Payload::GlobalSection(reader) => defined_globals = reader.count(),
            _ => {}
        }
    }
    let all_functions = imported_functions + function_types.len() as u32;
    let (low, full) = (
        imported_globals + defined_globals,
        imported_globals + defined_globals + 1,
    );
    let (narrow, widen) = (all_functions, all_functions + 1);
    // hashes.wasm's function index space: its imports, then its functions.
    let mut splice_functions = Vec::new();
    for (name, _) in &hashes.imports {
        splice_functions.push(match name.as_str() {
            "chainbox.narrow" => narrow,
            "chainbox.object_hash" => widen,
            other => return Err(HashesError::UnknownImport(other.to_string()).into()),
        });
    }
    for i in 0..hashes.functions.len() as u32 {
        splice_functions.push(all_functions + 2 + i);
    }
    let spliced = |export: &'static str| {
        hashes
            .exports
            .iter()
            .find(|(n, _)| n == export)
            .map(|(_, i)| splice_functions[*i as usize])
            .ok_or(HashesError::NoExport(export))
    };
    let import_type = |name: &'static str| {
        hashes
            .imports
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| types + t)
            .ok_or(HashesError::NoImport(name))
    };
    let mut prologues = Vec::new();
    // A defined function's index and parameter types, by name.
    let defined = |name: &'static str| {
        let index = index_of(name)?;
        let ty = index
            .checked_sub(imported_functions)
            .and_then(|i| function_types.get(i as usize))
            .ok_or(HashesError::NotDefined(name))?;
        Ok::<_, HashesError>((index, &type_params[*ty as usize]))
    };
    for target in TARGETS {
        let (index, params) = defined(target.name)?;
        if params != target.params {
            return Err(HashesError::OtherParameters(target.name).into());
        }
        let mut code = Vec::new();
        let mut sink = Function::new([]);
        let mut i = sink.instructions();
        match target.prologue {
            Prologue::Always(hash) => {
                i.local_get(0).call(spliced(hash)?).return_();
            }
            Prologue::NotNan(hash) => {
                i.local_get(1).local_get(1).f64_eq();
                i.if_(BlockType::Empty)
                    .local_get(1)
                    .call(spliced(hash)?)
                    .return_()
                    .end();
            }
            Prologue::When(test, hash) => {
                i.local_get(0).call(spliced(test)?);
                i.if_(BlockType::Empty)
                    .local_get(0)
                    .call(spliced(hash)?)
                    .return_()
                    .end();
            }
        }
        // `Function::new([])` encodes an empty locals vector (one byte 0).
        code.extend_from_slice(&sink.into_raw_body()[1..]);
        prologues.push((index, code));
    }

    let mut probing = Vec::new();
    for name in PROBING {
        let (index, params) = defined(name)?;
        probing.push((index, params.len() as u32));
    }
    let mut inlined = Vec::new();
    for name in INLINED_FROZENSET_HASH.0 {
        let (index, params) = defined(name)?;
        if params.len() != 2 {
            return Err(HashesError::OtherParameters(name).into());
        }
        inlined.push(index);
    }
    let frozenset_hash = spliced(INLINED_FROZENSET_HASH.1)?;
    let slot_hash = (index_of(SLOT_HASH.0)?, index_of(SLOT_HASH.1)?, spliced(SLOT_HASH.2)?);
    let additions = Additions {
        imported_functions,
        prologues,
        probing,
        inlined,
        frozenset_hash,
        slot_hash,
        low,
        full,
        object_hash,
    };
    let mut splice = Splice {
        type_base: types,
        functions: splice_functions,
    };
    let mut seen = [false; 3];
    let out = rewrite_module(module, |payload, out| {
        match payload {
            Payload::TypeSection(reader) => {
                out.section(&type_section([reader.clone(), hashes.types.clone()])?);
                seen[0] = true;
            }
            Payload::FunctionSection(_) => {
                let mut section = FunctionSection::new();
                for ty in &function_types {
                    section.function(*ty);
                }
                section.function(import_type("chainbox.narrow")?);
                section.function(import_type("chainbox.object_hash")?);
                for ty in &hashes.functions {
                    section.function(types + ty);
                }
                out.section(&section);
            }
            Payload::GlobalSection(reader) => {
                let mut section = GlobalSection::new();
                RoundtripReencoder.parse_global_section(&mut section, reader.clone())?;
                let global = |val_type| GlobalType {
                    val_type,
                    mutable: true,
                    shared: false,
                };
                // -1 is never a returned low half (`narrow` makes it 2**31 - 1).
                section.global(global(ValType::I32), &ConstExpr::i32_const(-1));
                section.global(global(ValType::I64), &ConstExpr::i64_const(0));
                out.section(&section);
                seen[1] = true;
            }
            Payload::CodeSectionStart { range, .. } => {
                out.section(&patched_code(module, range, &additions, &hashes, &mut splice)?);
                seen[2] = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if seen != [true; 3] {
        return Err(HashesError::MissingSection.into());
    }
    Ok(out)
}

/// Where the additions go in libpython's index spaces.
struct Additions {
    imported_functions: u32,
    /// Each target's function index and prologue (encoded instructions).
    prologues: Vec<(u32, Vec<u8>)>,
    /// Each set-probing function's index and parameter count.
    probing: Vec<(u32, u32)>,
    /// The functions with `frozenset_hash_impl` inlined, and the spliced
    /// `chainbox_frozenset_hash`.
    inlined: Vec<u32>,
    frozenset_hash: u32,
    /// `slot_tp_hash`, the call in it to redirect, and where to.
    slot_hash: (u32, u32, u32),
    /// The globals `narrow` keeps the slot value it returned (i32) and the
    /// 64-bit hash it came from (i64) in.
    low: u32,
    full: u32,
    /// `PyObject_Hash`.
    object_hash: u32,
}

/// The code section: each body as it was, a target's with its prologue,
/// then the glue (`narrow`, `object_hash`) and the spliced functions.
fn patched_code(
    module: &[u8],
    range: &Range<u64>,
    additions: &Additions,
    hashes: &Hashes<'_>,
    splice: &mut Splice,
) -> Result<CodeSection> {
    let Additions {
        imported_functions,
        ref prologues,
        ref probing,
        ref inlined,
        frozenset_hash,
        slot_hash,
        low,
        full,
        object_hash,
    } = *additions;
    let mut section = CodeSection::new();
    let reader =
        wasmparser::CodeSectionReader::new(wasmparser::BinaryReader::new(&module[to_usize(range)], range.start))?;
    let mut patched = 0;
    for (i, body) in reader.into_iter().enumerate() {
        let body = body?;
        let index = imported_functions + i as u32;
        if index == slot_hash.0 {
            section.function(&redirect_call(&body, slot_hash.1, slot_hash.2)?);
            patched += 1;
            continue;
        }
        if inlined.contains(&index) {
            section.function(&rehash_inlined_frozenset(&body, 1, frozenset_hash)?);
            patched += 1;
            continue;
        }
        if let Some((_, params)) = probing.iter().find(|(f, _)| *f == index) {
            section.function(&perturb_in_64_bits(&body, *params)?);
            patched += 1;
            continue;
        }
        match prologues.iter().find(|(f, _)| *f == index) {
            None => {
                section.raw(body.as_bytes());
            }
            Some((_, prologue)) => {
                let operators = body.get_operators_reader()?.original_position() as usize;
                let locals = &module[body.range().start as usize..operators];
                let ops = &module[operators..body.range().end as usize];
                let mut bytes = locals.to_vec();
                bytes.extend_from_slice(prologue);
                bytes.extend_from_slice(ops);
                section.raw(&bytes);
                patched += 1;
            }
        }
    }
    if patched != prologues.len() + probing.len() + inlined.len() + 1 {
        return Err(HashesError::NotAllPatched.into());
    }

    // narrow(hash: i64) -> i32: -1 stays the error; else the low half is
    // returned, kept in `low`, and the hash in `full`. A low half of -1 (the
    // error value; -1.5's hash is -(2**60 + 1)) is returned as 2**31 - 1,
    // which has the same low 31 bits, so the same slot in any set.
    let mut narrow = Function::new([(1, ValType::I32)]);
    narrow
        .instructions()
        .local_get(0)
        .i64_const(-1)
        .i64_eq()
        .if_(BlockType::Empty)
        .i32_const(-1)
        .return_()
        .end()
        .local_get(0)
        .global_set(full)
        .local_get(0)
        .i32_wrap_i64()
        .local_tee(1)
        .i32_const(-1)
        .i32_eq()
        .if_(BlockType::Empty)
        .i32_const(i32::MAX)
        .local_set(1)
        .end()
        .local_get(1)
        .global_set(low)
        .local_get(1)
        .end();
    section.function(&narrow);

    // object_hash(object: i32) -> i64: `PyObject_Hash`, or the 64-bit hash
    // `narrow` kept when it returned this value for this call. An error (-1,
    // also `low`'s preset) stays -1.
    let mut widen = Function::new([(1, ValType::I32)]);
    widen
        .instructions()
        .i32_const(-1)
        .global_set(low)
        .local_get(0)
        .call(object_hash)
        .local_tee(1)
        .global_get(low)
        .i32_eq()
        .local_get(1)
        .i32_const(-1)
        .i32_ne()
        .i32_and()
        .if_(BlockType::Result(ValType::I64))
        .global_get(full)
        .else_()
        .local_get(1)
        .i64_extend_i32_s()
        .end()
        .end();
    section.function(&widen);

    for body in &hashes.bodies {
        let mut operators = body.get_operators_reader()?;
        while !operators.eof() {
            if let Operator::CallIndirect { .. } | Operator::ReturnCallIndirect { .. } = operators.read()? {
                return Err(HashesError::Unsupported("an indirect call").into());
            }
        }
        splice.parse_function_body(&mut section, body.clone())?;
    }
    Ok(section)
}

/// A set-probing function whose `perturb` shifts as 64-bit CPython's. It is
/// `size_t perturb = hash`, shifted right by 5 at each probe: 32 bits wide
/// here, so a negative hash's high bits ran out of ones after six shifts,
/// where 64-bit CPython's keep coming for twelve, and `{-1, -2}` (both hash
/// to -2, probing from one slot) listed as `{-2, -1}`. Each local shifted
/// as `local.get P; i32.const 5; i32.shr_u; local.set/tee P` becomes an i64
/// holding the sign-extended hash: reads wrap it, writes sign-extend, the
/// shift is 64-bit. (A hash whose 64-bit value is not a sign extension of
/// its low half, like a tuple's, still probes as before past six shifts.)
fn perturb_in_64_bits(body: &wasmparser::FunctionBody<'_>, params: u32) -> Result<Function> {
    let operators = operators(body)?;
    let mut locals = declared_locals(body)?;
    let count = params + locals.iter().map(|(n, _)| n).sum::<u32>();
    let mut perturbs: Vec<u32> = Vec::new();
    for window in operators.windows(4) {
        if let [
            Operator::LocalGet { local_index: p },
            Operator::I32Const { value: 5 },
            Operator::I32ShrU,
            Operator::LocalTee { local_index: q } | Operator::LocalSet { local_index: q },
        ] = window
            && p == q
            && !perturbs.contains(p)
        {
            perturbs.push(*p);
        }
    }
    if perturbs.is_empty() {
        return Err(HashesError::NoPerturbShift.into());
    }
    let wide = |p: u32| count + perturbs.iter().position(|&x| x == p).unwrap_or(0) as u32;
    locals.push((perturbs.len() as u32, ValType::I64));
    let mut function = Function::new(locals);
    for &p in &perturbs {
        function
            .instructions()
            .local_get(p)
            .i64_extend_i32_s()
            .local_set(wide(p));
    }
    let mut i = 0;
    while i < operators.len() {
        if let [
            Operator::LocalGet { local_index: p },
            Operator::I32Const { value: 5 },
            Operator::I32ShrU,
            last,
            ..,
        ] = &operators[i..]
            && perturbs.contains(p)
            && matches!(last, Operator::LocalTee { local_index } | Operator::LocalSet { local_index } if local_index == p)
        {
            let mut sink = function.instructions();
            sink.local_get(wide(*p)).i64_const(5).i64_shr_u();
            if let Operator::LocalTee { .. } = last {
                sink.local_tee(wide(*p)).i32_wrap_i64();
            } else {
                sink.local_set(wide(*p));
            }
            i += 4;
            continue;
        }
        match &operators[i] {
            Operator::LocalGet { local_index } if perturbs.contains(local_index) => {
                function.instructions().local_get(wide(*local_index)).i32_wrap_i64();
            }
            Operator::LocalSet { local_index } if perturbs.contains(local_index) => {
                function.instructions().i64_extend_i32_s().local_set(wide(*local_index));
            }
            Operator::LocalTee { local_index } if perturbs.contains(local_index) => {
                function
                    .instructions()
                    .i64_extend_i32_s()
                    .local_tee(wide(*local_index))
                    .i32_wrap_i64();
            }
            other => copy(&mut function, other)?,
        }
        i += 1;
    }
    Ok(function)
}

/// A function with `frozenset_hash_impl(key)` inlined, its result replaced
/// by `to(key)`. The inlined code ends as `hash = hash * 69069 + 907133923;
/// if (hash == (Py_uhash_t)-1) hash = 590923713;`, a `select` leaving the
/// hash on the stack: `drop; local.get key; call to` follows it. `key` is a
/// parameter the function never writes.
fn rehash_inlined_frozenset(body: &wasmparser::FunctionBody<'_>, key: u32, to: u32) -> Result<Function> {
    let operators = operators(body)?;
    let mut function = Function::new(declared_locals(body)?);
    let mut replaced = 0;
    for (i, operator) in operators.iter().enumerate() {
        if let Operator::LocalSet { local_index } | Operator::LocalTee { local_index } = operator
            && *local_index == key
        {
            return Err(HashesError::KeyWritten.into());
        }
        copy(&mut function, operator)?;
        if let [
            Operator::I32Const { value: 907133923 },
            Operator::I32Add,
            Operator::LocalTee { local_index: a },
            Operator::LocalGet { local_index: b },
            Operator::I32Const { value: -1 },
            Operator::I32Eq,
            Operator::Select,
        ] = &operators[i.saturating_sub(6)..=i]
            && a == b
        {
            function.instructions().drop().local_get(key).call(to);
            replaced += 1;
        }
    }
    if replaced != 1 {
        return Err(HashesError::InlinedHashes(replaced).into());
    }
    Ok(function)
}

/// `body` with its one call of `from` calling `to` (same signature).
fn redirect_call(body: &wasmparser::FunctionBody<'_>, from: u32, to: u32) -> Result<Function> {
    let mut function = Function::new(declared_locals(body)?);
    let mut redirected = 0;
    for operator in &operators(body)? {
        match operator {
            Operator::Call { function_index } if *function_index == from => {
                function.instructions().call(to);
                redirected += 1;
            }
            other => copy(&mut function, other)?,
        }
    }
    if redirected != 1 {
        return Err(HashesError::Redirects(redirected).into());
    }
    Ok(function)
}

/// A function body's instructions.
fn operators<'a>(body: &wasmparser::FunctionBody<'a>) -> Result<Vec<Operator<'a>>> {
    let mut operators = Vec::new();
    let mut reader = body.get_operators_reader()?;
    while !reader.eof() {
        operators.push(reader.read()?);
    }
    Ok(operators)
}

/// Appends `operator` to `function` unchanged.
fn copy(function: &mut Function, operator: &Operator<'_>) -> Result<()> {
    let instruction = RoundtripReencoder.instruction(operator.clone())?;
    function.instruction(&instruction);
    Ok(())
}

/// A function body's local declarations, as wasm-encoder takes them.
fn declared_locals(body: &wasmparser::FunctionBody<'_>) -> Result<Vec<(u32, ValType)>> {
    let mut locals = Vec::new();
    for local in body.get_locals_reader()? {
        let (n, ty) = local?;
        locals.push((n, RoundtripReencoder.val_type(ty)?));
    }
    Ok(locals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_without_libpython_is_refused() {
        let mut component = wasm_encoder::Component::new();
        component.section(&wasm_encoder::ModuleSection(&wasm_encoder::Module::new()));
        let error = patch_component(&component.finish(), &[]).expect_err("no libpython");
        assert!(matches!(error, Error::Hashes(HashesError::NoLibpython)), "{error:?}");
        assert!(error.to_string().contains("libpython not found"), "{error}");
    }
}
