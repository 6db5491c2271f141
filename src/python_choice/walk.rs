//! The walk over a parsed script: what it uses, as allowlist keys, and the
//! few uses whose *context* monty answers differently.
//!
//! Two passes over ruff's syntax tree. [`Names`] first learns what each
//! name of the script stands for (an import, a builtin, the script's own
//! variable, function, coroutine, caught exception or open file, and the
//! attributes the script's own classes and objects define). [`Walk`] then
//! visits every node and reports, in source order:
//!
//! - a [`Use::Key`] for each thing the allowlist must hold ([`super::allow`]):
//!   the kind of every statement and expression (`stmt:For`, `expr:Lambda`),
//!   every builtin, import, module member and attribute by name (`len()`
//!   called, `len` as a value, `import json`, `json.dumps()`, `.append()`,
//!   `.year`), every keyword argument of a call (`sorted(key=)`,
//!   `.split(maxsplit=)`) and every special method a class defines
//!   (`def __eq__`). The script's own names, attributes and functions need
//!   no key; a name that is neither the script's own nor a builtin is a tool.
//! - a [`Use::Refused`] where a construct monty has is used in a context
//!   where monty answers differently (a generator expression that is not
//!   consumed whole, a coroutine never awaited, an encoding monty lacks...),
//!   each with why.
//!
//! Keys are strings so that the table reads as what a script writes; a use
//! is a key or a refusal, never a judgement: [`super::needs_cpython`] looks
//! the keys up.

use std::borrow::Cow;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    self as ast, CmpOp, ConversionFlag, Expr, ExprContext, InterpolatedStringElement, Keyword, Pattern, Stmt,
};
use ruff_text_size::Ranged;
// The walk's sets hold short names of one script: FxHash (rustc's, already
// built for Cranelift), not SipHash.
use rustc_hash::{FxHashMap, FxHashSet};

use super::allow::{
    CAUGHT_EXCEPTION_ATTRIBUTES, COROUTINE_TAKERS, EAGER_ITERATORS, EAGER_SAFE_FUNCTIONS, FILE_CONSUMING_METHODS,
    MONTY_ENCODINGS, OS_ERRORS, PURE_ITERATORS, RE_FLAGS, RE_PATTERN_TAKERS, RENAMED_EXCEPTION_SOURCES,
    WHOLE_CONSUMER_METHODS, WHOLE_CONSUMERS,
};

/// One use the walk found, at a byte offset of the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Use {
    /// Something the allowlist must hold (most are static: node kinds).
    Key(Cow<'static, str>),
    /// A construct used where monty answers differently: why.
    Refused(&'static str),
}

/// Every use of `module`, in source order, with its byte offset.
pub(super) fn uses(module: &ast::ModModule, source: &str) -> Vec<(Use, u32)> {
    let mut names = Names::default();
    names.visit_body(&module.body);
    let mut walk = Walk {
        names: &names,
        source,
        uses: Vec::new(),
        blessed: FxHashSet::default(),
        callees: FxHashSet::default(),
        class_depth: 0,
        def_depth: 0,
        coroutine_takers: 0,
        re_calls: 0,
        shown_caught: Vec::new(),
        typed_caught: Vec::new(),
        named_types: FxHashSet::default(),
    };
    walk.visit_body(&module.body);
    let may_meet_renamed_exception = walk
        .uses
        .iter()
        .any(|(found, _)| matches!(found, Use::Key(key) if meets_renamed_exception(key)));
    let frozen = walk
        .uses
        .iter()
        .any(|(found, _)| matches!(found, Use::Key(key) if key == "dataclasses.dataclass(frozen=)"));
    if frozen {
        for at in std::mem::take(&mut walk.typed_caught) {
            walk.uses.push((
                Use::Refused("shows the class of a caught exception in a script with a frozen dataclass (monty prints its error's class with a module)"),
                at,
            ));
        }
    }
    if may_meet_renamed_exception {
        for at in std::mem::take(&mut walk.shown_caught) {
            walk.uses.push((
                Use::Refused(
                    "shows a caught exception other than by `str` in a script that may meet one monty names with its module (`json.JSONDecodeError(...)`)",
                ),
                at,
            ));
        }
    }
    walk.uses.sort_by_key(|(_, at)| *at);
    walk.uses
}

// --- first pass: what the script's names stand for -------------------------

/// Every name `module` binds anywhere (an assignment, `def`, `class`,
/// import, parameter, `except ... as`, pattern, `global`); `*` if it
/// star-imports.
pub(crate) fn bound_names(module: &ast::ModModule) -> FxHashSet<&str> {
    let mut names = Names::default();
    names.visit_body(&module.body);
    let mut bound = names.bound;
    bound.extend(names.imports.into_keys());
    bound
}

/// What each name of a script stands for, learnt before the walk.
#[derive(Default)]
pub(super) struct Names<'a> {
    /// Names bound by an import, with the dotted path they stand for.
    imports: FxHashMap<&'a str, String>,
    /// Names the script binds otherwise (assignment, `def`, parameter...).
    bound: FxHashSet<&'a str>,
    /// Names of the script's own functions (`def`, either kind).
    functions: FxHashSet<&'a str>,
    /// Names of the script's own coroutine functions (`async def`).
    coroutines: FxHashSet<&'a str>,
    /// Attribute names the script defines: its classes' methods and class
    /// variables, and every attribute it assigns.
    attributes: FxHashSet<&'a str>,
    /// Names bound by `except ... as name`.
    caught: FxHashSet<&'a str>,
    /// Names bound to an open file (`with open(p) as f`, `f = p.open()`).
    files: FxHashSet<&'a str>,
}

impl<'a> Names<'a> {
    /// What a name stands for when the script does not rebind it: the
    /// dotted path of an import, or the name of a builtin.
    fn path(&self, name: &str) -> Option<String> {
        if self.bound.contains(name) {
            return None;
        }
        if let Some(path) = self.imports.get(name) {
            return Some(path.clone());
        }
        is_builtin(name).then(|| name.to_owned())
    }
}

/// Whether a key uses a module member that may raise an exception monty
/// names with its module ([`RENAMED_EXCEPTION_SOURCES`]).
fn meets_renamed_exception(key: &str) -> bool {
    let path = key.split('(').next().unwrap_or(key);
    let path = path.strip_prefix("import ").unwrap_or(path);
    RENAMED_EXCEPTION_SOURCES.iter().any(|(module, members)| {
        path.strip_prefix(module)
            .is_some_and(|rest| match (rest.strip_prefix('.'), members) {
                (None, None) => rest.is_empty(),
                (None, Some(_)) => false,
                (Some(_), None) => true,
                (Some(member), Some(members)) => members.contains(&member),
            })
    })
}

/// Whether a call opens a file: `open(...)` or `x.open(...)`.
fn opens_file(value: &Expr) -> bool {
    let Expr::Call(call) = value else { return false };
    match &*call.func {
        Expr::Name(name) => name.id.as_str() == "open",
        Expr::Attribute(attribute) => attribute.attr.as_str() == "open",
        _ => false,
    }
}

impl<'a> Visitor<'a> for Names<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                let name = def.name.as_str();
                self.bound.insert(name);
                self.functions.insert(name);
                if def.is_async {
                    self.coroutines.insert(name);
                }
            }
            Stmt::ClassDef(class) => {
                self.bound.insert(class.name.as_str());
                for item in &class.body {
                    match item {
                        Stmt::FunctionDef(def) => {
                            self.attributes.insert(def.name.as_str());
                        }
                        Stmt::Assign(assign) => {
                            for target in &assign.targets {
                                if let Expr::Name(name) = target {
                                    self.attributes.insert(name.id.as_str());
                                }
                            }
                        }
                        Stmt::AnnAssign(assign) => {
                            if let Expr::Name(name) = &*assign.target {
                                self.attributes.insert(name.id.as_str());
                            }
                        }
                        _ => {}
                    }
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    let module = alias.name.as_str();
                    match &alias.asname {
                        Some(asname) => self.imports.insert(asname.as_str(), module.to_owned()),
                        None => {
                            let head = module.split('.').next().unwrap_or(module);
                            self.imports.insert(head, head.to_owned())
                        }
                    };
                }
            }
            Stmt::ImportFrom(import) => {
                let module = import.module.as_ref().map_or("", |m| m.as_str());
                for alias in &import.names {
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                    self.imports.insert(name, format!("{module}.{}", alias.name.as_str()));
                }
            }
            Stmt::Assign(assign) if opens_file(&assign.value) => {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        self.files.insert(name.id.as_str());
                    }
                }
            }
            Stmt::With(with) => {
                for item in &with.items {
                    if let (true, Some(Expr::Name(name))) =
                        (opens_file(&item.context_expr), item.optional_vars.as_deref())
                    {
                        self.files.insert(name.id.as_str());
                    }
                }
            }
            Stmt::Global(ast::StmtGlobal { names, .. }) | Stmt::Nonlocal(ast::StmtNonlocal { names, .. }) => {
                for name in names {
                    self.bound.insert(name.as_str());
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if !matches!(name.ctx, ExprContext::Load) => {
                self.bound.insert(name.id.as_str());
            }
            Expr::Attribute(attribute) if !matches!(attribute.ctx, ExprContext::Load) => {
                self.attributes.insert(attribute.attr.as_str());
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_parameter(&mut self, parameter: &'a ast::Parameter) {
        self.bound.insert(parameter.name.as_str());
        visitor::walk_parameter(self, parameter);
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(inner) = handler;
        if let Some(name) = &inner.name {
            self.bound.insert(name.as_str());
            self.caught.insert(name.as_str());
        }
        visitor::walk_except_handler(self, handler);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        match pattern {
            Pattern::MatchAs(ast::PatternMatchAs { name: Some(name), .. })
            | Pattern::MatchStar(ast::PatternMatchStar { name: Some(name), .. })
            | Pattern::MatchMapping(ast::PatternMatchMapping { rest: Some(name), .. }) => {
                self.bound.insert(name.as_str());
            }
            _ => {}
        }
        visitor::walk_pattern(self, pattern);
    }
}

/// Whether CPython 3.14 has `name` as a builtin (ruff's list, which knows
/// the version), or it is a module global every script has (`__name__`).
pub(crate) fn is_builtin(name: &str) -> bool {
    ruff_python_stdlib::builtins::is_python_builtin(name, 14, false)
        || matches!(
            name,
            "__name__" | "__file__" | "__doc__" | "__builtins__" | "__spec__" | "__loader__"
        )
}

// --- second pass: the uses ---------------------------------------------------

/// Why a parent found a node safe where it is.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Safe {
    /// Consumed whole at once (a generator expression or an eager iterator).
    Consumed,
    /// Shown alike by both (a caught exception given to `str`, `print`...).
    Shown,
    /// Awaited (a coroutine).
    Awaited,
}

/// The walk that reports uses; see the module's doc.
struct Walk<'a, 'n> {
    names: &'n Names<'a>,
    source: &'a str,
    uses: Vec<(Use, u32)>,
    /// Nodes a parent has found in a context that makes them safe (a
    /// generator expression consumed whole, a coroutine awaited, a caught
    /// exception shown by `str`), by address.
    blessed: FxHashSet<(Safe, *const Expr)>,
    class_depth: usize,
    def_depth: usize,
    /// The callee of every call seen, by address: a name or attribute there
    /// is called (its key ends in `()`), not read as a value.
    callees: FxHashSet<*const Expr>,
    /// Depth of calls that await the coroutines given to them (`gather`).
    coroutine_takers: usize,
    /// Depth of `re` function calls (a flag is a number there on both).
    re_calls: usize,
    /// Where a caught exception is shown other than by `str`: refused if
    /// the script may meet an exception monty names with its module.
    shown_caught: Vec<u32>,
    /// Where the class of a caught exception is taken (`type(e)`): refused
    /// if the script has a frozen dataclass, whose error's class monty
    /// prints with a module CPython's lacks.
    typed_caught: Vec<u32>,
    /// `type(x)` calls whose `__name__` is read (shown alike by both).
    named_types: FxHashSet<*const ast::ExprCall>,
}

impl<'a> Walk<'a, '_> {
    fn key(&mut self, node: &impl Ranged, key: impl Into<Cow<'static, str>>) {
        self.uses.push((Use::Key(key.into()), node.start().to_u32()));
    }

    fn refuse(&mut self, node: &impl Ranged, why: &'static str) {
        self.uses.push((Use::Refused(why), node.start().to_u32()));
    }

    fn bless(&mut self, safe: Safe, expr: &Expr) {
        self.blessed.insert((safe, std::ptr::from_ref(expr)));
    }

    fn is_blessed_callee(&self, expr: &Expr) -> bool {
        self.callees.contains(&std::ptr::from_ref(expr))
    }

    fn is_blessed(&self, safe: Safe, expr: &Expr) -> bool {
        self.blessed.contains(&(safe, std::ptr::from_ref(expr)))
    }

    /// The dotted path an expression stands for, if it is an import, a
    /// builtin or an attribute of one (`json.dumps`, `str.upper`).
    fn path(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => self.names.path(name.id.as_str()),
            Expr::Attribute(attribute) => self
                .path(&attribute.value)
                .map(|base| format!("{base}.{}", attribute.attr.as_str())),
            _ => None,
        }
    }

    fn is_own_coroutine_call(&self, expr: &Expr) -> bool {
        matches!(expr, Expr::Call(call) if matches!(&*call.func, Expr::Name(name)
            if self.names.coroutines.contains(name.id.as_str())))
    }

    /// The name of what a call calls, as the rules about calls need it:
    /// the path of an import or builtin, or `.method` for a method.
    fn callee(&self, call: &ast::ExprCall) -> Option<String> {
        if let Some(path) = self.path(&call.func) {
            return Some(path);
        }
        match &*call.func {
            Expr::Attribute(attribute) if !self.names.attributes.contains(attribute.attr.as_str()) => {
                Some(format!(".{}", attribute.attr.as_str()))
            }
            _ => None,
        }
    }

    fn stmt_kind(stmt: &Stmt) -> &'static str {
        match stmt {
            Stmt::FunctionDef(def) if def.is_async => "stmt:AsyncFunctionDef",
            Stmt::FunctionDef(_) => "stmt:FunctionDef",
            Stmt::ClassDef(_) => "stmt:ClassDef",
            Stmt::Return(_) => "stmt:Return",
            Stmt::Delete(_) => "stmt:Delete",
            Stmt::TypeAlias(_) => "stmt:TypeAlias",
            Stmt::Assign(_) => "stmt:Assign",
            Stmt::AugAssign(a) if matches!(a.op, ast::Operator::MatMult) => "stmt:AugMatMult",
            Stmt::AugAssign(_) => "stmt:AugAssign",
            Stmt::AnnAssign(_) => "stmt:AnnAssign",
            Stmt::For(f) if f.is_async => "stmt:AsyncFor",
            Stmt::For(_) => "stmt:For",
            Stmt::While(_) => "stmt:While",
            Stmt::If(_) => "stmt:If",
            Stmt::With(w) if w.is_async => "stmt:AsyncWith",
            Stmt::With(_) => "stmt:With",
            Stmt::Match(_) => "stmt:Match",
            Stmt::Raise(_) => "stmt:Raise",
            Stmt::Try(t) if t.is_star => "stmt:TryStar",
            Stmt::Try(_) => "stmt:Try",
            Stmt::Assert(_) => "stmt:Assert",
            Stmt::Import(_) => "stmt:Import",
            Stmt::ImportFrom(_) => "stmt:ImportFrom",
            Stmt::Global(_) => "stmt:Global",
            Stmt::Nonlocal(_) => "stmt:Nonlocal",
            Stmt::Expr(_) => "stmt:Expr",
            Stmt::Pass(_) => "stmt:Pass",
            Stmt::Break(_) => "stmt:Break",
            Stmt::Continue(_) => "stmt:Continue",
            Stmt::IpyEscapeCommand(_) => "stmt:IpyEscapeCommand",
        }
    }

    fn expr_kind(expr: &Expr) -> &'static str {
        match expr {
            Expr::BoolOp(_) => "expr:BoolOp",
            Expr::Named(_) => "expr:Named",
            Expr::BinOp(b) if matches!(b.op, ast::Operator::MatMult) => "expr:MatMult",
            Expr::BinOp(_) => "expr:BinOp",
            Expr::UnaryOp(_) => "expr:UnaryOp",
            Expr::Lambda(_) => "expr:Lambda",
            Expr::If(_) => "expr:If",
            Expr::Dict(_) => "expr:Dict",
            Expr::Set(_) => "expr:Set",
            Expr::ListComp(_) => "expr:ListComp",
            Expr::SetComp(_) => "expr:SetComp",
            Expr::DictComp(_) => "expr:DictComp",
            Expr::Generator(_) => "expr:Generator",
            Expr::Await(_) => "expr:Await",
            Expr::Yield(_) => "expr:Yield",
            Expr::YieldFrom(_) => "expr:YieldFrom",
            Expr::Compare(_) => "expr:Compare",
            Expr::Call(_) => "expr:Call",
            Expr::FString(_) => "expr:FString",
            Expr::TString(_) => "expr:TString",
            Expr::StringLiteral(_) => "expr:StringLiteral",
            Expr::BytesLiteral(_) => "expr:BytesLiteral",
            Expr::NumberLiteral(_) => "expr:NumberLiteral",
            Expr::BooleanLiteral(_) => "expr:BooleanLiteral",
            Expr::NoneLiteral(_) => "expr:NoneLiteral",
            Expr::EllipsisLiteral(_) => "expr:EllipsisLiteral",
            Expr::Attribute(_) => "expr:Attribute",
            Expr::Subscript(_) => "expr:Subscript",
            Expr::Starred(_) => "expr:Starred",
            Expr::Name(_) => "expr:Name",
            Expr::List(_) => "expr:List",
            Expr::Tuple(_) => "expr:Tuple",
            Expr::Slice(_) => "expr:Slice",
            Expr::IpyEscapeCommand(_) => "expr:IpyEscapeCommand",
        }
    }

    fn check_class(&mut self, class: &'a ast::StmtClassDef) {
        if class
            .arguments
            .as_ref()
            .is_some_and(|a| !a.args.is_empty() || !a.keywords.is_empty())
        {
            self.refuse(class, "defines a class with a base class (class inheritance)");
        }
        if self.class_depth + self.def_depth > 0 {
            // Its qualified name (`f.<locals>.B`) is one monty does not track.
            self.refuse(class, "defines a class inside a function or class");
        }
        let defines = |name: &str| {
            class
                .body
                .iter()
                .any(|s| matches!(s, Stmt::FunctionDef(def) if def.name.as_str() == name))
        };
        if defines("__getitem__") && !defines("__iter__") {
            self.refuse(
                class,
                "defines `__getitem__` without `__iter__` (CPython iterates such objects by index, monty does not)",
            );
        }
        for item in &class.body {
            match item {
                Stmt::FunctionDef(def) => {
                    if !def.decorator_list.is_empty() {
                        self.refuse(def, "decorates a method (classmethod/staticmethod/property)");
                    }
                    let name = def.name.as_str();
                    if name.len() > 4 && name.starts_with("__") && name.ends_with("__") {
                        self.key(def, format!("def {name}"));
                    }
                }
                Stmt::Assign(assign) if matches!(assign.targets.as_slice(), [Expr::Name(_)]) => {
                    if matches!(assign.targets.as_slice(), [Expr::Name(n)] if n.id.as_str() == "__slots__") {
                        self.refuse(assign, "declares `__slots__`, which monty does not enforce");
                    }
                }
                Stmt::AnnAssign(assign) if matches!(&*assign.target, Expr::Name(_)) => {}
                Stmt::Pass(_) => {}
                Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_)) => {}
                other => self.refuse(
                    other,
                    "has a class body holding more than methods and simple class variables",
                ),
            }
        }
    }

    fn check_call(&mut self, call: &'a ast::ExprCall) {
        let callee = self.callee(call);
        let args = &call.arguments.args;
        let keywords = &call.arguments.keywords;
        // Keyword arguments, by the name of what is called.
        if let Some(callee) = &callee {
            for keyword in keywords {
                let key = match &keyword.arg {
                    Some(arg) => format!("{callee}({}=)", arg.as_str()),
                    None => format!("{callee}(**)"),
                };
                self.key(keyword, key);
            }
        }
        if keywords.iter().filter(|k| k.arg.is_none()).count() > 1 {
            self.refuse(call, "unpacks several `**` mappings into one call");
        }
        let Some(callee) = callee else { return };
        let last = callee.rsplit('.').next().unwrap_or(&callee);
        let keyword = |name: &str| {
            keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
        };
        let argument = |position: usize, name: &str| args.get(position).or_else(|| keyword(name).map(|k| &k.value));

        // What takes coroutines awaits them; what consumes an iterable whole
        // makes an eager generator or iterator give the same answer.
        if COROUTINE_TAKERS.contains(&last) {
            self.check_gather_order(call);
        }
        let consumes_whole = match callee.as_str() {
            name if WHOLE_CONSUMERS.contains(&name) => true,
            name if name.starts_with('.') => WHOLE_CONSUMER_METHODS.contains(&last),
            _ => WHOLE_CONSUMER_METHODS.contains(&last) && !is_builtin(&callee),
        };
        if consumes_whole && let Some(first) = args.first() {
            if matches!(first, Expr::Generator(_)) {
                self.bless(Safe::Consumed, first);
            }
            if let Expr::Call(inner) = first
                && self.eager_iterator(inner).is_some()
            {
                self.bless(Safe::Consumed, first);
            }
        }
        if PURE_ITERATORS.contains(&callee.as_str())
            && let Some(Expr::Call(inner)) = args.first()
            && self
                .eager_iterator(inner)
                .is_some_and(|name| PURE_ITERATORS.contains(&name))
        {
            self.bless(Safe::Consumed, &args[0]);
        }

        match callee.as_str() {
            "bytes" | "str" => self.check_encoding(argument(1, "encoding")),
            ".encode" | ".decode" => self.check_encoding(argument(0, "encoding")),
            "float" => {
                if let Some(Expr::StringLiteral(text)) = args.first()
                    && text
                        .value
                        .to_str()
                        .trim()
                        .trim_start_matches(['+', '-'])
                        .eq_ignore_ascii_case("nan")
                {
                    self.refuse(call, "makes a NaN with `float('nan')` (monty's NaNs have no identity)");
                }
            }
            "print" => {
                if let Some(file) = keyword("file")
                    && !matches!(self.path(&file.value).as_deref(), Some("sys.stdout" | "sys.stderr"))
                {
                    self.refuse(
                        call,
                        "prints to a file (`print(..., file=f)`), which monty's print does not",
                    );
                }
            }
            "open" => self.check_file_mode(call, argument(1, "mode")),
            ".open" => self.check_file_mode(call, argument(0, "mode")),
            // `list.copy()`, `dict.copy()`, `set.copy()` take nothing;
            // `Path.copy(target)` (CPython 3.14) is one monty lacks.
            ".copy" if !args.is_empty() || !keywords.is_empty() => {
                self.refuse(
                    call,
                    "calls `.copy` with arguments (`Path.copy`, which monty's paths lack)",
                );
            }
            ".read_text" | ".write_text" => {
                let allowed = usize::from(last == "write_text");
                if args.len() > allowed || !keywords.is_empty() {
                    self.refuse(
                        call,
                        "passes an encoding or other argument to `Path.read_text`/`write_text`",
                    );
                }
            }
            "getattr" | "hasattr" => {
                // A literal name is read as `.name`; any other may be anything.
                let of_caught =
                    matches!(args.first(), Some(Expr::Name(n)) if self.names.caught.contains(n.id.as_str()));
                match args.get(1) {
                    Some(Expr::StringLiteral(literal)) => {
                        let attr = literal.value.to_str();
                        if of_caught {
                            if !CAUGHT_EXCEPTION_ATTRIBUTES.contains(&attr) {
                                self.refuse(
                                    call,
                                    "reads an attribute of a caught exception that monty's standard exceptions lack",
                                );
                            }
                        } else if !self.names.attributes.contains(attr) {
                            self.key(literal, format!(".{attr}"));
                        }
                    }
                    _ => self.refuse(call, "asks `hasattr`/`getattr` about an attribute it computes"),
                }
                if of_caught && let Some(first) = args.first() {
                    self.bless(Safe::Shown, first);
                }
            }
            _ => {}
        }
        if let Some(module_function) = callee.strip_prefix("re.")
            && RE_PATTERN_TAKERS.contains(&module_function)
            && argument(0, "pattern").is_some_and(is_bytes)
        {
            self.refuse(call, "matches a bytes pattern (monty's `re` takes str only)");
        }
        // Exceptions built from more than their message.
        let several = args.len() >= 2 || args.iter().any(|a| matches!(a, Expr::Starred(_)));
        let refused = match callee.as_str() {
            name if OS_ERRORS.contains(&name) && several => {
                Some("builds an OSError from several arguments (errno, strerror, filename)")
            }
            "SyntaxError" if several => Some("builds a SyntaxError from several arguments"),
            "UnicodeDecodeError" | "UnicodeEncodeError" | "json.JSONDecodeError" | "tomllib.TOMLDecodeError"
                if !args.is_empty() =>
            {
                Some("builds a decoding error from its parts")
            }
            _ => None,
        };
        if let Some(why) = refused {
            self.refuse(call, why);
        }
        // A file consumed whole by a method, before it is read.
        if callee.starts_with('.') && FILE_CONSUMING_METHODS.contains(&last) || callee == "dict.fromkeys" {
            for arg in args {
                if matches!(arg, Expr::Name(n) if self.names.files.contains(n.id.as_str())) {
                    self.refuse(arg, "consumes a file it has not read in a method (monty reads a file only in `for`, `next()` and builtins)");
                }
            }
        }
        // Caught exceptions shown alike by `str`, `print`, `type`, `isinstance`.
        if matches!(callee.as_str(), "str" | "print" | "type" | "isinstance") {
            let shown_alike: &[Expr] = match callee.as_str() {
                "str" | "type" if args.len() == 1 => args,
                "isinstance" => args.get(..1).unwrap_or_default(),
                "print" => args,
                _ => &[],
            };
            for arg in shown_alike {
                self.bless(Safe::Shown, arg);
                if callee == "type"
                    && !self.named_types.contains(&std::ptr::from_ref(call))
                    && matches!(arg, Expr::Name(n) if self.names.caught.contains(n.id.as_str()))
                {
                    self.typed_caught.push(arg.start().to_u32());
                }
            }
        }
    }

    /// The name of the builtin eager iterator (`zip`, `map`, ...) a call calls.
    fn eager_iterator(&self, call: &ast::ExprCall) -> Option<&'static str> {
        let path = self.path(&call.func)?;
        EAGER_ITERATORS.iter().copied().find(|name| *name == path)
    }

    fn check_eager_iterator(&mut self, call_expr: &'a Expr, call: &'a ast::ExprCall, in_loop: bool) {
        let Some(name) = self.eager_iterator(call) else { return };
        if self.is_blessed(Safe::Consumed, call_expr) {
            return;
        }
        if in_loop {
            let applies_safe_function = matches!(call.arguments.args.first(), Some(Expr::Name(f))
                if EAGER_SAFE_FUNCTIONS.contains(&f.id.as_str()) && !self.names.bound.contains(f.id.as_str()))
                || matches!(call.arguments.args.first(), Some(Expr::NoneLiteral(_)));
            if PURE_ITERATORS.contains(&name) || applies_safe_function {
                return;
            }
        }
        self.refuse(
            call,
            "uses `zip`/`map`/`filter`/`enumerate`/`reversed` other than as a loop's iterable or the whole argument of `list`, `dict`, `sorted`, `join`... (monty builds them eagerly, as lists)",
        );
    }

    fn check_gather_order(&mut self, call: &'a ast::ExprCall) {
        // An argument that is the script's own coroutine (also in `*[...]`).
        let own = |arg: &Expr| {
            let mut arg = arg;
            loop {
                arg = match arg {
                    Expr::Starred(s) => &s.value,
                    Expr::ListComp(c) => &c.elt,
                    Expr::List(l) if !l.elts.is_empty() => &l.elts[0],
                    Expr::Tuple(t) if !t.elts.is_empty() => &t.elts[0],
                    Expr::Generator(g) => &g.elt,
                    other => return self.is_own_coroutine_call(other),
                };
            }
        };
        let args = &call.arguments.args;
        if let Some(first_own) = args.iter().position(own)
            && args[first_own + 1..].iter().any(|a| !own(a))
        {
            self.refuse(
                call,
                "gathers its own coroutine before a tool call (CPython starts them in order, monty starts the tool call first)",
            );
        }
    }

    fn check_encoding(&mut self, encoding: Option<&Expr>) {
        if let Some(Expr::StringLiteral(literal)) = encoding
            && !MONTY_ENCODINGS.contains(&normalize_encoding(literal.value.to_str()).as_str())
        {
            self.refuse(literal, "names an encoding monty's codecs do not have");
        }
    }

    fn check_file_mode(&mut self, call: &ast::ExprCall, mode: Option<&Expr>) {
        let refused = match mode {
            None => false,
            Some(Expr::StringLiteral(literal)) => literal.value.to_str().contains(['x', '+']),
            Some(_) => true,
        };
        if refused {
            self.refuse(
                call,
                "opens a file for exclusive creation or update ('x', '+'), which monty's files do not",
            );
        }
    }

    fn check_attribute(&mut self, expr: &'a Expr, attribute: &'a ast::ExprAttribute, called: bool) {
        let attr = attribute.attr.as_str();
        if attr.starts_with("__") && !attr.ends_with("__") && attr.len() > 2 {
            self.refuse(
                attribute,
                "uses a private name (`self.__token`), which monty does not mangle",
            );
        }
        let call = if called { "()" } else { "" };
        if !matches!(attribute.ctx, ExprContext::Load) {
            // Setting or deleting: only on the script's own objects.
            if self.path(&attribute.value).is_some() {
                self.refuse(attribute, "sets or deletes an attribute of a module or builtin");
            } else if matches!(&*attribute.value, Expr::Name(n) if self.names.functions.contains(n.id.as_str())) {
                self.refuse(
                    attribute,
                    "sets an attribute on a function (monty's functions have no `__dict__`)",
                );
            }
            return;
        }
        if let Some(path) = self.path(expr) {
            if let Some(flag) = path.strip_prefix("re.")
                && RE_FLAGS.contains(&flag)
                && self.re_calls == 0
            {
                self.refuse(attribute, "uses a `re` flag as a value (monty's flags are plain ints)");
            }
            self.key(attribute, format!("{path}{call}"));
            return;
        }
        if let Expr::Name(receiver) = &*attribute.value
            && self.names.caught.contains(receiver.id.as_str())
        {
            self.bless(Safe::Shown, &attribute.value);
            if !CAUGHT_EXCEPTION_ATTRIBUTES.contains(&attr) {
                self.refuse(
                    attribute,
                    "reads an attribute of a caught exception that monty's standard exceptions lack",
                );
            }
            return;
        }
        if self.names.attributes.contains(attr) && !is_dunder(attr) {
            return;
        }
        self.key(attribute, format!(".{attr}{call}"));
    }

    fn check_name(&mut self, expr: &'a Expr, name: &'a ast::ExprName, called: bool) {
        let id = name.id.as_str();
        if !matches!(name.ctx, ExprContext::Load) {
            return;
        }
        if id.starts_with("__") && !id.ends_with("__") && id.len() > 2 {
            self.refuse(name, "uses a private name, which monty does not mangle");
        }
        if self.names.caught.contains(id) && !self.is_blessed(Safe::Shown, expr) {
            self.shown_caught.push(name.start().to_u32());
        }
        let Some(path) = self.names.path(id) else { return };
        if let Some(flag) = path.strip_prefix("re.")
            && RE_FLAGS.contains(&flag)
            && self.re_calls == 0
        {
            self.refuse(name, "uses a `re` flag as a value (monty's flags are plain ints)");
        }
        let call = if called { "()" } else { "" };
        self.key(name, format!("{path}{call}"));
    }

    fn check_string(&mut self, range: &impl Ranged) {
        let text = &self.source[range.start().to_usize()..range.end().to_usize()];
        let prefix_end = text.find(['\'', '"']).unwrap_or(0);
        if text[..prefix_end].contains(['r', 'R']) {
            return;
        }
        let lower = text.to_ascii_lowercase();
        // `\ud800`-`\udfff` and `\U0000d800`-`\U0000dfff`, not `\\ud800`.
        let surrogate = ["\\ud", "\\u0000d"].iter().any(|escape| {
            lower.match_indices(escape).any(|(at, _)| {
                let digit = lower.as_bytes().get(at + escape.len());
                digit.is_some_and(|b| matches!(b, b'8' | b'9' | b'a'..=b'f'))
                    && lower[..at].bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 0
            })
        });
        if surrogate {
            self.refuse(range, "writes a surrogate (`\\ud800`) in a string");
        }
    }
}

fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// Whether an argument is plainly bytes: a bytes literal, `bytes(...)`, or
/// an expression ending in `.encode(...)`.
fn is_bytes(expr: &Expr) -> bool {
    match expr {
        Expr::BytesLiteral(_) => true,
        Expr::Call(call) => match &*call.func {
            Expr::Name(name) => name.id.as_str() == "bytes",
            Expr::Attribute(attribute) => attribute.attr.as_str() == "encode",
            _ => false,
        },
        _ => false,
    }
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

impl<'a> Visitor<'a> for Walk<'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.key(stmt, Self::stmt_kind(stmt));
        match stmt {
            Stmt::ClassDef(class) => {
                self.check_class(class);
                self.class_depth += 1;
                visitor::walk_stmt(self, stmt);
                self.class_depth -= 1;
                return;
            }
            Stmt::FunctionDef(_) => {
                self.def_depth += 1;
                visitor::walk_stmt(self, stmt);
                self.def_depth -= 1;
                return;
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.key(alias, format!("import {}", alias.name.as_str()));
                }
            }
            Stmt::ImportFrom(import) => {
                if import.level > 0 {
                    self.refuse(import, "uses a relative import");
                }
                let module = import.module.as_ref().map_or("", |m| m.as_str());
                self.key(import, format!("import {module}"));
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        self.refuse(alias, "imports `*` (wildcard imports)");
                    }
                    self.key(alias, format!("{module}.{}", alias.name.as_str()));
                }
            }
            Stmt::For(for_stmt) => {
                if let Expr::Call(call) = &*for_stmt.iter {
                    self.check_eager_iterator(&for_stmt.iter, call, true);
                    self.bless(Safe::Consumed, &for_stmt.iter);
                }
            }
            Stmt::Assign(assign) => {
                let unpacks = assign
                    .targets
                    .iter()
                    .any(|t| matches!(t, Expr::Tuple(_) | Expr::List(_)));
                if unpacks && matches!(&*assign.value, Expr::Name(n) if self.names.files.contains(n.id.as_str())) {
                    self.refuse(
                        assign,
                        "unpacks a file it has not read (monty reads a file only in `for`, `next()` and builtins)",
                    );
                }
            }
            Stmt::Raise(raise) => {
                for expr in [&raise.exc, &raise.cause].into_iter().flatten() {
                    self.bless(Safe::Shown, expr);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.key(expr, Self::expr_kind(expr));
        match expr {
            Expr::Name(name) => {
                let called = self.is_blessed_callee(expr);
                self.check_name(expr, name, called);
            }
            Expr::Attribute(attribute) => {
                if let Expr::Call(inner) = &*attribute.value
                    && attribute.attr.as_str() == "__name__"
                {
                    self.named_types.insert(std::ptr::from_ref(inner));
                }
                let called = self.is_blessed_callee(expr);
                self.check_attribute(expr, attribute, called);
                // A static path is one key: its parts are not visited.
                if self.path(expr).is_some() {
                    return;
                }
            }
            Expr::Call(call) => {
                self.callees.insert(std::ptr::from_ref(&*call.func));
                self.check_call(call);
                if self.is_own_coroutine_call(expr)
                    && self.coroutine_takers == 0
                    && !self.is_blessed(Safe::Awaited, expr)
                {
                    self.refuse(
                        call,
                        "calls its own coroutine function without `await` (CPython warns if it is never awaited, monty does not)",
                    );
                }
                if self.eager_iterator(call).is_some() {
                    self.check_eager_iterator(expr, call, false);
                }
                let callee = self.callee(call).unwrap_or_default();
                let last = callee.rsplit('.').next().unwrap_or_default();
                let takes_coroutines = COROUTINE_TAKERS.contains(&last);
                let re_call = callee.starts_with("re.");
                self.coroutine_takers += usize::from(takes_coroutines);
                self.re_calls += usize::from(re_call);
                visitor::walk_expr(self, expr);
                self.coroutine_takers -= usize::from(takes_coroutines);
                self.re_calls -= usize::from(re_call);
                return;
            }
            Expr::Await(await_expr) => self.bless(Safe::Awaited, &await_expr.value),
            Expr::Generator(generator) => {
                if !self.is_blessed(Safe::Consumed, expr) {
                    self.refuse(
                        generator,
                        "uses a generator expression other than as the whole argument of `sum`, `list`, `sorted`... (monty evaluates generator expressions eagerly, into a list)",
                    );
                }
            }
            Expr::Starred(starred) => {
                // `*gen`, `*zip(...)` unpacked whole.
                self.bless(Safe::Consumed, &starred.value);
                if matches!(&*starred.value, Expr::Name(n) if self.names.files.contains(n.id.as_str())) {
                    self.refuse(starred, "unpacks a file it has not read");
                }
            }
            Expr::Compare(compare) => {
                for (op, right) in compare.ops.iter().zip(compare.operands.iter().skip(1)) {
                    if matches!(op, CmpOp::In | CmpOp::NotIn)
                        && matches!(right, Expr::Name(n) if self.names.files.contains(n.id.as_str()))
                    {
                        self.refuse(compare, "searches a file it has not read with `in`");
                    }
                }
            }
            Expr::StringLiteral(_) | Expr::FString(_) => self.check_string(expr),
            _ => {}
        }
        let generators: &[ast::Comprehension] = match expr {
            Expr::ListComp(c) => &c.generators,
            Expr::SetComp(c) => &c.generators,
            Expr::DictComp(c) => &c.generators,
            Expr::Generator(c) => &c.generators,
            _ => &[],
        };
        for comprehension in generators {
            if comprehension.is_async {
                self.refuse(comprehension, "uses an async comprehension");
            }
            if let Expr::Call(call) = &comprehension.iter {
                self.check_eager_iterator(&comprehension.iter, call, true);
                self.bless(Safe::Consumed, &comprehension.iter);
            }
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_keyword(&mut self, keyword: &'a Keyword) {
        visitor::walk_keyword(self, keyword);
    }

    fn visit_interpolated_string_element(&mut self, element: &'a InterpolatedStringElement) {
        if let InterpolatedStringElement::Interpolation(field) = element
            && field.conversion == ConversionFlag::None
            && field.debug_text.is_none()
        {
            self.bless(Safe::Shown, &field.expression);
        }
        visitor::walk_interpolated_string_element(self, element);
    }
}
