//! What monty may run: the allowlist, and the small tables of the context
//! checks.
//!
//! [`allowlist`] (the file `allowlist.txt`) is the one table the router reads: a script runs on monty only
//! when every key its walk reports ([`super::walk`]) is here. A key names
//! what a script writes: the kind of a statement or expression
//! (`stmt:For`, `expr:Lambda`), a builtin, import, module member or
//! attribute, called (`len()`, `json.dumps()`, `.append()`) or read as a
//! value (`len`, `math.pi`, `.year`), an import (`import json`), a keyword
//! argument by what it is passed to (`sorted(key=)`, `.split(maxsplit=)`), or
//! a special method a class defines (`def __eq__`).
//!
//! Every entry is backed by the differential corpus: `cargo test` checks
//! (`python_choice::tests::every_allowlist_entry_has_a_corpus_case`) that
//! each key is used by a corpus case that runs on monty and gives CPython's
//! answer (`tests/it/corpus.rs`), so an entry cannot be added without a case
//! that shows monty agrees. Anything not here runs on CPython: unknown is
//! never monty. To let a construct through to monty, write a corpus case
//! that uses it (`tests/corpus/cases/`, blessed by `reference.py`) and add
//! its keys; when monty and CPython disagree on it, route it (leave it out)
//! instead of patching the vendored monty.

/// The allowlist's text: one key per line, sorted, `#` comments.
const ALLOWLIST: &str = include_str!("allowlist.txt");

/// The allowlist's keys, in order.
pub fn allowlist() -> &'static [&'static str] {
    static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        ALLOWLIST
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .collect()
    });
    &KEYS
}

/// Calls that await (or schedule) the coroutine objects passed to them.
pub(super) const COROUTINE_TAKERS: &[&str] = &[
    "gather",
    "run",
    "create_task",
    "ensure_future",
    "wait_for",
    "shield",
    "wait",
];

// --- the tables of the context checks ---------------------------------------

/// Where a script meets an exception monty names unlike CPython: its
/// `ExcType` (vendored monty-types `src/exceptions.rs`) serializes these with
/// a module (`json.JSONDecodeError`, `re.PatternError`,
/// `decimal.InvalidOperation`, `_csv.Error`, `binascii.Error`,
/// `tomllib.TOMLDecodeError`), and that name is their `repr()` and the
/// chain's error type, where CPython says `JSONDecodeError(...)`. Each
/// module with the members that raise one (`None`: every member); a
/// script that uses none of them (`json.dumps` alone) meets none. (A file's
/// `io.UnsupportedOperation` is alike, but `open` is everywhere and the
/// error rare: files are left out.)
pub(super) const RENAMED_EXCEPTION_SOURCES: &[(&str, Option<&[&str]>)] = &[
    ("json", Some(&["loads", "load", "JSONDecodeError"])),
    ("tomllib", None),
    ("re", None),
    (
        "base64",
        Some(&[
            "a85decode",
            "b16decode",
            "b32decode",
            "b32hexdecode",
            "b64decode",
            "b85decode",
            "decodebytes",
            "standard_b64decode",
            "urlsafe_b64decode",
            "z85decode",
        ]),
    ),
    ("binascii", None),
    ("csv", None),
    ("decimal", None),
];

/// The attributes of a caught exception monty answers as CPython does:
/// `args`, `__class__`, and an OSError's fields (vendored monty-types
/// `OsErrorData`, read back from the host's message). Every other one is
/// missing on monty: `msg`, `doc`, `pos`, `lineno`, `colno` of a
/// JSONDecodeError or re.PatternError, `name` of a NameError, `value` of
/// StopIteration, `add_note`, `with_traceback` (vendored monty's
/// `ExcTypeExt::call` keeps only the args).
pub(super) const CAUGHT_EXCEPTION_ATTRIBUTES: &[&str] =
    &["args", "__class__", "errno", "strerror", "filename", "filename2"];

/// OSError and the subclasses monty has (the others are missing builtins).
pub(super) const OS_ERRORS: &[&str] = &[
    "OSError",
    "FileNotFoundError",
    "FileExistsError",
    "IsADirectoryError",
    "NotADirectoryError",
    "PermissionError",
    "TimeoutError",
];

/// The encodings monty's codecs know, as CPython normalizes their names
/// (`src/codecs.rs` `Codec::find_normalized`, with chainbox's latin-1): an
/// encoding named by a literal outside this list sends the script to
/// CPython. Checked against monty by `it cpython::the_scans_encodings_are_what_monty_has`.
pub const MONTY_ENCODINGS: &[&str] = &[
    "utf_8",
    "utf8",
    "utf",
    "u8",
    "cp65001",
    "utf8_ucs2",
    "utf8_ucs4",
    "ascii",
    "646",
    "us",
    "us_ascii",
    "cp367",
    "ibm367",
    "csascii",
    "ansi_x3.4_1968",
    "ansi_x3_4_1968",
    "ansi_x3.4_1986",
    "iso646_us",
    "iso_646.irv_1991",
    "iso_ir_6",
    "utf_16",
    "u16",
    "utf16",
    "utf_16_le",
    "utf_16le",
    "unicodelittleunmarked",
    "utf_16_be",
    "utf_16be",
    "unicodebigunmarked",
    "utf_32",
    "u32",
    "utf32",
    "utf_32_le",
    "utf_32le",
    "utf_32_be",
    "utf_32be",
    "latin_1",
    "latin1",
    "latin",
    "l1",
    "iso8859_1",
    "iso_8859_1",
    "iso8859",
    "8859",
    "cp819",
    "ibm819",
    "csisolatin1",
    "iso_ir_100",
    "iso_8859_1_1987",
];

/// The `re` functions whose first argument is a pattern.
pub(super) const RE_PATTERN_TAKERS: &[&str] = &[
    "compile",
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "split",
];

/// The flags of `re`, CPython's `RegexFlag` members.
pub(super) const RE_FLAGS: &[&str] = &[
    "A",
    "ASCII",
    "DEBUG",
    "DOTALL",
    "I",
    "IGNORECASE",
    "L",
    "LOCALE",
    "M",
    "MULTILINE",
    "NOFLAG",
    "S",
    "U",
    "UNICODE",
    "VERBOSE",
    "X",
];

/// Methods that consume an iterable argument in Rust (monty cannot read a
/// file from the host in the middle of one).
pub(super) const FILE_CONSUMING_METHODS: &[&str] = &[
    "join",
    "extend",
    "extendleft",
    "update",
    "fromkeys",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "intersection_update",
    "difference_update",
    "symmetric_difference_update",
    "issubset",
    "issuperset",
    "isdisjoint",
    "writelines",
];

/// The callables that take a generator expression as their only argument and
/// consume all of it before anything else happens, so an eager list gives
/// the same answer: builtins (unless the script rebinds the name),
/// `str.join`, `list.extend`, `set.update`/`dict.update`, `Counter`,
/// `math.fsum`/`math.prod` (by the name they are called by), and `*(…)`
/// unpacked into a call or display. `min`/`max`/`sum` compare or add as they go, so the one order
/// that differs is which of two errors comes first, when an element raises
/// after two others fail to compare or add.
pub(super) const WHOLE_CONSUMERS: &[&str] = &[
    "sum",
    "min",
    "max",
    "sorted",
    "list",
    "tuple",
    "set",
    "frozenset",
    "dict",
    "bytes",
];

pub(super) const WHOLE_CONSUMER_METHODS: &[&str] = &["join", "extend", "update", "Counter", "fsum", "prod"];

/// The builtins that return a list on monty and a lazy iterator on CPython.
pub(super) const EAGER_ITERATORS: &[&str] = &["zip", "map", "filter", "enumerate", "reversed"];

/// Of [`EAGER_ITERATORS`], those that only pair, number or reverse items, so
/// that building them eagerly is invisible wherever all of them is used.
pub(super) const PURE_ITERATORS: &[&str] = &["zip", "enumerate", "reversed"];

/// Functions `map`/`filter` may apply eagerly in a loop: they neither raise
/// on a script's data nor print (`None` is `filter`'s truth test).
pub(super) const EAGER_SAFE_FUNCTIONS: &[&str] = &["str", "repr", "bool", "None"];
