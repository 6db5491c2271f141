//! Python `pathlib.Path` type implementation.
//!
//! Provides a path object with both pure methods (no I/O) and filesystem methods
//! (require `OsAccess` implementation). Pure methods are handled directly by the VM,
//! while filesystem methods yield external function calls for the host to resolve.

use std::{
    cell::Cell,
    collections::hash_map::DefaultHasher,
    fmt::Write,
    hash::{Hash, Hasher},
};

// chainbox patch: imports for this file's patches (CHAINBOX.md)
use monty_types::{MontyPath, StringRepr, scan::SegmentPattern};
use smallvec::SmallVec;

use crate::{
    args::{ArgValues, FromArgs, LaxBool},
    builtins::open::builtin_open,
    bytecode::{CallResult, VM},
    defer_drop,
    exception_private::{ExcType, ExcTypeExt, RunResult, SimpleException},
    hash::HashValue,
    heap::{DropWithContext, Heap, HeapData, HeapId, HeapItem, HeapObjectRead, HeapReadOutput},
    intern::{Interns, StaticStrings},
    // chainbox patch (CHAINBOX.md)
    modules::os_path::posix,
    os_dispatch::{build_path_os_call, is_path_os_method, value_as_path_str},
    types::{
        CmpOrder, LazyHeapSet, List, PyTrait, Type, allocate_tuple,
        dir_scan::{glob_call, walk_call},
        str::allocate_string,
    },
    value::{EitherStr, Value},
};

/// Python `pathlib.Path` object representing a filesystem path.
///
/// Stores a normalized POSIX path string (a backslash is an ordinary
/// character, as in CPython's `PosixPath`).
///
/// The path is immutable - all operations that would modify the path return
/// new `Path` objects or strings.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Path {
    /// The normalized path string.
    path: String,
    /// Lazily-computed Python hash. Paths are immutable (all "modifying"
    /// operations return new `Path` objects). Skipped on serde — see
    /// [`super::Str::cached_hash`] for the rationale.
    #[serde(skip)]
    cached_hash: Cell<Option<HashValue>>,
}

impl PartialEq for Path {
    /// Compares only the path string — `cached_hash` is a pure optimisation.
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Path {
    /// Creates a new `Path` from a path string.
    ///
    /// The path is normalized:
    /// - Backslashes are converted to forward slashes
    /// - Trailing slashes are preserved for root paths only
    #[must_use]
    pub fn new(path: String) -> Self {
        Self {
            path: normalize_path(path),
            cached_hash: Cell::new(None),
        }
    }

    /// Returns the path as a string slice.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.path
    }

    /// The path's root: `//` (POSIX keeps exactly two leading slashes), `/`,
    /// or none for a relative path.
    #[must_use]
    pub fn root(&self) -> &str {
        root_of(&self.path)
    }

    /// The components after the root, `/`-separated; empty for `.` and a
    /// bare root.
    fn tail(&self) -> &str {
        if self.path == "." {
            ""
        } else {
            &self.path[self.root().len()..]
        }
    }

    /// Returns the final component of the path: empty for `.` and a root
    /// (chainbox patch: `Path('.').name` was `'.'`).
    #[must_use]
    pub fn name(&self) -> &str {
        self.tail().rsplit('/').next().unwrap_or_default()
    }

    /// Returns the path without its final component: the path itself for
    /// `.` and a root, `.` for a one-component relative path.
    #[must_use]
    pub fn parent(&self) -> String {
        let tail = self.tail();
        if tail.is_empty() {
            return self.path.clone();
        }
        match tail.rsplit_once('/') {
            Some((head, _)) => format!("{}{head}", self.root()),
            None if self.root().is_empty() => ".".to_owned(),
            None => self.root().to_owned(),
        }
    }

    /// The final component without its suffix (`os.path.splitext` of the
    /// name, as CPython 3.14: `'..'` and `.bashrc` have none, `'name.'` has `.`).
    #[must_use]
    pub fn stem(&self) -> &str {
        split_name(self.name()).0
    }

    /// The final component's suffix, with its dot; empty if it has none.
    #[must_use]
    pub fn suffix(&self) -> &str {
        split_name(self.name()).1
    }

    /// Every suffix of the final component, in order (`.tar`, `.gz`).
    #[must_use]
    pub fn suffixes(&self) -> Vec<&str> {
        let mut suffixes = Vec::new();
        let (mut stem, mut suffix) = split_name(self.name());
        while !suffix.is_empty() {
            suffixes.push(suffix);
            (stem, suffix) = split_name(stem);
        }
        suffixes.reverse();
        suffixes
    }

    /// Returns the path components: the root (if any), then each name.
    #[must_use]
    pub fn parts(&self) -> Vec<&str> {
        let root = self.root();
        let tail = self.tail();
        let names = tail.split('/').filter(|name| !name.is_empty());
        (!root.is_empty()).then_some(root).into_iter().chain(names).collect()
    }

    /// Returns `true` if the path is absolute (has a root).
    #[must_use]
    pub fn is_absolute(&self) -> bool {
        !self.root().is_empty()
    }

    /// Joins this path with another path component.
    ///
    /// If `other` is an absolute path, it replaces `self` entirely.
    #[must_use]
    pub fn joinpath(&self, other: &str) -> String {
        if other.starts_with('/') {
            normalize_path(other.to_owned())
        } else if self.path.ends_with('/') {
            normalize_path(format!("{}{}", self.path, other))
        } else {
            normalize_path(format!("{}/{}", self.path, other))
        }
    }

    /// `PosixPath('...')`, as CPython's errors name a path.
    fn repr(&self) -> String {
        format!("PosixPath({})", StringRepr(&self.path))
    }

    /// Returns a new path with the name changed.
    ///
    /// # Errors
    /// CPython 3.14's messages: an empty, `.` or separator-holding name is
    /// invalid; a path without a name (`.`, `/`) has nothing to change.
    pub fn with_name(&self, name: &str) -> Result<String, String> {
        if name.is_empty() || name == "." || name.contains('/') {
            return Err(format!("Invalid name {}", StringRepr(name)));
        }
        let tail = self.tail();
        if tail.is_empty() {
            return Err(format!("{} has an empty name", self.repr()));
        }
        let head = tail.rsplit_once('/').map_or("", |(head, _)| head);
        let separator = if head.is_empty() { "" } else { "/" };
        Ok(format!("{}{head}{separator}{name}", self.root()))
    }

    /// Returns a new path with the stem changed (keeps the suffix).
    ///
    /// # Errors
    /// As CPython: an empty stem when there is a suffix, and [`Self::with_name`]'s.
    pub fn with_stem(&self, stem: &str) -> Result<String, String> {
        let suffix = self.suffix();
        if suffix.is_empty() {
            self.with_name(stem)
        } else if stem.is_empty() {
            Err(format!("{} has a non-empty suffix", self.repr()))
        } else {
            self.with_name(&format!("{stem}{suffix}"))
        }
    }

    /// Returns a new path with the suffix changed (an empty one removes it).
    ///
    /// # Errors
    /// As CPython: a path without a stem, a suffix not starting with `.`
    /// (chainbox patch: monty added the dot), and [`Self::with_name`]'s.
    pub fn with_suffix(&self, suffix: &str) -> Result<String, String> {
        let stem = self.stem();
        if stem.is_empty() {
            Err(format!("{} has an empty name", self.repr()))
        } else if !suffix.is_empty() && !suffix.starts_with('.') {
            Err(format!("Invalid suffix {}", StringRepr(suffix)))
        } else {
            self.with_name(&format!("{stem}{suffix}"))
        }
    }

    /// Returns the path as a POSIX string (forward slashes).
    ///
    /// Since paths are already stored in POSIX format, this just returns the path.
    #[must_use]
    pub fn as_posix(&self) -> &str {
        &self.path
    }

    /// Creates a `Path` from the `Path()` constructor call.
    ///
    /// Accepts zero or more path segments that are joined together.
    /// - `Path()` returns `Path('.')`
    /// - `Path('a')` returns `Path('a')`
    /// - `Path('a', 'b', 'c')` returns `Path('a/b/c')`
    /// - If an absolute path appears, it replaces everything before it.
    pub fn init(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
        let pos_args = args.into_pos_only("Path", vm.heap)?;
        defer_drop!(pos_args, vm);

        let path = match pos_args.as_slice() {
            [] => {
                // No arguments, return Path('.')
                Self::new(".".to_owned())
            }
            [single] => {
                // Single argument, just convert to Path
                // chainbox patch (CHAINBOX.md)
                Self::new(path_segment(single, vm)?.to_owned())
            }
            [first_arg, rest @ ..] => {
                let base = Self::new(path_segment(first_arg, vm)?.to_owned());
                fold_joinpath(base, rest, vm)?
            }
        };
        Ok(Value::Ref(vm.heap.allocate(HeapData::Path(path))))
    }
}

/// Classmethod `Path.cwd()`, also callable through instances: returns the VM's
/// virtual working directory without a host round-trip.
///
/// A pure-Python classmethod in CPython, so its arity errors count `cls`:
/// one stray positional is `takes 1 positional argument but 2 were given`.
pub(crate) fn class_cwd(vm: &mut VM<'_>, args: ArgValues) -> RunResult<Value> {
    if !matches!(args, ArgValues::Empty) {
        let (pos, kwargs) = args.into_parts();
        let given = pos.len();
        let first_kwarg = kwargs.first_key(vm.heap, vm.interns);
        pos.drop_with(vm);
        kwargs.drop_with(vm);
        // CPython reports a stray keyword before the positional count.
        return Err(match first_kwarg? {
            // chainbox patch: CPython's `def cwd(cls)`: `cls=` is bound
            // already, any other keyword gets its "Did you mean".
            Some(key) if key == "cls" => ExcType::type_error_duplicate_arg("Path.cwd", "cls"),
            Some(key) => ExcType::type_error_unexpected_keyword_among("Path.cwd", &key, &["cls"]),
            None => ExcType::type_error(format!(
                "Path.cwd() takes 1 positional argument but {} were given",
                given + 1
            )),
        });
    }
    let path = Path::new(vm.env.cwd.to_string());
    Ok(Value::Ref(vm.heap.allocate(HeapData::Path(path))))
}

/// `Path.glob(pattern, *, case_sensitive=None, recurse_symlinks=False)`.
#[derive(FromArgs)]
#[from_args(name = "Path.glob", style = def)]
struct PathGlobArgs {
    #[from_args(static_string = "PatternAttr")]
    pattern: Value,
    #[from_args(kw_only, default = Value::None)]
    case_sensitive: Value,
    #[from_args(kw_only, default = LaxBool::new(false))]
    recurse_symlinks: LaxBool,
}

/// `Path.rglob(pattern, *, case_sensitive=None, recurse_symlinks=False)`.
#[derive(FromArgs)]
#[from_args(name = "Path.rglob", style = def)]
struct PathRglobArgs {
    #[from_args(static_string = "PatternAttr")]
    pattern: Value,
    #[from_args(kw_only, default = Value::None)]
    case_sensitive: Value,
    #[from_args(kw_only, default = LaxBool::new(false))]
    recurse_symlinks: LaxBool,
}

/// `Path.walk(top_down=True, on_error=None, follow_symlinks=False)`.
#[derive(FromArgs)]
#[from_args(name = "Path.walk", style = def)]
struct PathWalkArgs {
    #[from_args(default = LaxBool::new(true))]
    top_down: LaxBool,
    #[from_args(default = Value::None)]
    on_error: Value,
    #[from_args(default = LaxBool::new(false))]
    follow_symlinks: LaxBool,
}

/// `Path.glob()` / `Path.rglob()` on the receiver `base`: validates the
/// pattern as `pathlib` does, then hands it to [`glob_call`].
///
/// `rglob` is `glob` of `'**/' + pattern`. Any non-`None` `case_sensitive` is
/// truth-tested, and makes CPython list even literal pattern parts.
fn path_glob(
    base: &str,
    pattern: Value,
    recursive: bool,
    case_sensitive: Value,
    recurse_symlinks: LaxBool,
    vm: &mut VM<'_>,
) -> RunResult<CallResult> {
    defer_drop!(pattern, vm);
    defer_drop!(case_sensitive, vm);
    let pattern_text = match value_as_path_str(pattern, vm.heap, vm.interns) {
        Some(text) => text.to_owned(),
        // CPython's `bytes` handling trips over its own `str` separator.
        None if pattern.py_type(vm) == Type::Bytes => {
            return Err(ExcType::type_error("a bytes-like object is required, not 'str'"));
        }
        None => {
            return Err(ExcType::type_error(format!(
                "_path_splitroot_ex: path should be string, bytes or os.PathLike, not {}",
                pattern.py_type_name(vm)
            )));
        }
    };
    let case_sensitive = match case_sensitive {
        Value::None => None,
        value => Some(value.py_bool(vm)?),
    };
    let pattern_text = if recursive && !pattern_text.starts_with('/') {
        format!("**/{pattern_text}")
    } else {
        pattern_text
    };
    glob_call(base, &pattern_text, case_sensitive, recurse_symlinks.bool())
}

/// Extracts a string from a Value for use as a path.
fn extract_path_string<'a>(val: &Value, vm: &'a VM<'_>) -> RunResult<&'a str> {
    value_as_path_str(val, vm.heap, vm.interns)
        .ok_or_else(|| ExcType::type_error(format!("expected str or Path, got {}", val.py_type_name(vm))))
}

/// A path segment as `PurePath(...)`, `joinpath` and `match` read it,
/// with CPython's error for anything else (chainbox patch: upstream said
/// `expected str or Path, got int`).
fn path_segment<'a>(val: &Value, vm: &'a VM<'_>) -> RunResult<&'a str> {
    value_as_path_str(val, vm.heap, vm.interns).ok_or_else(|| {
        ExcType::type_error(format!(
            "argument should be a str or an os.PathLike object where __fspath__ returns a str, not '{}'",
            val.py_type_name(vm)
        ))
    })
}

/// `PurePath.match(path_pattern, *, case_sensitive=None)` (chainbox patch;
/// upstream had no `match`): a relative pattern matches from the right,
/// part by part, an anchored one the whole path; each part is an `fnmatch`
/// pattern (`**` acts as `*`, a leading dot is an ordinary character), as
/// CPython 3.14's `PurePath.match`.
fn path_match(path: &Path, pattern: &str, case_sensitive: bool) -> RunResult<bool> {
    let pattern = Path::new(pattern.to_owned());
    let pattern_parts = pattern.parts();
    if pattern_parts.is_empty() {
        return Err(SimpleException::new_msg(ExcType::ValueError, "empty pattern").into());
    }
    let path_parts = path.parts();
    if path_parts.len() < pattern_parts.len() || (path_parts.len() > pattern_parts.len() && pattern.is_absolute()) {
        return Ok(false);
    }
    Ok(path_parts
        .iter()
        .rev()
        .zip(pattern_parts.iter().rev())
        .all(|(part, pattern)| SegmentPattern::new(pattern, case_sensitive).matches_path_part(part)))
}

/// `PurePath.match(path_pattern, *, case_sensitive=None)`: a `def` in CPython.
#[derive(FromArgs)]
#[from_args(name = "PurePath.match", style = def)]
struct PathMatchArgs {
    path_pattern: Value,
    #[from_args(kw_only, default = Value::None)]
    case_sensitive: Value,
}

fn fold_joinpath(mut path: Path, parts: &[Value], vm: &VM<'_>) -> RunResult<Path> {
    for part in parts {
        path = Path::new(path.joinpath(path_segment(part, vm)?));
    }
    Ok(path)
}

/// Joins a `Path` with a path-like right operand for `Path.__truediv__`.
fn path_div(path: &Path, other: &Value, heap: &Heap, interns: &Interns) -> Option<Value> {
    let other = value_as_path_str(other, heap, interns)?;
    let result = path.joinpath(other);
    Some(Value::Ref(heap.allocate(HeapData::Path(Path::new(result)))))
}

/// Prepends a path-like left operand for `Path.__rtruediv__`.
fn path_rdiv(path: &Path, other: &Value, heap: &Heap, interns: &Interns) -> Option<Value> {
    let base = value_as_path_str(other, heap, interns)?;
    let result = Path::new(base.to_owned()).joinpath(path.as_str());
    Some(Value::Ref(heap.allocate(HeapData::Path(Path::new(result)))))
}

/// Normalizes a path string as CPython's `pathlib.PurePosixPath` does.
///
/// chainbox patch, as CPython: a backslash is an ordinary character (monty
/// turned it into a separator), exactly two leading slashes stay a root of
/// their own (`//a`), and an empty path is `.`. Empty and `.` components go;
/// `..` stays (resolving it needs the filesystem).
fn normalize_path(path: String) -> String {
    let root = root_of(&path);
    let mut result = String::with_capacity(path.len());
    result.push_str(root);
    for name in path.split('/').filter(|name| !name.is_empty() && *name != ".") {
        if result.len() > root.len() {
            result.push('/');
        }
        result.push_str(name);
    }
    if result.is_empty() {
        result.push('.');
    }
    result
}

/// The root a path string starts with: `//` for exactly two slashes, `/` for
/// one or three and more, none for a relative path.
fn root_of(path: &str) -> &str {
    if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    }
}

/// A final component split as `os.path.splitext` splits it.
fn split_name(name: &str) -> (&str, &str) {
    let (stem, _) = posix::splitext(name.as_bytes());
    // The split is at an ASCII `.`, so both halves are whole characters.
    name.split_at(stem.len())
}

impl Path {
    /// Resolves a known attribute by its `StaticStrings` variant.
    ///
    /// Returns `Some(value)` for recognized property names (`name`, `parent`,
    /// `stem`, `suffix`, `suffixes`, `parts`), or `None` if the variant doesn't
    /// correspond to a Path attribute. Used by `py_getattr` to share logic between
    /// the interned fast path and the heap string slow path.
    pub(crate) fn getattr_by_static(&self, ss: StaticStrings, heap: &Heap) -> Option<Value> {
        let v = match ss {
            StaticStrings::Name => allocate_string(self.name(), heap),
            // chainbox patch (CHAINBOX.md)
            StaticStrings::Parent => Value::Ref(heap.allocate(HeapData::Path(Self::new(self.parent())))),
            StaticStrings::Stem => allocate_string(self.stem(), heap),
            StaticStrings::Suffix => allocate_string(self.suffix(), heap),
            StaticStrings::Suffixes => {
                let suffixes = self.suffixes();
                let mut items = Vec::with_capacity(suffixes.len());
                for suffix in suffixes {
                    items.push(allocate_string(suffix, heap));
                }
                Value::Ref(heap.allocate(HeapData::List(List::new(items))))
            }
            StaticStrings::Parts => {
                let parts = self.parts();
                let mut items = SmallVec::with_capacity(parts.len());
                for part in parts {
                    items.push(allocate_string(part, heap));
                }
                allocate_tuple(items, heap)
            }
            _ => return None,
        };
        Some(v)
    }
}

impl<'h> PyTrait<'h> for HeapObjectRead<'h, Path> {
    fn py_type(&self, _vm: &VM<'h>) -> Type {
        Type::Path
    }

    fn py_len(&self, _vm: &VM<'h>) -> Option<usize> {
        // Paths don't have a length in Python
        None
    }

    fn py_eq_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<bool>> {
        let Some(HeapReadOutput::Path(other)) = other.read_heap(vm) else {
            return Ok(None);
        };
        Ok(Some(self.get(vm.heap).path == other.get(vm.heap).path))
    }

    fn py_hash(&self, vm: &mut VM<'h>) -> RunResult<Option<HashValue>> {
        let p = self.get(vm.heap);
        if let Some(cached) = p.cached_hash.get() {
            return Ok(Some(cached));
        }
        let mut hasher = DefaultHasher::new();
        p.as_str().hash(&mut hasher);
        let hash = HashValue::new(hasher.finish());
        p.cached_hash.set(Some(hash));
        Ok(Some(hash))
    }

    /// chainbox patch: paths order as CPython's `_parts_normcase`, their
    /// strings split at `/` (monty's were unorderable, so `sorted(paths)` failed).
    fn py_cmp(&self, other: &Self, vm: &mut VM<'h>) -> RunResult<CmpOrder> {
        let (a, b) = (self.get(vm.heap).as_str(), other.get(vm.heap).as_str());
        Ok(CmpOrder::from_total(Some(a.split('/').cmp(b.split('/')))))
    }

    fn py_bool(&self, _vm: &mut VM<'h>) -> RunResult<bool> {
        // Paths are always truthy (even empty paths)
        Ok(true)
    }

    fn py_truediv_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        Ok(path_div(self.get(vm.heap), other, vm.heap, vm.interns))
    }

    fn py_rtruediv_impl(&self, other: &Value, vm: &mut VM<'h>) -> RunResult<Option<Value>> {
        Ok(path_rdiv(self.get(vm.heap), other, vm.heap, vm.interns))
    }

    fn py_str(&self, vm: &mut VM<'h>) -> RunResult<Value> {
        Ok(allocate_string(self.get(vm.heap).as_str(), vm.heap))
    }

    fn py_repr_fmt(&self, f: &mut impl Write, vm: &mut VM<'h>, _heap_ids: &mut LazyHeapSet) -> RunResult<()> {
        // chainbox patch: the path as `repr(str)` writes it (`PosixPath("it's")`).
        Ok(f.write_str(&self.get(vm.heap).repr())?)
    }

    /// Handles attribute calls on Path objects, including both pure methods (no I/O)
    /// and OS methods that require host system access.
    ///
    /// OS methods yield calls to the host; `iterdir` retains the receiver's spelling
    /// so the resume path can restore it on each returned entry.
    /// Pure methods (is_absolute, joinpath, etc.) are handled directly.
    fn py_call_attr(&mut self, vm: &mut VM<'h>, attr: &EitherStr, args: ArgValues) -> RunResult<CallResult> {
        let Some(method) = attr.static_string(vm.interns) else {
            args.drop_with(vm);
            return Err(ExcType::attribute_error(Type::Path, attr.as_str(vm.interns)));
        };

        if is_path_os_method(method) {
            let path = MontyPath::new(self.get(vm.heap).as_str().to_owned());
            return build_path_os_call(method, path, args, vm);
        }

        // Pure methods (no I/O)
        let value = match method {
            StaticStrings::Cwd => class_cwd(vm, args),
            StaticStrings::Glob => {
                let PathGlobArgs {
                    pattern,
                    case_sensitive,
                    recurse_symlinks,
                } = PathGlobArgs::from_args(args, vm)?;
                let base = self.get(vm.heap).as_str().to_owned();
                return path_glob(&base, pattern, false, case_sensitive, recurse_symlinks, vm);
            }
            StaticStrings::Rglob => {
                let PathRglobArgs {
                    pattern,
                    case_sensitive,
                    recurse_symlinks,
                } = PathRglobArgs::from_args(args, vm)?;
                let base = self.get(vm.heap).as_str().to_owned();
                return path_glob(&base, pattern, true, case_sensitive, recurse_symlinks, vm);
            }
            StaticStrings::Walk => {
                let PathWalkArgs {
                    top_down,
                    on_error,
                    follow_symlinks,
                } = PathWalkArgs::from_args(args, vm)?;
                let top = self.get(vm.heap).as_str().to_owned();
                return walk_call(top, true, top_down.bool(), on_error, follow_symlinks.bool(), vm);
            }
            // chainbox patch (CHAINBOX.md)
            StaticStrings::Match => {
                let PathMatchArgs {
                    path_pattern,
                    case_sensitive,
                } = PathMatchArgs::from_args(args, vm)?;
                defer_drop!(path_pattern, vm);
                defer_drop!(case_sensitive, vm);
                let pattern = path_segment(path_pattern, vm)?.to_owned();
                let case_sensitive = match case_sensitive {
                    Value::None => true,
                    value => value.py_bool(vm)?,
                };
                Ok(Value::Bool(path_match(self.get(vm.heap), &pattern, case_sensitive)?))
            }
            StaticStrings::IsAbsolute => {
                args.check_zero_args("is_absolute", vm.heap)?;
                Ok(Value::Bool(self.get(vm.heap).is_absolute()))
            }
            StaticStrings::Joinpath => {
                let pos_args = args.into_pos_only("joinpath", vm.heap)?;
                defer_drop!(pos_args, vm);
                let path = fold_joinpath(self.get(vm.heap).clone(), pos_args.as_slice(), vm)?;
                Ok(Value::Ref(vm.heap.allocate(HeapData::Path(path))))
            }
            StaticStrings::WithName => {
                let name_val = args.get_one_arg("with_name", vm.heap)?;
                defer_drop!(name_val, vm);
                let name = extract_path_string(name_val, vm)?.to_owned();
                let result = self
                    .get(vm.heap)
                    .with_name(&name)
                    .map_err(|e| SimpleException::new_msg(ExcType::ValueError, &e))?;
                Ok(Value::Ref(vm.heap.allocate(HeapData::Path(Path::new(result)))))
            }
            StaticStrings::WithStem => {
                let stem_val = args.get_one_arg("with_stem", vm.heap)?;
                defer_drop!(stem_val, vm);
                let stem = extract_path_string(stem_val, vm)?.to_owned();
                let result = self
                    .get(vm.heap)
                    .with_stem(&stem)
                    .map_err(|e| SimpleException::new_msg(ExcType::ValueError, &e))?;
                Ok(Value::Ref(vm.heap.allocate(HeapData::Path(Path::new(result)))))
            }
            StaticStrings::WithSuffix => {
                let suffix_val = args.get_one_arg("with_suffix", vm.heap)?;
                defer_drop!(suffix_val, vm);
                let suffix = extract_path_string(suffix_val, vm)?.to_owned();
                let result = self
                    .get(vm.heap)
                    .with_suffix(&suffix)
                    .map_err(|e| SimpleException::new_msg(ExcType::ValueError, &e))?;
                Ok(Value::Ref(vm.heap.allocate(HeapData::Path(Path::new(result)))))
            }
            StaticStrings::AsPosix | StaticStrings::Fspath => {
                args.check_zero_args(method.into(), vm.heap)?;
                Ok(allocate_string(self.get(vm.heap).as_posix(), vm.heap))
            }
            StaticStrings::Open => {
                // `Path.open(mode='r', ...)` is `open(self, mode, ...)` with
                // `self` prepended as the implicit `file` argument. Reuses
                // `builtin_open`'s mode/kwarg validation (including rejection
                // of `+`/`x` modes and non-default `buffering`/`encoding`/
                // `errors`/`newline`) so the two entry points stay in sync.
                //
                // chainbox patch: CPython's `Path.open(self, mode='r',
                // buffering=-1, encoding=None, errors=None, newline=None)` is
                // a `def`, so a keyword it lacks is its own error, with
                // CPython's "Did you mean" (`open()` takes `closefd`/`opener`).
                const PARAMS: &[&str] = &["self", "mode", "buffering", "encoding", "errors", "newline"];
                let unknown = match &args {
                    ArgValues::Kwargs(kwargs) | ArgValues::ArgsKargs { kwargs, .. } => {
                        kwargs.first_key_not_in(&PARAMS[1..], vm.heap, vm.interns)
                    }
                    _ => None,
                };
                if let Some(key) = unknown {
                    args.drop_with(vm);
                    return Err(if key == "self" {
                        ExcType::type_error_duplicate_arg("Path.open", "self")
                    } else {
                        ExcType::type_error_unexpected_keyword_among("Path.open", &key, PARAMS)
                    });
                }
                // The `inc_ref` is required because the prepended `Value::Ref`
                // is dropped by `builtin_open` via `defer_drop!` once the path
                // string has been extracted, balancing the refcount.
                let args = args.prepend(self.clone_value(vm.heap));
                return builtin_open(vm, args);
            }
            _ => {
                args.drop_with(vm);
                return Err(ExcType::attribute_error(Type::Path, attr.as_str(vm.interns)));
            }
        };
        value.map(CallResult::Value)
    }

    fn py_getattr(&self, attr: &EitherStr, vm: &mut VM<'h>) -> RunResult<Option<CallResult>> {
        // Fast path: interned strings can be matched by ID without string comparison
        if let Some(ss) = attr.static_string(vm.interns) {
            if let Some(v) = self.get(vm.heap).getattr_by_static(ss, vm.heap) {
                return Ok(Some(CallResult::Value(v)));
            }
            return Err(ExcType::attribute_error(Type::Path, attr.as_str(vm.interns)));
        }
        // Slow path: heap-allocated strings need string comparison
        let attr_str = attr.as_str(vm.interns);
        let ss = match attr_str {
            "name" => StaticStrings::Name,
            "parent" => StaticStrings::Parent,
            "stem" => StaticStrings::Stem,
            "suffix" => StaticStrings::Suffix,
            "suffixes" => StaticStrings::Suffixes,
            "parts" => StaticStrings::Parts,
            _ => return Err(ExcType::attribute_error(Type::Path, attr_str)),
        };
        let v = self
            .get(vm.heap)
            .getattr_by_static(ss, vm.heap)
            .expect("matched attribute must produce a value");
        Ok(Some(CallResult::Value(v)))
    }
}

impl HeapItem for Path {
    fn py_dec_ref_ids(&mut self, _stack: &mut Vec<HeapId>) {
        // Path doesn't contain heap references, nothing to do
    }
}
