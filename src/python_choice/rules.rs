//! The rules of the scan: [`RULES`], which names each rule and says why its
//! construct needs CPython and where monty's source shows it, and the
//! `rule_*` checks, each of which looks at one token of a [`Scan`] and reports
//! what it found there, with the few helpers only they use. A rule that starts
//! from a new kind of token must also be let through by `may_fire` in the
//! parent module. The rules are kept apart from the data they read (the
//! tables) and from the view of the script they read (the scan), so that a
//! rule can be added, changed or dropped by reading this file.

use super::scan::{Binding, Scan, attributes_not_values, is_dotted, missing_builtins};
use super::tables::{
    ATTRIBUTES_NOT_VALUES, CAUGHT_EXCEPTION_ATTRIBUTES, COROUTINE_TAKERS, EAGER_ITERATORS, EAGER_SAFE_FUNCTIONS,
    FILE_CONSUMING_METHODS, MISSING_METHODS, MODULE_MEMBERS, MONTY_ENCODINGS, MONTY_MODULES, OS_ERRORS, PURE_ITERATORS,
    RE_FLAGS, RE_PATTERN_TAKERS, REJECTED_KEYWORDS, SPECIAL_ATTRIBUTES, TYPE_ATTRIBUTE_VALUES, TYPE_ATTRIBUTES,
    USER_SPECIAL_METHODS, WHOLE_CONSUMER_METHODS, WHOLE_CONSUMERS,
};
use super::tokens::{Kind, Token};
use super::{LOOKAHEAD, Needs};

// --- the rules ---------------------------------------------------------------

/// One rule of the scan: looks at the token at an index and reports what it found there.
pub(super) struct Rule {
    /// A short name, for tests and reading.
    pub(super) name: &'static str,
    /// The check, run at every token.
    pub(super) check: fn(&Scan<'_>, usize) -> Option<Needs>,
}

/// Every rule of the scan, in one place. Each entry says why its construct
/// needs CPython and where monty's source shows it.
pub(super) const RULES: &[Rule] = &[
    // `import X` / `from X import …` of a module outside MONTY_MODULES: monty
    // asks the host, chainbox serves none, ModuleNotFoundError
    // (src/bytecode/vm/mod.rs `load_module`, src/run.rs "An import nobody
    // serves is a missing module"). Includes `from X import *`, which
    // src/parse.rs rejects: "Wildcard imports … are not supported".
    Rule {
        name: "import",
        check: rule_import,
    },
    // `module.name` where monty's module lacks `name` (AttributeError), e.g.
    // `asyncio.create_task`, `dataclasses.asdict`.
    Rule {
        name: "module_attribute",
        check: rule_module_attribute,
    },
    // `str.upper`, `int.from_bytes`, `datetime.utcnow`, …: attributes of a type
    // object monty's `Type::class_getattr` / `call_class_method` lack.
    Rule {
        name: "type_attribute",
        check: rule_type_attribute,
    },
    // Keyword arguments monty's function rejects (REJECTED_KEYWORDS).
    Rule {
        name: "keyword_argument",
        check: rule_keyword_argument,
    },
    // An exception class whose constructor CPython gives more than `args`:
    // `OSError(errno, strerror[, filename])` (`str()` is `[Errno 2] …`, and
    // the errno picks a subclass, by WASI's numbers in the CPython guest),
    // `UnicodeDecodeError(…)`, `SyntaxError(msg, details)`,
    // `json.JSONDecodeError(msg, doc, pos)`, and the keywords of
    // `AttributeError`, `NameError` and `ImportError`. monty keeps only the
    // args (vendored monty's `ExcTypeExt::call`, CHAINBOX.md).
    Rule {
        name: "exception_arguments",
        check: rule_exception_arguments,
    },
    // Syntax src/parse.rs rejects with NotImplementedError: `yield`,
    // `yield from`, `del` of a module's attribute, class bases, `async for`/`async with`/async
    // comprehensions, `except*`, `type X = …`, `@=` (src/bytecode/compiler.rs),
    // t-strings, several `**` unpackings in one call.
    Rule {
        name: "syntax",
        check: rule_syntax,
    },
    // A class body holding anything but methods, `name = value`,
    // `name: T = value`, `pass` and strings (decorated methods included):
    // src/parse.rs `parse_class_def`, "method decorators
    // (classmethod/staticmethod/property)" and "class bodies containing
    // anything other than methods and simple class variables".
    Rule {
        name: "class_body",
        check: rule_class_body,
    },
    // The script's own `async def` called without `await` (outside a gather or
    // task): CPython warns "coroutine … was never awaited", monty stays silent
    // (known_differences.toml `never_awaited_user_coroutine`).
    Rule {
        name: "unawaited_own_coroutine",
        check: rule_unawaited_own_coroutine,
    },
    // `s.encode('cp1252')`, `b.decode(encoding='koi8_r')`: an encoding
    // monty's codecs lack is its LookupError where CPython answers
    // (src/codecs.rs `Codec::find_normalized`; MONTY_ENCODINGS).
    Rule {
        name: "encoding",
        check: rule_encoding,
    },
    // `re.findall(rb'\d+', data)`: monty's `re` matches str only ("first
    // argument must be string or compiled pattern", src/modules/re.rs), so a
    // bytes pattern goes to CPython: a bytes literal, `bytes(…)` or an
    // expression ending in `.encode(…)`. (A bytes pattern held in a name
    // stays a TypeError on monty: the scan cannot see its type.)
    Rule {
        name: "bytes_pattern",
        check: rule_bytes_pattern,
    },
    // `float('nan')`: each call is a new object in CPython, and containers
    // compare items by identity before `==`, so two NaNs are two keys and
    // `[nan1] == [nan2]` is False; monty's floats are values with no
    // identity, so every NaN is the same one there (`xs.count(float('nan'))`
    // counts them all). `math.nan`, one object, is alike on both.
    Rule {
        name: "nan_identity",
        check: rule_nan_identity,
    },
    // `print(..., file=f)` to anything but `sys.stdout`/`sys.stderr`: monty's
    // print raises "print() 'file' argument must be sys.stdout or
    // sys.stderr" (src/builtins/print.rs), so writing a file with print
    // goes to CPython.
    Rule {
        name: "print_to_file",
        check: rule_print_to_file,
    },
    // `open(path, 'x')`, `open(path, 'r+')`, `path.open('w+')`: monty's files
    // refuse exclusive creation and the update modes with a ValueError
    // (vendored monty-types `FileMode`, src/types/file.rs); a mode that is
    // not a string literal may be one of them.
    Rule {
        name: "file_mode",
        check: rule_file_mode,
    },
    // `''.join(f)`, `lines.extend(f)`, `seen.update(f)`, `dict.fromkeys(f)`,
    // `[*f]`, `a, b = f`, `'x\n' in f` on a file not yet read: monty reads a
    // file from the host only in a `for` loop, `next()` or a builtin that
    // consumes an iterable (vendored src/types/file.rs, "iterating an unread
    // _io.TextIOWrapper is only supported by 'for' loops and next()").
    Rule {
        name: "file_consumed_whole",
        check: rule_file_consumed_whole,
    },
    // `re.I` as a value (`repr(re.I)`, `flags = re.I | re.M`, `[re.S]`):
    // monty's flags are plain ints (`repr(re.I)` is `2`, `str(re.I | re.M)`
    // `10`; src/modules/re.rs), CPython's a `RegexFlag` (`re.IGNORECASE`).
    // As an argument of a `re` function it is only a number on both.
    Rule {
        name: "re_flag_value",
        check: rule_re_flag_value,
    },
    // `gather(own(1), tool())`: CPython starts gathered awaitables in order,
    // each as a task, so `own`'s first tool call opens its trace record
    // before `tool()`'s; monty awaits a gather's tool calls as it commits the
    // gather and runs its coroutines after, so the records come out in
    // another order (src/bytecode/vm/async_exec.rs `step_gather_commit`).
    Rule {
        name: "gather_start_order",
        check: rule_gather_start_order,
    },
    // A generator expression not consumed whole at once: monty evaluates
    // every generator expression eagerly into a list (src/bytecode/compiler.rs
    // compiles it as a list comprehension), so `next(x for x in xs if p(x))`
    // is "'list' object is not an iterator", `any(r['s'] > 0 for r in rows)`
    // evaluates rows after the first match (a KeyError CPython never meets),
    // a stored one is not exhausted by its first use, and side effects
    // interleave differently. Found by the generated programs (stop 30).
    Rule {
        name: "generator_expression",
        check: rule_generator_expression,
    },
    // `zip`, `map`, `filter`, `enumerate`, `reversed` return a list on
    // monty, a lazy iterator on CPython: `e = enumerate(xs); next(e)` is
    // "'list' object is not an iterator", a stored `zip` is not exhausted by
    // its first use, `print(zip(a, b))` shows a list, and `map(f, xs)` calls
    // `f` on every item before the loop over it starts, so a loop that stops
    // early, or an `f` that raises or prints, ends differently. Found by the
    // generated programs (stop 31).
    Rule {
        name: "eager_iterator",
        check: rule_eager_iterator,
    },
    // A builtin monty lacks (MISSING_BUILTINS), unless the script binds the name itself.
    Rule {
        name: "missing_builtin",
        check: rule_missing_builtin,
    },
    // `eval` / `exec`: monty has them (src/builtins/eval_exec.rs), but the
    // code they run is a runtime string this scan cannot see.
    Rule {
        name: "eval_exec",
        check: rule_eval_exec,
    },
    // `def __lt__` & co. in a class: monty never calls them (USER_SPECIAL_METHODS).
    Rule {
        name: "special_method",
        check: rule_special_method,
    },
    // `obj.__dict__`, `cls.__subclasses__()`, …: missing (SPECIAL_ATTRIBUTES).
    Rule {
        name: "special_attribute",
        check: rule_special_attribute,
    },
    // `f.calls = 0` on a function the script defines: monty's functions
    // have no `__dict__` ("'function' object has no attribute 'calls' and
    // no __dict__ for setting new attributes").
    Rule {
        name: "function_attribute",
        check: rule_function_attribute,
    },
    // `s.translate(t)`, `d.toordinal()`, …: MISSING_METHODS.
    Rule {
        name: "missing_method",
        check: rule_missing_method,
    },
    // `key=d.get`, `f = s.upper`, `r.start`: ATTRIBUTES_NOT_VALUES.
    Rule {
        name: "method_value",
        check: rule_method_value,
    },
    // `hasattr`/`getattr` of what may be a builtin's method: monty's
    // `hasattr("a", "upper")` is False.
    Rule {
        name: "builtin_attribute_lookup",
        check: rule_builtin_attribute_lookup,
    },
    // `except ValueError as e: e.pos`: of a standard exception's
    // attributes monty answers only `args`, `__class__` and an OSError's
    // fields as CPython does (CAUGHT_EXCEPTION_ATTRIBUTES). The others are
    // missing (`e.msg`, `e.pos` of a JSONDecodeError, `e.add_note(...)`:
    // vendored monty's `ExcTypeExt::call` keeps only the args), so a
    // script that reads one fails, or silently takes its `getattr` default.
    Rule {
        name: "caught_exception_attribute",
        check: rule_caught_exception_attribute,
    },
    // `errors.append(e)`, `repr(e)`, `f"{e!r}"` of a caught exception in a
    // script that may meet one monty names with its module
    // (RENAMED_EXCEPTION_SOURCES: `json.loads`, `re`, `decimal`, …): monty's repr is
    // `json.JSONDecodeError('…')`, CPython's `JSONDecodeError('…')`. Only
    // `str(e)`, `print(e)`, `f"{e}"`, `type(e)`, `isinstance(e, …)` and
    // `raise … from e` show it alike.
    Rule {
        name: "renamed_exception_shown",
        check: rule_renamed_exception_shown,
    },
    // `path.read_text(encoding="utf-8")`, `path.write_text(s, encoding=…)`:
    // monty's `Path.read_text` takes no argument and `write_text` only the
    // text ("read_text() takes no keyword arguments"; vendored monty
    // src/types/path.rs).
    Rule {
        name: "path_text_arguments",
        check: rule_path_text_arguments,
    },
    // Class rules monty takes and does not enforce: `__slots__` (monty
    // lets an instance take any attribute) and private names (`self.__token`
    // is not mangled, so `obj.__token` outside the class reads it where
    // CPython raises AttributeError).
    Rule {
        name: "class_rule_not_enforced",
        check: rule_class_rule_not_enforced,
    },
];

fn rule_import(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name || !(token.text == "import" || token.text == "from") {
        return None;
    }
    let statement = scan.import_at(at)?;
    if statement.relative {
        return Some(Needs::Feature {
            what: "uses a relative import",
            line: token.line,
        });
    }
    if !MONTY_MODULES.contains(&statement.module.as_str()) {
        return Some(Needs::Module {
            module: statement.module,
            line: token.line,
        });
    }
    if statement.wildcard {
        return Some(Needs::Feature {
            what: "uses `from … import *`, which monty does not support",
            line: token.line,
        });
    }
    for name in &statement.names {
        if !module_has(&statement.module, name) {
            return Some(Needs::ModuleMember {
                module: statement.module,
                member: name.clone(),
                line: token.line,
            });
        }
    }
    None
}

fn rule_module_attribute(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (path, mut next) = scan.bound_reference(at)?;
    let mut module = match path {
        Binding::Module(module) => module.as_str(),
        Binding::Member(..) => return None,
    };
    // Walk `a.b.c` while it stays inside modules (`os.path.join`).
    while let Some(member) = scan.attribute_after(next) {
        if !module_has(module, member) {
            return Some(Needs::ModuleMember {
                module: module.to_owned(),
                member: member.to_owned(),
                line: scan.tokens[at].line,
            });
        }
        module = MONTY_MODULES.iter().find(|m| is_dotted(m, module, member))?;
        next += 2;
    }
    None
}

fn rule_type_attribute(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    // Every form this rule knows (`str.x`, `mod.type.x`, `type.x` imported
    // from a module) starts with a name followed by a dot: most names are
    // not, and cost nothing more.
    if token.kind != Kind::Name || scan.follows_dot(at) || scan.tokens.get(at + 1).is_none_or(|t| t.text != ".") {
        return None;
    }
    // The type the name (or `module.name`) stands for — (module, name), the
    // module empty for a builtin — and where its attribute starts.
    let ((module, written), next) = if let Some((binding, next)) = scan.bound_reference(at) {
        match binding {
            Binding::Member(module, member) => ((module.as_str(), member.as_str()), next),
            Binding::Module(module) => ((module.as_str(), scan.attribute_after(next)?), next + 2),
        }
    } else if !scan.bound.contains(token.text) {
        (("", token.text), at + 1)
    } else {
        return None;
    };
    let type_is = |name: &str| match module {
        "" => name == written,
        module => is_dotted(name, module, written),
    };
    let allowed = TYPE_ATTRIBUTES.iter().find(|(name, _)| type_is(name))?.1;
    let attribute = scan.attribute_after(next)?;
    if attribute == "__name__" {
        return None;
    }
    if allowed.contains(&attribute) {
        let called = scan.tokens.get(next + 2).is_some_and(|t| t.text == "(");
        return (!called && !TYPE_ATTRIBUTE_VALUES.contains(&attribute)).then_some(Needs::Feature {
            what: "reads a type's class method as a value (`f = int.from_bytes`), which monty has only as a call",
            line: token.line,
        });
    }
    Some(Needs::TypeAttribute {
        type_name: written.to_owned(),
        attribute: attribute.to_owned(),
        line: token.line,
    })
}

fn rule_keyword_argument(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    let (_, rejected) = REJECTED_KEYWORDS.iter().find(|(name, _)| *name == function)?;
    let keyword = scan.keyword_arguments(at).find(|keyword| rejected.rejects(keyword))?;
    Some(Needs::KeywordArgument {
        function: function.trim_start_matches("builtins.").to_owned(),
        keyword: keyword.to_owned(),
        line: token.line,
    })
}

fn rule_exception_arguments(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    let name = function.strip_prefix("builtins.");
    let arguments = || scan.arguments(at);
    // A `*args` argument may hold any number of arguments.
    let several = || {
        arguments().count() >= 2 || arguments().any(|range| scan.tokens.get(range.start).is_some_and(|t| t.text == "*"))
    };
    let what = match (name, function) {
        (Some(name), _) if OS_ERRORS.contains(&name) && several() => {
            "builds an OSError from several arguments (errno, strerror, filename)"
        }
        (Some("SyntaxError"), _) if several() => "builds a SyntaxError from several arguments",
        (Some("UnicodeDecodeError" | "UnicodeEncodeError"), _) if arguments().next().is_some() => {
            "builds a UnicodeDecodeError or UnicodeEncodeError"
        }
        (_, "json.JSONDecodeError" | "tomllib.TOMLDecodeError") if arguments().next().is_some() => {
            "builds a JSONDecodeError or TOMLDecodeError"
        }
        (Some("AttributeError" | "NameError" | "ImportError" | "ModuleNotFoundError"), _)
            if scan.keyword_arguments(at).next().is_some() || scan.double_star_unpackings(at) > 0 =>
        {
            "passes keyword arguments to an exception class"
        }
        _ => return None,
    };
    Some(Needs::Feature { what, line: token.line })
}

/// Whether the `del` statement at `at` has a target `m.x` on an imported
/// name `m`.
fn deletes_module_attribute(scan: &Scan<'_>, at: usize) -> bool {
    let mut i = at + 1;
    while let Some(token) = scan.tokens.get(i) {
        if token.starts_line || token.text == ";" {
            return false;
        }
        if token.kind == Kind::Name
            && !scan.follows_dot(i)
            && scan.imports.contains(token.text)
            && scan.tokens.get(i + 1).is_some_and(|t| t.text == ".")
        {
            return true;
        }
        i += 1;
    }
    false
}

fn rule_syntax(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    let next = scan.tokens.get(at + 1).map(|t| t.text);
    let what = match (token.kind, token.text) {
        (Kind::Name, "yield") => "uses `yield` (generators)",
        // monty runs `del` (names, items, attributes; vendored monty's
        // CHAINBOX.md), but its modules' attributes cannot be deleted.
        (Kind::Name, "del") if deletes_module_attribute(scan, at) => "deletes a module's attribute (`del m.x`)",
        (Kind::Name, "del") => return None,
        (Kind::Name, "class") => {
            // `class X(Base):`; `class X():` has no base and monty takes it.
            let paren = scan.tokens.get(at + 2)?;
            let after = scan.tokens.get(at + 3)?;
            if paren.text == "(" && after.text != ")" {
                "defines a class with a base class (class inheritance)"
            } else if scan.in_def_or_class(at) {
                // Its qualified name (`f.<locals>.B`, in its repr and a
                // dataclass's) is one monty does not track.
                "defines a class inside a function or class"
            } else {
                return None;
            }
        }
        (Kind::Name, "async") if next == Some("for") => "uses `async for` (or an async comprehension)",
        (Kind::Name, "async") if next == Some("with") => "uses `async with`",
        (Kind::Name, "except") if next == Some("*") => "uses `except*` (exception groups)",
        (Kind::Name, "type")
            if token.starts_line
                && scan.tokens.get(at + 1).is_some_and(|t| t.kind == Kind::Name)
                && matches!(scan.tokens.get(at + 2).map(|t| t.text), Some("=" | "[")) =>
        {
            "uses a `type` alias statement"
        }
        (Kind::Op, "@=") => "uses the `@=` operator",
        (Kind::Str, _) if token.prefix().contains(['t', 'T']) => "uses a template string (t-string)",
        (Kind::Str, _) if token.writes_surrogate() => "writes a surrogate (`\\ud800`) in a string",
        (Kind::Op, "(") if scan.is_call(at) && scan.double_star_unpackings(at) > 1 => {
            "unpacks several `**` mappings into one call"
        }
        _ => return None,
    };
    Some(Needs::Feature { what, line: token.line })
}

fn rule_class_body(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if !token.starts_line || !scan.in_class_body.contains(&at) {
        return None;
    }
    let next = scan.tokens.get(at + 1);
    let allowed = match (token.kind, token.text) {
        (Kind::Name, "def" | "pass") | (Kind::Str, _) | (Kind::Op, "...") => true,
        (Kind::Name, "async") => next.is_some_and(|t| t.text == "def"),
        (Kind::Name, _) => next.is_some_and(|t| t.text == "=" || t.text == ":"),
        _ => false,
    };
    if allowed {
        return None;
    }
    let what = if token.text == "@" {
        "decorates a method (@property, @staticmethod, @classmethod, …)"
    } else {
        "puts a statement other than methods and plain class variables in a class body"
    };
    Some(Needs::Feature { what, line: token.line })
}

fn rule_unawaited_own_coroutine(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if !scan.calls_own_coroutine(at) {
        return None;
    }
    let before = at.checked_sub(1).and_then(|i| scan.tokens.get(i)).map(|t| t.text);
    if matches!(before, Some("await" | "def")) {
        return None;
    }
    // Inside the arguments of a call that awaits it (`asyncio.gather(f(1), f(2))`).
    let mut open = scan.enclosing_open[at];
    let mut levels = 0;
    while let Some(paren) = open.filter(|_| levels < LOOKAHEAD) {
        levels += 1;
        if scan.tokens[paren].text == "("
            && let Some(callee) = scan.callee_path(paren)
            && COROUTINE_TAKERS.contains(&callee.rsplit('.').next().unwrap_or_default())
        {
            return None;
        }
        open = scan.enclosing_open[paren];
    }
    Some(Needs::Feature {
        what: "calls its own coroutine function without `await` (CPython warns if it is never awaited, monty does not)",
        line: token.line,
    })
}

/// CPython's `encodings.normalize_encoding` (as monty's `normalize_encoding`).
fn normalize_encoding(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut pending_sep = false;
    for c in name.chars() {
        if c.is_alphanumeric() || c == '.' {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            }
        } else {
            pending_sep = true;
        }
    }
    out
}

fn rule_encoding(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    // Where the encoding is: `s.encode(enc)`, `bytes(s, enc)`, `str(b, enc)`.
    let position = match function {
        "builtins.bytes" | "builtins.str" => 1,
        callee if matches!(callee.rsplit_once('.'), Some((_, "encode" | "decode"))) => 0,
        _ => return None,
    };
    // That argument, or `encoding=`: a string literal.
    let literal = scan
        .argument_tokens(at)
        .enumerate()
        .find_map(|(i, tokens)| match tokens {
            [s] if i == position && s.kind == Kind::Str => Some(*s),
            [name, eq, s] if name.text == "encoding" && eq.text == "=" && s.kind == Kind::Str => Some(*s),
            _ => None,
        })?;
    let known = literal
        .literal_text()
        .is_some_and(|name| MONTY_ENCODINGS.contains(&normalize_encoding(name).as_str()));
    (!known).then_some(Needs::Feature {
        what: "names an encoding monty's codecs do not have",
        line: token.line,
    })
}

fn rule_bytes_pattern(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    if !RE_PATTERN_TAKERS.contains(&function.strip_prefix("re.")?) {
        return None;
    }
    let pattern = scan
        .argument_tokens(at)
        .enumerate()
        .find_map(|(i, tokens)| match tokens {
            [name, eq, rest @ ..] if name.text == "pattern" && eq.text == "=" => Some(rest),
            _ if i == 0 => Some(tokens),
            _ => None,
        })?;
    bytes_expression(pattern).then_some(Needs::Feature {
        what: "matches a bytes pattern (monty's `re` takes str only)",
        line: token.line,
    })
}

/// Whether an argument's tokens are plainly bytes: string literals with a
/// `b` prefix (implicitly concatenated, so `b'x'.decode()` is not taken for
/// bytes), a `bytes(...)` call, or an expression ending in `.encode(...)`.
fn bytes_expression(tokens: &[Token<'_>]) -> bool {
    if tokens.iter().all(|t| t.kind == Kind::Str) {
        return tokens.first().is_some_and(|t| t.prefix().contains(['b', 'B']));
    }
    let Some((close, head)) = tokens.split_last() else {
        return false;
    };
    // The call the argument ends with: its `(` is the last bracket opened at
    // the `)`'s depth (a bracket's depth is the one outside it).
    let opened = head
        .iter()
        .rposition(|t| t.depth == close.depth && matches!(t.text, "(" | "[" | "{"));
    let Some(open) = opened.filter(|&open| close.text == ")" && head[open].text == "(") else {
        return false;
    };
    match &head[..open] {
        [name] => name.text == "bytes",
        [.., dot, name] => dot.text == "." && name.text == "encode",
        [] => false,
    }
}

fn rule_nan_identity(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    if function != "builtins.float" {
        return None;
    }
    let [literal] = scan.argument_tokens(at).next()? else {
        return None;
    };
    let text = literal.literal_text()?.trim().trim_start_matches(['+', '-']);
    text.eq_ignore_ascii_case("nan").then_some(Needs::Feature {
        what: "makes a NaN with `float('nan')` (monty's NaNs have no identity: distinct ones compare as one in containers)",
        line: token.line,
    })
}

fn rule_re_flag_value(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (binding, next) = scan.bound_reference(at)?;
    let flag = match binding {
        Binding::Module(module) if module == "re" => scan.attribute_after(next)?,
        Binding::Member(module, member) if module == "re" => member.as_str(),
        _ => return None,
    };
    if !RE_FLAGS.contains(&flag) {
        return None;
    }
    let in_re_call = scan.enclosing_open[at]
        .and_then(|open| scan.call_at(open))
        .is_some_and(|(_, function)| function.starts_with("re."));
    (!in_re_call).then_some(Needs::Feature {
        what: "uses a `re` flag as a value (monty's flags are plain ints: `repr(re.I)` is `2`)",
        line: scan.tokens[at].line,
    })
}

fn rule_file_mode(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    // Where the mode is: `open(file, mode)`, `Path.open(mode)`.
    let position = match function {
        "builtins.open" => 1,
        method if method.ends_with(".open") => 0,
        _ => return None,
    };
    let mode = scan
        .argument_tokens(at)
        .enumerate()
        .find_map(|(i, tokens)| match tokens {
            [name, eq, value @ ..] if name.text == "mode" && eq.text == "=" => Some(value),
            [name, eq, ..] if name.kind == Kind::Name && eq.text == "=" => None,
            _ if i == position => Some(tokens),
            _ => None,
        })?;
    let refused = match mode {
        [literal] if literal.kind == Kind::Str => literal.literal_text().is_none_or(|m| m.contains(['x', '+'])),
        _ => true,
    };
    refused.then_some(Needs::Feature {
        what: "opens a file for exclusive creation or update ('x', '+'), which monty's files do not",
        line: token.line,
    })
}

fn rule_file_consumed_whole(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = &scan.tokens[at];
    if token.kind != Kind::Name || scan.follows_dot(at) || !scan.files.contains(token.text) {
        return None;
    }
    let before = at.checked_sub(1).map(|p| scan.tokens[p].text);
    let after = scan.tokens.get(at + 1);
    let ends_here = after.is_none_or(|t| t.starts_line || matches!(t.text, ")" | "," | "]" | ";"));
    let whole_argument = matches!(before, Some("(" | ",")) && ends_here;
    let consumed = if whole_argument {
        // `x.join(f)`: the method before the enclosing `(`.
        scan.enclosing_open[at].is_some_and(|paren| {
            scan.tokens[paren].text == "("
                && paren >= 2
                && scan.tokens[paren - 2].text == "."
                && FILE_CONSUMING_METHODS.contains(&scan.tokens[paren - 1].text)
        })
    } else {
        match before {
            // `[*f]`, `print(*f)`
            Some("*") => at >= 2 && matches!(scan.tokens[at - 2].text, "(" | "[" | "{" | ","),
            // `x in f`, not `for x in f`
            Some("in") => !scan.is_for_target_in(at - 1),
            // `a, b = f`: a comma before the `=` on the statement's line.
            Some("=") => {
                ends_here
                    && scan.tokens[..at - 1]
                        .iter()
                        .rev()
                        .take_while(|t| !t.starts_line)
                        .chain(scan.tokens[..at - 1].iter().rev().find(|t| t.starts_line))
                        .any(|t| t.text == "," && t.depth == token.depth)
            }
            _ => false,
        }
    };
    consumed.then_some(Needs::Feature {
        what: "consumes a file it has not read in a method, an unpacking or `in` (monty reads a file only in `for`, `next()` and builtins)",
        line: token.line,
    })
}

fn rule_print_to_file(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let (token, function) = scan.call_at(at)?;
    if function != "builtins.print" {
        return None;
    }
    let to_file = scan.argument_tokens(at).any(|tokens| match tokens {
        [name, eq, value @ ..] if name.text == "file" && eq.text == "=" => {
            !matches!(value, [sys, dot, stream] if sys.text == "sys" && dot.text == "." && matches!(stream.text, "stdout" | "stderr"))
        }
        _ => false,
    });
    to_file.then_some(Needs::Feature {
        what: "prints to a file (`print(..., file=f)`), which monty's print does not",
        line: token.line,
    })
}

fn rule_gather_start_order(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if !scan.calls_own_coroutine(at) {
        return None;
    }
    // The innermost `gather(` around the call, and the argument holding it.
    let mut open = scan.enclosing_open[at];
    let mut levels = 0;
    let gather = loop {
        let paren = open.filter(|_| levels < LOOKAHEAD)?;
        levels += 1;
        if scan.tokens[paren].text == "("
            && scan
                .callee_path(paren)
                .is_some_and(|callee| callee.rsplit('.').next() == Some("gather"))
        {
            break paren;
        }
        open = scan.enclosing_open[paren];
    };
    // A later argument that is not a call of the script's own coroutine (a
    // tool call, a variable, a nested gather) starts in another order.
    let later_other = scan
        .arguments(gather)
        .skip_while(|argument| argument.end <= at)
        .skip(1)
        .any(|argument| {
            let keyword = scan.tokens.get(argument.start + 1).is_some_and(|t| t.text == "=");
            let first = argument
                .clone()
                .find(|&i| !matches!(scan.tokens[i].text, "*" | "[" | "("));
            !keyword && !first.is_some_and(|i| scan.calls_own_coroutine(i))
        });
    later_other.then_some(Needs::Feature {
        what: "gathers its own coroutine before a tool call (CPython starts them in order, monty starts the tool call first: the trace's order differs)",
        line: token.line,
    })
}

fn rule_missing_builtin(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !missing_builtins().contains(token.text)
        || scan.follows_dot(at)
        || scan.bound.contains(token.text)
        || scan.is_keyword_argument(at)
    {
        return None;
    }
    Some(Needs::Builtin {
        name: token.text.to_owned(),
        line: token.line,
    })
}

fn rule_eval_exec(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !matches!(token.text, "eval" | "exec")
        || scan.follows_dot(at)
        || scan.bound.contains(token.text)
        || scan.is_keyword_argument(at)
    {
        return None;
    }
    Some(Needs::Feature {
        what: "runs code from a string (`eval`/`exec`), which the scan cannot see",
        line: token.line,
    })
}

fn rule_generator_expression(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.text != "for" || token.kind != Kind::Name {
        return None;
    }
    // `for` directly in parentheses: a generator expression (in brackets or
    // braces, a comprehension; at a statement's start, a loop).
    let open = scan.enclosing_open.get(at).copied().flatten()?;
    if scan.tokens[open].text != "(" {
        return None;
    }
    let consumed_whole = open
        .checked_sub(1)
        .is_some_and(|c| scan.tokens[c].kind == Kind::Op && scan.tokens[c].text == "*")
        || consumes_whole(scan, open, &[]);
    (!consumed_whole).then_some(Needs::Feature {
        what: "uses a generator expression other than as the whole argument of `sum`, `list`, `sorted`, … (monty evaluates generator expressions eagerly, into a list)",
        line: token.line,
    })
}

/// Whether the call whose `(` is at `open` consumes its argument whole at
/// once: one of [`WHOLE_CONSUMERS`] or `also` (unless the script rebinds
/// the name), or one of [`WHOLE_CONSUMER_METHODS`] as a method or by an
/// imported name.
fn consumes_whole(scan: &Scan<'_>, open: usize, also: &[&str]) -> bool {
    let Some(callee) = open.checked_sub(1) else {
        return false;
    };
    let name = &scan.tokens[callee];
    name.kind == Kind::Name
        && if scan.follows_dot(callee) {
            WHOLE_CONSUMER_METHODS.contains(&name.text)
        } else {
            ((WHOLE_CONSUMERS.contains(&name.text) || also.contains(&name.text)) && !scan.bound.contains(name.text))
                || (WHOLE_CONSUMER_METHODS.contains(&name.text) && scan.imports.contains(name.text))
        }
}

fn rule_eager_iterator(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !EAGER_ITERATORS.contains(&token.text)
        || scan.follows_dot(at)
        || scan.bound.contains(token.text)
        || scan.tokens.get(at + 1)?.text != "("
    {
        return None;
    }
    let fire = Some(Needs::Feature {
        what: "uses `zip`/`map`/`filter`/`enumerate`/`reversed` other than as a loop's iterable or the whole argument of `list`, `dict`, `sorted`, `join`, … (monty builds them eagerly, as lists)",
        line: token.line,
    });
    let Some(close) = scan.closing(at + 1) else {
        return fire;
    };
    let after = scan.tokens.get(close + 1).map(|t| t.text);
    let before = at.checked_sub(1).map(|i| &scan.tokens[i]);
    // The iterable of a `for` loop or a comprehension, and nothing more.
    if before.is_some_and(|t| t.kind == Kind::Name && t.text == "in")
        && scan.is_for_target_in(at - 1)
        && matches!(after, Some(":" | "]" | "}" | ")" | "if" | "for"))
    {
        let applies_safe_function = scan
            .tokens
            .get(at + 2)
            .is_some_and(|f| EAGER_SAFE_FUNCTIONS.contains(&f.text) && !scan.bound.contains(f.text))
            && scan.tokens.get(at + 3).is_some_and(|t| t.text == ",");
        return (!PURE_ITERATORS.contains(&token.text) && !applies_safe_function)
            .then_some(fire)
            .flatten();
    }
    // `*zip(…)` unpacked into a call or a display.
    if before.is_some_and(|t| t.kind == Kind::Op && t.text == "*")
        && at
            .checked_sub(2)
            .is_some_and(|i| matches!(scan.tokens[i].text, "(" | "[" | "{" | ","))
    {
        return None;
    }
    // The whole (first) argument of a call that consumes all of it at once.
    let Some(open) = scan.enclosing_open.get(at).copied().flatten() else {
        return fire;
    };
    if open + 1 != at || !matches!(after, Some(")" | ",")) || scan.tokens[open].text != "(" {
        return fire;
    }
    // Pure ones also nest whole in pure ones: `enumerate(zip(a, b))`.
    let also = if PURE_ITERATORS.contains(&token.text) {
        PURE_ITERATORS
    } else {
        &[]
    };
    let consumed_whole = consumes_whole(scan, open, also);
    (!consumed_whole).then_some(fire).flatten()
}

fn rule_special_method(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.text != "def" || token.kind != Kind::Name {
        return None;
    }
    let name = scan.tokens.get(at + 1)?;
    // CPython iterates (and `in` searches) an object with `__getitem__` and
    // no `__iter__` by index until IndexError; monty says "not iterable".
    if name.text == "__getitem__" && !scan.defines_function("__iter__") {
        return Some(Needs::Feature {
            what: "defines `__getitem__` without `__iter__` (CPython iterates such objects by index, monty does not)",
            line: token.line,
        });
    }
    if !is_dunder(name.text) || USER_SPECIAL_METHODS.contains(&name.text) {
        return None;
    }
    Some(Needs::DefinesSpecialMethod {
        name: name.text.to_owned(),
        line: token.line,
    })
}

fn rule_special_attribute(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name || !scan.follows_dot(at) || !is_dunder(token.text) {
        return None;
    }
    if SPECIAL_ATTRIBUTES.contains(&token.text) {
        return None;
    }
    // monty's builtin values have none of their special methods as
    // attributes (`max(d, key=d.__getitem__)`, `'a'.__mul__(2)` are
    // AttributeErrors): only a user class's own can be read.
    if USER_SPECIAL_METHODS.contains(&token.text) && scan.defines_function(token.text) {
        return None;
    }
    Some(Needs::UsesSpecialAttribute {
        name: token.text.to_owned(),
        line: token.line,
    })
}

fn rule_function_attribute(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name || scan.follows_dot(at) {
        return None;
    }
    let [dot, attribute, assign] = [1, 2, 3].map(|i| scan.tokens.get(at + i));
    let assigns = dot?.text == "."
        && attribute?.kind == Kind::Name
        && assign?.kind == Kind::Op
        && matches!(assign?.text, "=" | "+=" | "-=" | "*=" | "|=");
    if !assigns || !scan.defines_function(token.text) {
        return None;
    }
    Some(Needs::Feature {
        what: "sets an attribute on a function (monty's functions have no `__dict__`)",
        line: token.line,
    })
}

fn rule_missing_method(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !scan.follows_dot(at)
        || scan.tokens.get(at + 1).is_none_or(|t| t.text != "(")
        || !MISSING_METHODS.contains(&token.text)
        || scan.defines_attribute(token.text)
        || scan.receiver_is_module_or_type(at)
    {
        return None;
    }
    Some(Needs::Feature {
        what: "calls a method of a builtin type that monty's type does not have (MISSING_METHODS)",
        line: token.line,
    })
}

fn rule_method_value(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !scan.follows_dot(at)
        || scan.tokens.get(at + 1).is_some_and(|t| t.text == "(" || t.text == "=")
        || !attributes_not_values().contains(token.text)
        || scan.defines_attribute(token.text)
        || scan.receiver_is_module_or_type(at)
    {
        return None;
    }
    Some(Needs::Feature {
        what: "reads a builtin type's method or attribute as a value, which monty does not have (ATTRIBUTES_NOT_VALUES)",
        line: token.line,
    })
}

fn rule_builtin_attribute_lookup(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !matches!(token.text, "hasattr" | "getattr")
        || scan.follows_dot(at)
        || scan.bound.contains(token.text)
        || scan.tokens.get(at + 1).is_none_or(|t| t.text != "(")
    {
        return None;
    }
    // The attribute: a literal naming no builtin method is the script's own
    // business; anything else may ask about a builtin's method.
    let named = scan.argument_tokens(at + 1).nth(1).and_then(|tokens| match tokens {
        [t] => t.literal_text(),
        _ => None,
    });
    named.is_none_or(|name| ATTRIBUTES_NOT_VALUES.contains(&name)).then_some(Needs::Feature {
        what: "asks `hasattr`/`getattr` about what may be a builtin's method (monty's builtins have none as attributes)",
        line: token.line,
    })
}

fn rule_caught_exception_attribute(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    if !scan.caught_uses.contains(&at) {
        return None;
    }
    let attribute = match scan.attribute_after(at + 1) {
        Some(attribute) => Some(attribute),
        // `getattr(e, "msg", None)`, `hasattr(e, "pos")`: the attribute is
        // the next argument (a literal, else unknown: `None`).
        None => {
            let open = at.checked_sub(1).filter(|&o| scan.tokens[o].text == "(")?;
            let callee = open.checked_sub(1).map(|c| &scan.tokens[c])?;
            if !matches!(callee.text, "getattr" | "hasattr")
                || scan.follows_dot(open - 1)
                || scan.bound.contains(callee.text)
                || scan.tokens.get(at + 1).is_none_or(|t| t.text != ",")
            {
                return None;
            }
            scan.tokens.get(at + 2).and_then(|t| t.literal_text())
        }
    };
    if attribute.is_some_and(|attribute| CAUGHT_EXCEPTION_ATTRIBUTES.contains(&attribute)) {
        return None;
    }
    Some(Needs::Feature {
        what: "reads an attribute of a caught exception that monty's standard exceptions lack (`msg`, `pos`, `lineno`, `add_note`, …; CAUGHT_EXCEPTION_ATTRIBUTES)",
        line: scan.tokens[at].line,
    })
}

fn rule_renamed_exception_shown(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    if !(scan.may_meet_renamed_exception || scan.says_frozen) || !scan.caught_uses.contains(&at) {
        return None;
    }
    let text = |i: usize| scan.tokens.get(i).map(|t| t.text);
    let next = text(at + 1);
    if next == Some(".") {
        // An attribute: rule_caught_exception_attribute's.
        return None;
    }
    let before = at.checked_sub(1).map(|i| &scan.tokens[i]);
    let callee = at
        .checked_sub(2)
        .filter(|&c| before.is_some_and(|b| b.text == "(") && !scan.follows_dot(c))
        .map(|c| scan.tokens[c].text);
    // The callee of the call the name is a whole argument of.
    let argument_of = scan.enclosing_open[at]
        .filter(|&open| scan.tokens[open].text == "(" && open > 0 && !scan.follows_dot(open - 1))
        .map(|open| scan.tokens[open - 1].text);
    let whole_argument = before.is_some_and(|b| matches!(b.text, "(" | ",")) && matches!(next, Some(")" | ","));
    let shown_alike = match before.map(|b| (b.kind, b.text)) {
        Some((Kind::Name, "raise" | "from")) => true,
        // `f"{e}"`: str, not repr (`{e!r}`, `{e=}` are reprs).
        Some((Kind::FieldStart, _)) => scan.text_after(at).trim_start().starts_with('}'),
        _ => match callee {
            Some("str") => next == Some(")"),
            Some("isinstance") => next == Some(","),
            // `type(e).__name__`, `type(e) is ValueError`, `str(type(e))`
            // (monty's class prints with CPython's module, but a
            // FrozenInstanceError's without it).
            Some("type") => {
                next == Some(")")
                    && (!scan.says_frozen || (text(at + 2) == Some(".") && text(at + 3) == Some("__name__")))
            }
            _ => whole_argument && argument_of == Some("print") && !scan.bound.contains("print"),
        },
    };
    // Without a renamed exception to meet, only a frozen dataclass's class differs.
    let shown_alike = shown_alike || (!scan.may_meet_renamed_exception && callee != Some("type"));
    (!shown_alike).then_some(Needs::Feature {
        what: "shows a caught exception other than by `str` (its repr, or held in a value), in a script that may meet one monty names with its module (`json.JSONDecodeError(…)` for `JSONDecodeError(…)`)",
        line: scan.tokens[at].line,
    })
}

fn rule_path_text_arguments(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name
        || !matches!(token.text, "read_text" | "write_text")
        || !scan.follows_dot(at)
        || scan.tokens.get(at + 1).is_none_or(|t| t.text != "(")
        || scan.defines_attribute(token.text)
    {
        return None;
    }
    let arguments = scan.arguments(at + 1).count();
    let keywords = scan.keyword_arguments(at + 1).next().is_some();
    let allowed = if token.text == "read_text" { 0 } else { 1 };
    (arguments > allowed || keywords).then_some(Needs::Feature {
        what: "passes an encoding or other argument to `Path.read_text`/`write_text`, which monty's take none (but the text)",
        line: token.line,
    })
}

fn rule_class_rule_not_enforced(scan: &Scan<'_>, at: usize) -> Option<Needs> {
    let token = scan.tokens.get(at)?;
    if token.kind != Kind::Name || !token.text.starts_with("__") {
        return None;
    }
    let what = if token.text == "__slots__" {
        "declares `__slots__`, which monty does not enforce (its instances take any attribute)"
    } else if !token.text.ends_with("__") && token.text.len() > 2 {
        "uses a private name (`self.__token`), which monty does not mangle (read from outside the class, it is there)"
    } else {
        return None;
    };
    Some(Needs::Feature { what, line: token.line })
}

fn module_has(module: &str, name: &str) -> bool {
    MODULE_MEMBERS
        .iter()
        .find(|(m, _)| *m == module)
        .is_none_or(|(_, names)| names.contains(&name))
}

pub(super) fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}
