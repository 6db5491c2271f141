//! The data-flow analysis: which untrusted results may reach each guarded
//! tool call of a script, read from its syntax tree before it runs
//! ([`crate::flow`] has the vocabulary and the rule; docs/flow.md the
//! user's view).
//!
//! A taint analysis over ruff's tree, flow-insensitive and run to a fixed
//! point: every name holds the union of what is ever assigned to it, every
//! value derives from everything it is computed from (a call's result from
//! its callee and all its arguments, whatever the function: regex, slicing,
//! base64, `json.loads`, `len`), and a tool's result from the tool (when it
//! is untrusted) and its arguments (a trusted lookup keyed by untrusted
//! text launders nothing). Control counts as data: what is assigned or
//! called under an `if`, loop, comprehension filter or conditional
//! expression whose test derives from untrusted data, in an `except`
//! handler of a `try` whose body touched it, or after a `return`, `break`,
//! `continue`, `raise` or `assert` that such a test decides, derives from
//! it too.
//!
//! Conservative where it cannot see: `exec`, `eval`, `compile`, `globals`,
//! `getattr`/`setattr`/`attrgetter` of a computed or dunder name, frame and
//! `__dict__` introspection, a star import or an import of a module that
//! reaches namespaces or runs code by name (`sys`, `builtins`, `importlib`,
//! `inspect`, `pickle`, ...) make every guarded tool tainted by every
//! untrusted result; so does a tool used as a value (`f = send_email`), for
//! that tool. A workspace file (`open`, `pathlib`, `os`...) may hold any
//! tool's media result, and so any untrusted data. The script's own functions
//! are followed: a helper called by name takes its call sites' arguments
//! (a result derives from them only when its return does), while a function
//! that escapes (a lambda, a method, a decorated or passed function) may be
//! called with anything, so its guarded calls are tainted by everything.
//! Mutation reaches through aliases: `b = a; b.append(x)` taints `a`.
//! `load_artifact` returns what may be any untrusted result. In a session's
//! later cell, an earlier cell's names may hold anything, and calling one
//! of its functions may call any tool.
//!
//! Not modelled (docs/flow.md says so): whether a script stops early on an
//! uncaught error can depend on untrusted data (one bit: the guarded call
//! after it is made or not, never with other arguments).

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Pattern, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::flow::{FlowTools, FlowVerdict, Taint};
use crate::python_choice::{MAX_SCANNED_BYTES, is_builtin, on_scan_stack};

/// Rounds of the fixed point before the analysis gives up (and taints
/// everything): each round only grows labels, and real scripts settle in
/// two or three.
const MAX_ROUNDS: usize = 64;

/// Untrusted tools named by bit; a script calling more taints by `any`.
const MAX_SOURCES: usize = 64;

/// Builtins that let a script reach names, code or frames the tree does not
/// show.
const OPAQUE_BUILTINS: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "globals",
    "locals",
    "vars",
    "__import__",
    "breakpoint",
];

/// Modules whose import gives the same reach (a dotted entry covers its
/// submodules): namespaces and frames, code run from strings, objects
/// built by name (`pickle` calls any function it names).
const OPAQUE_MODULES: &[&str] = &[
    "sys",
    "builtins",
    "importlib",
    "inspect",
    "__main__",
    "gc",
    "ctypes",
    "types",
    "pickle",
    "_pickle",
    "marshal",
    "shelve",
    "copyreg",
    "runpy",
    "code",
    "codeop",
    "pkgutil",
    "timeit",
    "doctest",
    "trace",
    "profile",
    "cProfile",
    "pdb",
    "_thread",
    "logging.config",
];

/// Functions that read or write an attribute named by a string: opaque
/// unless every name is a plain literal.
const NAMED_ATTRIBUTE_FUNCTIONS: &[&str] = &["getattr", "setattr", "delattr", "attrgetter", "methodcaller"];

/// Functions that evaluate strings as code.
const EVALUATING_FUNCTIONS: &[&str] = &["get_type_hints"];

/// Modules that read files: the workspace holds media results of any tool
/// (and files earlier cells wrote), so what they return may be anything.
const FILE_MODULES: &[&str] = &[
    "pathlib",
    "io",
    "os",
    "shutil",
    "glob",
    "fileinput",
    "zipfile",
    "tarfile",
    "gzip",
    "bz2",
    "lzma",
    "sqlite3",
    "dbm",
];

/// Attributes that expose namespaces, frames or code.
const OPAQUE_ATTRIBUTES: &[&str] = &[
    "__dict__",
    "__globals__",
    "__builtins__",
    "__code__",
    "__closure__",
    "__func__",
    "__self__",
    "__class__",
    "__subclasses__",
    "__getattribute__",
    "__setattr__",
    "f_globals",
    "f_locals",
    "f_back",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "tb_frame",
];

/// Modules whose functions may store one argument inside another
/// (`heapq.heappush(h, x)`): a call of theirs mutates its arguments. Every
/// other imported function only reads its arguments.
const MUTATING_MODULES: &[&str] = &["heapq", "bisect", "operator", "copyreg", "weakref"];

/// Methods that never store their arguments in their receiver: calling
/// one is no mutation.
const PURE_METHODS: &[&str] = &[
    // str and bytes
    "capitalize",
    "casefold",
    "center",
    "count",
    "decode",
    "encode",
    "endswith",
    "expandtabs",
    "find",
    "format",
    "format_map",
    "index",
    "isalnum",
    "isalpha",
    "isascii",
    "isdecimal",
    "isdigit",
    "isidentifier",
    "islower",
    "isnumeric",
    "isprintable",
    "isspace",
    "istitle",
    "isupper",
    "join",
    "ljust",
    "lower",
    "lstrip",
    "partition",
    "removeprefix",
    "removesuffix",
    "replace",
    "rfind",
    "rindex",
    "rjust",
    "rpartition",
    "rsplit",
    "rstrip",
    "split",
    "splitlines",
    "startswith",
    "strip",
    "swapcase",
    "title",
    "translate",
    "upper",
    "zfill",
    "hex",
    // dict, list, set, tuple reads
    "get",
    "keys",
    "values",
    "items",
    "copy",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "issubset",
    "issuperset",
    "isdisjoint",
    // regex matches, dates, numbers
    "group",
    "groups",
    "groupdict",
    "start",
    "end",
    "span",
    "search",
    "match",
    "fullmatch",
    "findall",
    "finditer",
    "sub",
    "subn",
    "isoformat",
    "strftime",
    "timestamp",
    "date",
    "time",
    "weekday",
    "isoweekday",
    "total_seconds",
    "is_integer",
    "as_integer_ratio",
    "bit_length",
    "conjugate",
    "most_common",
    "hexdigest",
    "digest",
];

/// Guest functions a script may call that are neither builtins nor tools.
const LOAD_ARTIFACT: &str = "load_artifact";

/// The verdict on `script` with `tools`. With `names_from_before` (a
/// session's cell after others) a name the script reads but does not bind
/// is an earlier cell's, which may hold any untrusted result.
pub fn analyze(script: &str, tools: &FlowTools, names_from_before: bool) -> FlowVerdict {
    if !tools.is_active() {
        return FlowVerdict::default();
    }
    if script.len() > MAX_SCANNED_BYTES {
        return FlowVerdict::everything(tools);
    }
    on_scan_stack(script, || {
        // A script that does not parse never runs a call; the placeholder
        // verdict is as safe as any.
        let Ok(parsed) = ruff_python_parser::parse_module(script) else {
            return FlowVerdict::everything(tools);
        };
        Analysis::new(tools, names_from_before, parsed.syntax()).verdict()
    })
}

/// What a value (or a decision) may derive from: untrusted tools by bit,
/// any untrusted result, and the current function's parameters by bit
/// (resolved by [`Analysis::concrete`] where the value leaves the
/// function, or to the call's arguments where a call returns it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Label {
    bits: u64,
    any: bool,
    param: u32,
}

/// Parameters named by bit; the last bit stands for every later one.
const PARAM_BITS: usize = 32;

/// The bit of parameter `index`.
fn param_bit(index: usize) -> u32 {
    1 << index.min(PARAM_BITS - 1)
}

/// Whether parameter `index` is among `bits`.
fn has_param(bits: u32, index: usize) -> bool {
    bits & param_bit(index) != 0
}

impl Label {
    const CLEAN: Label = Label {
        bits: 0,
        any: false,
        param: 0,
    };
    const ANY: Label = Label {
        bits: 0,
        any: true,
        param: 0,
    };
    /// What a generator is sent: its driver's, any parameter's.
    const SENT: Label = Label {
        bits: 0,
        any: false,
        param: u32::MAX,
    };

    fn param(index: usize) -> Label {
        Label {
            param: param_bit(index),
            ..Label::CLEAN
        }
    }

    fn join(self, other: Label) -> Label {
        Label {
            bits: self.bits | other.bits,
            any: self.any || other.any,
            param: self.param | other.param,
        }
    }

    fn without_param(self) -> Label {
        Label { param: 0, ..self }
    }

    /// Whether `self` holds everything `other` does.
    fn covers(self, other: Label) -> bool {
        self.join(other) == self
    }
}

/// A name in a scope: the unit labels are kept for.
type Var<'a> = (usize, &'a str);

/// A function's (or the module's, scope 0) static facts.
#[derive(Default)]
struct Scope<'a> {
    parent: Option<usize>,
    locals: FxHashSet<&'a str>,
    globals: FxHashSet<&'a str>,
    nonlocals: FxHashSet<&'a str>,
    /// Its parameters: positional ones (`positional` of them), `*args`,
    /// keyword-only ones, `**kwargs`, in that order.
    params: Vec<&'a str>,
    positional: usize,
    vararg: Option<usize>,
    kwarg: Option<usize>,
    body: Option<Body<'a>>,
    /// Called by other than its name (a method, a lambda, a decorated
    /// function): its callers are unknown.
    escapes: bool,
}

#[derive(Clone, Copy)]
enum Body<'a> {
    Def(&'a [Stmt]),
    Lambda(&'a Expr),
}

/// A function's facts that the fixed point grows.
#[derive(Default, Clone)]
struct Facts {
    /// What each parameter may hold: its call sites' arguments.
    params: Vec<Label>,
    /// What decided that it is called: its call sites' control.
    control: Label,
    /// What its return (or yield) may derive from.
    ret: Label,
    /// What its body reads besides its parameters (its value as an object).
    value: Label,
    /// What decides whether it raises (`raise`, `assert`, a helper's that
    /// does): a call of it ends its caller's code as early.
    raises: Label,
}

/// A `return`, `break`, `continue`, `raise` or `assert`: what decides it,
/// where it is, and the outermost loop of its function around it.
#[derive(Clone, Copy, PartialEq)]
struct Exit {
    at: TextSize,
    /// A `break` or `continue` decides only its own loop's code.
    only_in: Option<TextRange>,
    outer_loop: Option<TextRange>,
    label: Label,
}

struct Analysis<'a, 't> {
    tools: &'t FlowTools,
    names_from_before: bool,
    module: &'a [Stmt],
    scopes: Vec<Scope<'a>>,
    /// A def's or lambda's scope, by its node's range.
    scope_at: FxHashMap<TextRange, usize>,
    /// Names bound by an import (a module or its function).
    imported: FxHashMap<Var<'a>, &'a str>,
    /// The functions each name may be bound to by `def`.
    defs: FxHashMap<Var<'a>, Vec<usize>>,
    /// Names also bound by something other than a `def`.
    not_only_defs: FxHashSet<Var<'a>>,
    // Grown by the fixed point.
    vars: FxHashMap<Var<'a>, Label>,
    /// Names that may be one object (a union-find: each to its parent).
    same: FxHashMap<Var<'a>, Var<'a>>,
    /// What each object (by its class's root) may hold.
    contents: FxHashMap<Var<'a>, FxHashSet<Var<'a>>>,
    /// What was stored into each object (by its class's root).
    mutated: FxHashMap<Var<'a>, Label>,
    facts: Vec<Facts>,
    exits: Vec<Vec<Exit>>,
    next_exits: Vec<Vec<Exit>>,
    sinks: FxHashMap<&'a str, Label>,
    sources: Vec<&'a str>,
    opaque: bool,
    changed: bool,
    // Where the evaluation is.
    scope: usize,
    pc: Label,
    loops: Vec<TextRange>,
    touched: Vec<Label>,
}

impl<'a, 't> Analysis<'a, 't> {
    fn new(tools: &'t FlowTools, names_from_before: bool, module: &'a ast::ModModule) -> Self {
        let mut analysis = Analysis {
            tools,
            names_from_before,
            module: &module.body,
            scopes: vec![Scope::default()],
            scope_at: FxHashMap::default(),
            imported: FxHashMap::default(),
            defs: FxHashMap::default(),
            not_only_defs: FxHashSet::default(),
            vars: FxHashMap::default(),
            same: FxHashMap::default(),
            contents: FxHashMap::default(),
            mutated: FxHashMap::default(),
            facts: Vec::new(),
            exits: Vec::new(),
            next_exits: Vec::new(),
            sinks: FxHashMap::default(),
            sources: Vec::new(),
            opaque: false,
            changed: false,
            scope: 0,
            pc: Label::CLEAN,
            loops: Vec::new(),
            touched: Vec::new(),
        };
        let mut collect = Collect {
            analysis: &mut analysis,
            scope: 0,
            in_class: false,
        };
        collect.visit_body(&module.body);
        let scopes = analysis.scopes.len();
        analysis.facts = (0..scopes)
            .map(|id| Facts {
                params: vec![Label::CLEAN; analysis.scopes[id].params.len()],
                ..Facts::default()
            })
            .collect();
        analysis.exits = vec![Vec::new(); scopes];
        analysis.next_exits = vec![Vec::new(); scopes];
        for (id, scope) in analysis.scopes.iter().enumerate() {
            if scope.escapes {
                analysis.facts[id].params.fill(Label::ANY);
                analysis.facts[id].control = Label::ANY;
            }
            for (index, param) in scope.params.iter().enumerate() {
                analysis.vars.insert((id, param), Label::param(index));
            }
        }
        analysis
    }

    /// Runs the fixed point and reads the sinks off it.
    fn verdict(mut self) -> FlowVerdict {
        let mut settled = false;
        for _ in 0..MAX_ROUNDS {
            self.changed = false;
            self.round();
            if self.exits != self.next_exits {
                self.exits.clone_from(&self.next_exits);
                self.changed = true;
            }
            if self.opaque {
                break;
            }
            if !self.changed {
                settled = true;
                break;
            }
        }
        if self.opaque || !settled {
            return FlowVerdict::everything(self.tools);
        }
        let sinks = self.sinks.iter().map(|(tool, label)| {
            let mut taint = Taint {
                any: label.any,
                ..Taint::default()
            };
            for (bit, source) in self.sources.iter().enumerate() {
                if label.bits & (1 << bit) != 0 {
                    taint.tools.insert((*source).to_owned());
                }
            }
            ((*tool).to_owned(), taint)
        });
        FlowVerdict::new(sinks)
    }

    /// One pass over the module and every function body.
    fn round(&mut self) {
        for exits in &mut self.next_exits {
            exits.clear();
        }
        self.enter(0);
        self.body(self.module);
        self.leave(0);
        for id in 1..self.scopes.len() {
            let Some(body) = self.scopes[id].body else { continue };
            self.enter(id);
            match body {
                Body::Def(statements) => self.body(statements),
                Body::Lambda(expr) => {
                    let label = self.eval(expr);
                    self.returns(label);
                }
            }
            self.leave(id);
        }
    }

    fn enter(&mut self, scope: usize) {
        self.scope = scope;
        self.pc = Label::CLEAN;
        self.loops.clear();
        self.touched.push(Label::CLEAN);
    }

    fn leave(&mut self, scope: usize) {
        let read = self.touched.pop().unwrap_or_default().without_param();
        let value = self.facts[scope].value;
        if !value.covers(read) {
            self.facts[scope].value = value.join(read);
            self.changed = true;
        }
    }

    // ---- statements ----

    fn body(&mut self, statements: &'a [Stmt]) {
        for statement in statements {
            let saved = self.pc;
            self.pc = self.pc.join(self.exits_before(statement.start()));
            self.stmt(statement);
            self.pc = saved;
        }
    }

    /// The exits of this function that decide whether code at `at` runs:
    /// those before it, and those in a loop around it.
    fn exits_before(&self, at: TextSize) -> Label {
        self.exits[self.scope]
            .iter()
            .filter(|exit| match exit.only_in {
                Some(looped) => looped.contains(at),
                None => exit.at < at || exit.outer_loop.is_some_and(|l| l.contains(at)),
            })
            .fold(Label::CLEAN, |acc, exit| acc.join(exit.label))
    }

    fn exit(&mut self, at: TextSize, label: Label, in_loop: bool) {
        let exit = Exit {
            at,
            only_in: if in_loop { self.loops.last().copied() } else { None },
            outer_loop: self.loops.first().copied(),
            label: self.pc.join(label),
        };
        self.next_exits[self.scope].push(exit);
    }

    /// Evaluates `statements` under a control label joined with `control`.
    fn under(&mut self, control: Label, statements: &'a [Stmt]) {
        let saved = self.pc;
        self.pc = self.pc.join(control);
        self.body(statements);
        self.pc = saved;
    }

    fn stmt(&mut self, statement: &'a Stmt) {
        match statement {
            Stmt::Expr(s) => {
                self.eval(&s.value);
            }
            Stmt::Assign(s) => {
                let value = self.eval(&s.value);
                for target in &s.targets {
                    self.assign(target, value, Some(&s.value));
                }
            }
            Stmt::AnnAssign(s) => {
                if let Some(value) = &s.value {
                    let label = self.eval(value);
                    self.assign(&s.target, label, Some(value));
                }
            }
            Stmt::AugAssign(s) => {
                let value = self.eval(&s.value);
                let old = self.eval(&s.target);
                self.assign(&s.target, old.join(value), Some(&s.value));
                // `a += b` extends a list in place.
                if let Some((root, depth)) = self.root(&s.target) {
                    self.mutate(root, value, depth >= 2);
                    self.hold(root, &s.value);
                }
            }
            Stmt::Delete(s) => {
                for target in &s.targets {
                    if matches!(target, Expr::Subscript(_) | Expr::Attribute(_)) {
                        let label = self.eval(target);
                        if let Some((root, depth)) = self.root(target) {
                            self.mutate(root, label, depth >= 2);
                        }
                    }
                }
            }
            Stmt::Return(s) => {
                let label = s.value.as_deref().map_or(Label::CLEAN, |v| self.eval(v));
                self.returns(label);
                self.exit(s.start(), Label::CLEAN, false);
            }
            Stmt::Raise(s) => {
                let exc = s.exc.as_deref().map_or(Label::CLEAN, |e| self.eval(e));
                let cause = s.cause.as_deref().map_or(Label::CLEAN, |e| self.eval(e));
                self.touch(exc.join(cause));
                self.exit(s.start(), Label::CLEAN, false);
                self.raises(Label::CLEAN);
            }
            Stmt::Assert(s) => {
                let test = self.eval(&s.test);
                if let Some(msg) = &s.msg {
                    self.eval(msg);
                }
                self.exit(s.start(), test, false);
                self.raises(test);
            }
            Stmt::Break(s) => self.exit(s.start(), Label::CLEAN, true),
            Stmt::Continue(s) => self.exit(s.start(), Label::CLEAN, true),
            Stmt::If(s) => {
                let mut tests = self.eval(&s.test);
                self.under(tests, &s.body);
                for clause in &s.elif_else_clauses {
                    if let Some(test) = &clause.test {
                        tests = tests.join(self.eval_under(tests, test));
                    }
                    self.under(tests, &clause.body);
                }
            }
            Stmt::While(s) => {
                self.loops.push(s.range());
                let test = self.eval(&s.test);
                self.under(test, &s.body);
                self.under(test, &s.orelse);
                self.loops.pop();
            }
            Stmt::For(s) => {
                let iter = self.eval(&s.iter);
                self.assign(&s.target, iter, Some(&s.iter));
                self.loops.push(s.range());
                self.under(iter, &s.body);
                self.under(iter, &s.orelse);
                self.loops.pop();
            }
            Stmt::With(s) => {
                for item in &s.items {
                    let label = self.eval(&item.context_expr);
                    if let Some(target) = &item.optional_vars {
                        self.assign(target, label, Some(&item.context_expr));
                    }
                }
                self.body(&s.body);
            }
            Stmt::Match(s) => {
                let subject = self.eval(&s.subject);
                let mut decided = subject;
                for case in &s.cases {
                    let mut captured = Vec::new();
                    captures(&case.pattern, &mut captured);
                    for name in captured {
                        self.write(name, decided.join(self.pc));
                    }
                    if let Some(guard) = &case.guard {
                        decided = decided.join(self.eval_under(decided, guard));
                    }
                    self.under(decided, &case.body);
                }
            }
            Stmt::Try(s) => {
                self.touched.push(Label::CLEAN);
                self.body(&s.body);
                let tried = self.untouch();
                for handler in &s.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(kind) = &handler.type_ {
                        self.eval(kind);
                    }
                    if let Some(name) = &handler.name {
                        self.write(name.id.as_str(), tried.join(self.pc));
                    }
                    self.under(tried, &handler.body);
                }
                self.under(tried, &s.orelse);
                self.body(&s.finalbody);
            }
            Stmt::FunctionDef(s) => {
                let Some(&id) = self.scope_at.get(&s.range()) else {
                    return;
                };
                for decorator in &s.decorator_list {
                    self.eval(&decorator.expression);
                }
                self.defaults(id, &s.parameters);
                let mut value = self.facts[id].value.join(self.pc);
                if !s.decorator_list.is_empty() {
                    // The name holds what the decorator returned: anything.
                    value = Label::ANY;
                    if let Some(var) = self.var(s.name.id.as_str()) {
                        self.not_only_defs.insert(var);
                    }
                }
                self.write(s.name.id.as_str(), value);
            }
            Stmt::ClassDef(s) => {
                let mut label = Label::CLEAN;
                for decorator in &s.decorator_list {
                    label = label.join(self.eval(&decorator.expression));
                }
                if let Some(arguments) = &s.arguments {
                    for arg in &arguments.args {
                        label = label.join(self.eval(arg));
                    }
                    for keyword in &arguments.keywords {
                        label = label.join(self.eval(&keyword.value));
                    }
                }
                self.touched.push(Label::CLEAN);
                self.body(&s.body);
                label = label.join(self.untouch());
                self.write(s.name.id.as_str(), label.join(self.pc));
                if let Some(var) = self.var(s.name.id.as_str()) {
                    self.not_only_defs.insert(var);
                }
            }
            Stmt::Import(s) => {
                for alias in &s.names {
                    let module = alias.name.id.as_str();
                    self.import(module);
                    let bound = match &alias.asname {
                        Some(name) => name.id.as_str(),
                        None => module.split('.').next().unwrap_or(module),
                    };
                    self.write(bound, self.pc);
                }
            }
            Stmt::ImportFrom(s) => {
                let module = s.module.as_ref().map_or("", |m| m.id.as_str());
                self.import(module);
                for alias in &s.names {
                    let original = alias.name.id.as_str();
                    if original == "*" || alias.asname.is_some() && reaches_by_name(original) {
                        // Everything, or `attrgetter` under a name of its own.
                        self.opaque = true;
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.as_str();
                    self.write(bound, self.pc);
                }
            }
            Stmt::Global(_) | Stmt::Nonlocal(_) | Stmt::Pass(_) | Stmt::TypeAlias(_) | Stmt::IpyEscapeCommand(_) => {}
        }
    }

    fn import(&mut self, module: &str) {
        let mut prefix = String::new();
        for part in module.split('.') {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part);
            if OPAQUE_MODULES.contains(&prefix.as_str()) {
                self.opaque = true;
            }
        }
    }

    /// `getattr(obj, name)` and its kin: opaque unless every attribute
    /// name is a plain string literal.
    fn named_attributes(&mut self, function: &str, call: &'a ast::ExprCall) {
        if EVALUATING_FUNCTIONS.contains(&function) {
            self.opaque = true;
        }
        if !NAMED_ATTRIBUTE_FUNCTIONS.contains(&function) {
            return;
        }
        let names: Vec<&Expr> = match function {
            "attrgetter" => call.arguments.args.iter().collect(),
            "methodcaller" => call.arguments.args.first().into_iter().collect(),
            _ => call.arguments.args.get(1).into_iter().collect(),
        };
        let plain = |name: &Expr| match name {
            Expr::StringLiteral(literal) => {
                let name = literal.value.to_str();
                !name.starts_with("__") && !name.split('.').any(|part| OPAQUE_ATTRIBUTES.contains(&part))
            }
            _ => false,
        };
        if names.is_empty() || !names.into_iter().all(plain) {
            self.opaque = true;
        }
    }

    /// A def's or lambda's parameter defaults, evaluated where it is
    /// defined, are among what its parameters may hold.
    fn defaults(&mut self, id: usize, parameters: &'a ast::Parameters) {
        for parameter in parameters
            .posonlyargs
            .iter()
            .chain(&parameters.args)
            .chain(&parameters.kwonlyargs)
        {
            if let Some(default) = &parameter.default {
                let label = self.eval(default);
                let label = self.concrete(label);
                let name = parameter.parameter.name.id.as_str();
                if let Some(index) = self.scopes[id].params.iter().position(|p| *p == name) {
                    self.grow_param(id, index, label);
                }
            }
        }
    }

    /// The current function may raise, decided by `label` and the control.
    fn raises(&mut self, label: Label) {
        if self.scope == 0 {
            return;
        }
        let label = self.concrete(self.pc.join(label));
        let facts = &mut self.facts[self.scope];
        if !facts.raises.covers(label) {
            facts.raises = facts.raises.join(label);
            self.changed = true;
        }
    }

    fn returns(&mut self, label: Label) {
        let label = label.join(self.pc);
        let facts = &mut self.facts[self.scope];
        if !facts.ret.covers(label) {
            facts.ret = facts.ret.join(label);
            self.changed = true;
        }
    }

    /// `target = value`: `value`'s names become aliases of the target's.
    fn assign(&mut self, target: &'a Expr, label: Label, value: Option<&'a Expr>) {
        let label = label.join(self.pc);
        match target {
            Expr::Name(name) => {
                let name = name.id.as_str();
                self.write(name, label);
                if let Some(var) = self.var(name) {
                    self.not_only_defs.insert(var);
                    if let Some(value) = value {
                        self.link(var, value);
                    }
                }
            }
            Expr::Tuple(tuple) => {
                for elt in &tuple.elts {
                    self.assign(elt, label, value);
                }
            }
            Expr::List(list) => {
                for elt in &list.elts {
                    self.assign(elt, label, value);
                }
            }
            Expr::Starred(starred) => self.assign(&starred.value, label, value),
            Expr::Attribute(_) | Expr::Subscript(_) => {
                let at = self.eval(target);
                if let Some((root, depth)) = self.root(target) {
                    self.mutate(root, label.join(at), depth >= 2);
                    if let Some(value) = value {
                        self.hold(root, value);
                    }
                }
            }
            _ => {
                self.eval(target);
            }
        }
    }

    // ---- names ----

    /// The scope a name read or written in the current scope lives in.
    fn resolve(&self, name: &str) -> Option<usize> {
        let mut scope = self.scope;
        loop {
            let here = &self.scopes[scope];
            if here.globals.contains(name) {
                return Some(0);
            }
            if here.locals.contains(name) && !here.nonlocals.contains(name) {
                return Some(scope);
            }
            scope = here.parent?;
        }
    }

    fn var(&self, name: &'a str) -> Option<Var<'a>> {
        self.resolve(name).map(|scope| (scope, name))
    }

    fn write(&mut self, name: &'a str, label: Label) {
        let Some(var) = self.var(name) else { return };
        let label = if var.0 == self.scope {
            label
        } else {
            self.concrete(label).join(self.facts[self.scope].control)
        };
        let old = self.vars.get(&var).copied().unwrap_or_default();
        if !old.covers(label) {
            self.vars.insert(var, old.join(label));
            self.changed = true;
        }
    }

    /// A name's label as read in the current scope.
    fn read(&mut self, var: Var<'a>) -> Label {
        let mut label = self.vars.get(&var).copied().unwrap_or_default();
        if var.0 != self.scope {
            label = self.concrete_in(var.0, label);
        }
        // A container's value includes what was stored in what it holds.
        for root in self.reachable(self.find(var)) {
            label = label.join(self.mutated.get(&root).copied().unwrap_or_default());
        }
        label
    }

    /// `label` as it leaves the current function: its parameters replaced
    /// by what they may hold.
    fn concrete(&self, label: Label) -> Label {
        self.concrete_in(self.scope, label)
    }

    fn concrete_in(&self, scope: usize, label: Label) -> Label {
        if label.param == 0 {
            return label;
        }
        let params = &self.facts[scope].params;
        params
            .iter()
            .enumerate()
            .filter(|(index, _)| has_param(label.param, *index))
            .fold(label.without_param(), |acc, (_, param)| acc.join(*param))
    }

    fn grow_param(&mut self, id: usize, index: usize, label: Label) {
        let label = label.without_param();
        if let Some(param) = self.facts[id].params.get_mut(index)
            && !param.covers(label)
        {
            *param = param.join(label);
            self.changed = true;
        }
    }

    fn grow_params(&mut self, id: usize, label: Label) {
        for index in 0..self.facts[id].params.len() {
            self.grow_param(id, index, label);
        }
    }

    /// The parameters of function `id` each argument of `call` binds:
    /// by position, by name, or, where it cannot tell (`*args`, `**kw`),
    /// every parameter.
    fn bound_params(&self, id: usize, call: &'a ast::ExprCall) -> Vec<(Vec<usize>, &'a Expr)> {
        let scope = &self.scopes[id];
        let every: Vec<usize> = (0..scope.params.len()).collect();
        let mut bound = Vec::new();
        for (index, arg) in call.arguments.args.iter().enumerate() {
            let params = match arg {
                Expr::Starred(_) => every.clone(),
                _ if index < scope.positional => vec![index],
                _ => scope.vararg.map_or_else(|| every.clone(), |v| vec![v]),
            };
            bound.push((params, arg));
        }
        for keyword in &call.arguments.keywords {
            let named = keyword
                .arg
                .as_ref()
                .and_then(|name| scope.params.iter().position(|p| *p == name.id.as_str()));
            let params = match (named, keyword.arg.is_some()) {
                (Some(index), _) => vec![index],
                (None, true) => scope.kwarg.map_or_else(|| every.clone(), |k| vec![k]),
                (None, false) => every.clone(),
            };
            bound.push((params, &keyword.value));
        }
        bound
    }

    // ---- aliases and mutation ----

    fn find(&self, mut var: Var<'a>) -> Var<'a> {
        while let Some(&parent) = self.same.get(&var) {
            var = parent;
        }
        var
    }

    /// `a` and `b` may be one object.
    fn unite(&mut self, a: Var<'a>, b: Var<'a>) {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        self.same.insert(b, a);
        if let Some(moved) = self.mutated.remove(&b) {
            let kept = self.mutated.entry(a).or_default();
            *kept = kept.join(moved);
        }
        if let Some(moved) = self.contents.remove(&b) {
            self.contents.entry(a).or_default().extend(moved);
        }
        self.changed = true;
    }

    /// The object `var` names may hold `content`'s.
    fn contain(&mut self, var: Var<'a>, content: Var<'a>) {
        let root = self.find(var);
        if self.contents.entry(root).or_default().insert(content) {
            self.changed = true;
        }
    }

    /// `var = value`: the names `value` may be (one object) or hold.
    fn link(&mut self, var: Var<'a>, value: &'a Expr) {
        let (mut same, mut held) = (Vec::new(), Vec::new());
        self.flows(value, &mut same, &mut held);
        for name in same {
            if let Some(other) = self.var(name) {
                self.unite(var, other);
            }
        }
        for name in held {
            if let Some(other) = self.var(name) {
                self.contain(var, other);
            }
        }
    }

    /// `var` now holds whatever `value` names.
    fn hold(&mut self, var: Var<'a>, value: &'a Expr) {
        let mut names = Vec::new();
        names_in(value, &mut names);
        for name in names {
            if let Some(other) = self.var(name) {
                self.contain(var, other);
            }
        }
    }

    /// The names whose objects `expr`'s value may be (`same`) or hold
    /// (`held`). A tool's result is a new object; a builtin's holds its
    /// arguments at most; any other call may return one of them.
    fn flows(&self, expr: &'a Expr, same: &mut Vec<&'a str>, held: &mut Vec<&'a str>) {
        match expr {
            Expr::Name(name) => same.push(name.id.as_str()),
            Expr::Attribute(e) => self.flows(&e.value, same, held),
            Expr::Subscript(e) => self.flows(&e.value, same, held),
            Expr::Await(e) => self.flows(&e.value, same, held),
            Expr::Named(e) => self.flows(&e.value, same, held),
            Expr::Starred(e) => self.flows(&e.value, same, held),
            Expr::If(e) => {
                self.flows(&e.body, same, held);
                self.flows(&e.orelse, same, held);
            }
            Expr::BoolOp(e) => e.values.iter().for_each(|v| self.flows(v, same, held)),
            Expr::Call(call) => match &*call.func {
                Expr::Name(func) if self.var(func.id.as_str()).is_none() => {
                    if !self.tools.is_tool(func.id.as_str()) {
                        names_in(expr, held);
                    }
                }
                _ => names_in(expr, same),
            },
            Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::NumberLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_) => {}
            _ => names_in(expr, held),
        }
    }

    /// The name an attribute or subscript chain starts from (`a` of
    /// `a.b[c]`), and how many steps below it the chain ends.
    fn root(&self, expr: &'a Expr) -> Option<(Var<'a>, usize)> {
        match expr {
            Expr::Name(name) => self.var(name.id.as_str()).map(|var| (var, 0)),
            Expr::Attribute(attribute) => self.root(&attribute.value).map(|(var, depth)| (var, depth + 1)),
            Expr::Subscript(subscript) => self.root(&subscript.value).map(|(var, depth)| (var, depth + 1)),
            Expr::Call(call) => match &*call.func {
                Expr::Attribute(attribute) => self.root(&attribute.value).map(|(var, depth)| (var, depth + 1)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The object `var` names may now hold `label`; with `deep`, so may
    /// any object it holds (`a[0].append(x)`).
    fn mutate(&mut self, var: Var<'a>, label: Label, deep: bool) {
        let label = self.concrete(label.join(self.pc)).join(self.facts[self.scope].control);
        let mut roots = vec![self.find(var)];
        if deep {
            roots = self.reachable(roots[0]);
        }
        for root in roots {
            let old = self.mutated.get(&root).copied().unwrap_or_default();
            if !old.covers(label) {
                self.mutated.insert(root, old.join(label));
                self.changed = true;
            }
        }
    }

    /// `root`'s class and every class it holds, transitively.
    fn reachable(&self, root: Var<'a>) -> Vec<Var<'a>> {
        let mut seen = vec![root];
        let mut next = 0;
        while let Some(&at) = seen.get(next) {
            next += 1;
            for content in self.contents.get(&at).into_iter().flatten() {
                let content = self.find(*content);
                if !seen.contains(&content) {
                    seen.push(content);
                }
            }
        }
        seen
    }

    // ---- expressions ----

    fn touch(&mut self, label: Label) {
        if let Some(top) = self.touched.last_mut() {
            *top = top.join(label);
        }
    }

    /// Ends a `touched` frame, folding it into the one around it.
    fn untouch(&mut self) -> Label {
        let label = self.touched.pop().unwrap_or_default();
        self.touch(label);
        label
    }

    fn eval(&mut self, expr: &'a Expr) -> Label {
        let label = self.eval_inner(expr);
        self.touch(label);
        label
    }

    fn eval_under(&mut self, control: Label, expr: &'a Expr) -> Label {
        let saved = self.pc;
        self.pc = self.pc.join(control);
        let label = self.eval(expr);
        self.pc = saved;
        label
    }

    fn eval_inner(&mut self, expr: &'a Expr) -> Label {
        match expr {
            Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::NumberLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_)
            | Expr::IpyEscapeCommand(_) => Label::CLEAN,
            Expr::Name(name) => self.name(name.id.as_str(), false),
            Expr::Call(call) => self.call(call),
            Expr::BoolOp(op) => {
                let mut label = Label::CLEAN;
                for value in &op.values {
                    label = label.join(self.eval_under(label, value));
                }
                label
            }
            Expr::If(e) => {
                let test = self.eval(&e.test);
                let body = self.eval_under(test, &e.body);
                let orelse = self.eval_under(test, &e.orelse);
                test.join(body).join(orelse)
            }
            Expr::Named(e) => {
                let value = self.eval(&e.value);
                self.assign(&e.target, value, Some(&e.value));
                value
            }
            Expr::Lambda(e) => {
                let Some(&id) = self.scope_at.get(&e.range()) else {
                    return Label::ANY;
                };
                if let Some(parameters) = &e.parameters {
                    self.defaults(id, parameters);
                }
                self.facts[id].value
            }
            Expr::ListComp(e) => self.comprehension(&e.generators, &[&e.elt]),
            Expr::SetComp(e) => self.comprehension(&e.generators, &[&e.elt]),
            Expr::Generator(e) => self.comprehension(&e.generators, &[&e.elt]),
            Expr::DictComp(e) => match &e.key {
                Some(key) => self.comprehension(&e.generators, &[key, &e.value]),
                None => self.comprehension(&e.generators, &[&e.value]),
            },
            Expr::Yield(e) => {
                let value = e.value.as_deref().map_or(Label::CLEAN, |v| self.eval(v));
                self.returns(value);
                // What is sent in comes from whoever drives the generator.
                Label::SENT
            }
            Expr::YieldFrom(e) => {
                let value = self.eval(&e.value);
                self.returns(value);
                Label::SENT.join(value)
            }
            Expr::Attribute(attribute) => {
                let attr = attribute.attr.id.as_str();
                if OPAQUE_ATTRIBUTES.contains(&attr) || reaches_by_name(attr) {
                    // `operator.attrgetter` as a value: called later, unseen.
                    self.opaque = true;
                }
                self.eval(&attribute.value)
            }
            _ => {
                let mut label = Label::CLEAN;
                for child in children(expr) {
                    label = label.join(self.eval(child));
                }
                label
            }
        }
    }

    /// A name read: a callee (`callee`) or a value.
    fn name(&mut self, name: &'a str, callee: bool) -> Label {
        if let Some(var) = self.var(name) {
            if !callee && let Some(functions) = self.defs.get(&var) {
                // A function passed around may be called with anything.
                for id in functions.clone() {
                    self.escape(id);
                }
            }
            if !callee && self.imported.contains_key(&var) && reaches_by_name(name) {
                self.opaque = true;
            }
            return self.read(var);
        }
        if !callee && (reaches_by_name(name) || OPAQUE_BUILTINS.contains(&name)) {
            // `g = globals` or `ga = getattr`: called later, unseen.
            self.opaque = true;
        }
        if self.tools.is_tool(name) {
            if !callee && self.tools.guarded(name).is_some() {
                // The tool as a value: its calls cannot be followed.
                self.sink(name, Label::ANY);
            }
            return Label::CLEAN;
        }
        if name == "__builtins__" {
            self.opaque = true;
        }
        if self.names_from_before && !is_builtin(name) && name != LOAD_ARTIFACT {
            // An earlier cell's name; calling it may call any tool.
            if callee {
                self.opaque = true;
            }
            return Label::ANY;
        }
        Label::CLEAN
    }

    fn escape(&mut self, id: usize) {
        if !self.scopes[id].escapes {
            self.scopes[id].escapes = true;
            self.grow_params(id, Label::ANY);
            self.facts[id].control = Label::ANY;
            self.changed = true;
        }
    }

    fn comprehension(&mut self, generators: &'a [ast::Comprehension], elts: &[&'a Expr]) -> Label {
        let mut decided = Label::CLEAN;
        for generator in generators {
            let iter = self.eval_under(decided, &generator.iter);
            decided = decided.join(iter);
            self.assign(&generator.target, decided, Some(&generator.iter));
            for condition in &generator.ifs {
                decided = decided.join(self.eval_under(decided, condition));
            }
        }
        let mut label = decided;
        for elt in elts {
            label = label.join(self.eval_under(decided, elt));
        }
        label
    }

    fn call(&mut self, call: &'a ast::ExprCall) -> Label {
        match &*call.func {
            Expr::Name(func) => {
                let name = func.id.as_str();
                match self.var(name) {
                    None if self.tools.is_tool(name) => self.tool_call(name, call),
                    None => self.builtin_call(name, call),
                    Some(var) => self.named_call(var, call),
                }
            }
            Expr::Attribute(attribute) => {
                if OPAQUE_ATTRIBUTES.contains(&attribute.attr.id.as_str()) {
                    self.opaque = true;
                }
                let receiver = match &*attribute.value {
                    Expr::Name(name) => self.name(name.id.as_str(), true),
                    other => self.eval(other),
                };
                let (args, names) = self.arguments(call);
                self.named_attributes(attribute.attr.id.as_str(), call);
                let module = self
                    .root(&attribute.value)
                    .and_then(|(var, _)| self.imported.get(&var).copied());
                match module {
                    Some(module) => {
                        if MUTATING_MODULES.contains(&module) {
                            self.mutate_arguments(call, args);
                        }
                        if FILE_MODULES.contains(&module) {
                            return receiver.join(args).join(Label::ANY);
                        }
                    }
                    None => {
                        if !PURE_METHODS.contains(&attribute.attr.id.as_str())
                            && let Some((root, depth)) = self.root(&attribute.value)
                        {
                            self.mutate(root, args, depth >= 1);
                            for name in names {
                                if let Some(other) = self.var(name) {
                                    self.contain(root, other);
                                }
                            }
                        }
                    }
                }
                receiver.join(args)
            }
            other => {
                let callee = self.eval(other);
                let (args, _) = self.arguments(call);
                self.mutate_arguments(call, args);
                callee.join(args)
            }
        }
    }

    /// Every argument's label, and the names they read.
    fn arguments(&mut self, call: &'a ast::ExprCall) -> (Label, Vec<&'a str>) {
        let mut label = Label::CLEAN;
        let mut names = Vec::new();
        for arg in &call.arguments.args {
            label = label.join(self.eval(arg));
            names_in(arg, &mut names);
        }
        for keyword in &call.arguments.keywords {
            label = label.join(self.eval(&keyword.value));
            names_in(&keyword.value, &mut names);
        }
        (label, names)
    }

    /// A call of an unknown function: each argument may now hold the others.
    fn mutate_arguments(&mut self, call: &'a ast::ExprCall, label: Label) {
        let roots: Vec<Var<'a>> = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value))
            .filter_map(|arg| self.root(arg).map(|(var, _)| var))
            .collect();
        for root in roots {
            self.mutate(root, label, true);
        }
    }

    fn tool_call(&mut self, name: &'a str, call: &'a ast::ExprCall) -> Label {
        let tools = self.tools;
        let guarded = tools.guarded(name).cloned();
        let params = tools.params(name);
        let mut label = Label::CLEAN;
        let mut reaching = self.pc;
        for (index, arg) in call.arguments.args.iter().enumerate() {
            let arg_label = self.eval(arg);
            label = label.join(arg_label);
            let param = match arg {
                Expr::Starred(_) => None,
                _ => params.get(index).map(String::as_str),
            };
            if guarded.as_ref().is_some_and(|g| param.is_none_or(|p| g.covers(p))) {
                reaching = reaching.join(arg_label);
            }
        }
        for keyword in &call.arguments.keywords {
            let arg_label = self.eval(&keyword.value);
            label = label.join(arg_label);
            let param = keyword.arg.as_ref().map(|a| a.id.as_str());
            if guarded.as_ref().is_some_and(|g| param.is_none_or(|p| g.covers(p))) {
                reaching = reaching.join(arg_label);
            }
        }
        if guarded.is_some() {
            let reaching = self.concrete(reaching).join(self.facts[self.scope].control);
            self.sink(name, reaching);
        }
        if self.tools.is_untrusted(name) {
            label = label.join(self.source(name));
        }
        label
    }

    fn source(&mut self, tool: &'a str) -> Label {
        let bit = match self.sources.iter().position(|s| *s == tool) {
            Some(bit) => bit,
            None if self.sources.len() < MAX_SOURCES => {
                self.sources.push(tool);
                self.sources.len() - 1
            }
            None => return Label::ANY,
        };
        Label {
            bits: 1 << bit,
            ..Label::CLEAN
        }
    }

    fn sink(&mut self, tool: &'a str, label: Label) {
        let label = label.without_param();
        let old = self.sinks.get(tool).copied().unwrap_or_default();
        if !old.covers(label) {
            self.sinks.insert(tool, old.join(label));
            self.changed = true;
        }
    }

    fn builtin_call(&mut self, name: &'a str, call: &'a ast::ExprCall) -> Label {
        if OPAQUE_BUILTINS.contains(&name) {
            self.opaque = true;
        }
        let (args, _) = self.arguments(call);
        self.named_attributes(name, call);
        if matches!(name, "setattr" | "delattr") {
            // setattr(obj, "x", value) stores into obj.
            if let Some((root, depth)) = call.arguments.args.first().and_then(|obj| self.root(obj)) {
                self.mutate(root, args, depth >= 1);
            }
        }
        if name == LOAD_ARTIFACT || name == "open" {
            // An artifact or a workspace file may hold any tool's result.
            return args.join(Label::ANY);
        }
        if !is_builtin(name) {
            // An unknown name (NameError) or, in a later cell, an earlier
            // cell's function.
            return args.join(self.name(name, true));
        }
        args
    }

    /// A call of a name the script binds: its own function (followed) or
    /// any other callable (its result from it and its arguments).
    fn named_call(&mut self, var: Var<'a>, call: &'a ast::ExprCall) -> Label {
        let mut callee = self.read(var);
        if let Some(&module) = self.imported.get(&var) {
            // `from operator import attrgetter`, `from pathlib import Path`.
            self.named_attributes(var.1, call);
            if FILE_MODULES.contains(&module) {
                callee = callee.join(Label::ANY);
            }
        }
        let functions = self.defs.get(&var).cloned().unwrap_or_default();
        let mut label = Label::CLEAN;
        let mut args = Label::CLEAN;
        let mut by_param: Vec<(Vec<usize>, Label)> = Vec::new();
        for id in &functions {
            let id = *id;
            by_param.clear();
            for (params, arg) in self.bound_params(id, call) {
                let arg_label = self.eval(arg);
                args = args.join(arg_label);
                let concrete = self.concrete(arg_label);
                for &index in &params {
                    self.grow_param(id, index, concrete);
                    // A parameter may be the object the argument names.
                    let name = self.scopes[id].params[index];
                    self.link((id, name), arg);
                }
                by_param.push((params, arg_label));
            }
            let control = self.concrete(self.pc).join(self.facts[self.scope].control);
            let facts = &mut self.facts[id];
            if !facts.control.covers(control) {
                facts.control = facts.control.join(control);
                self.changed = true;
            }
            // A helper that may raise ends this code as early as a `raise`.
            let raises = self.facts[id].raises;
            if raises != Label::CLEAN {
                self.exit(call.start(), raises, false);
                self.raises(raises);
            }
            // The call's result: what the function returns, its
            // parameters replaced by this call's arguments.
            let ret = self.facts[id].ret;
            label = label.join(ret.without_param());
            for (params, arg_label) in &by_param {
                if params.iter().any(|&index| has_param(ret.param, index)) {
                    label = label.join(*arg_label);
                }
            }
        }
        if functions.is_empty() || self.not_only_defs.contains(&var) {
            let (all, _) = self.arguments(call);
            args = args.join(all);
            let reads_only = self
                .imported
                .get(&var)
                .is_some_and(|module| !MUTATING_MODULES.contains(module));
            if !reads_only {
                self.mutate_arguments(call, args);
            }
            label = label.join(callee).join(args);
        }
        label
    }
}

/// Whether `name` is a function that reaches attributes or code by a
/// string (`getattr`, `attrgetter`, `get_type_hints`...).
fn reaches_by_name(name: &str) -> bool {
    NAMED_ATTRIBUTE_FUNCTIONS.contains(&name) || EVALUATING_FUNCTIONS.contains(&name)
}

/// The expressions directly inside `expr`.
fn children(expr: &Expr) -> Vec<&Expr> {
    struct Children<'a>(Vec<&'a Expr>);
    impl<'a> Visitor<'a> for Children<'a> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            self.0.push(expr);
        }
    }
    let mut children = Children(Vec::new());
    visitor::walk_expr(&mut children, expr);
    children.0
}

/// Every name `expr` reads, at any depth (lambdas' and comprehensions'
/// own names included: an alias too many is only imprecision).
fn names_in<'a>(expr: &'a Expr, names: &mut Vec<&'a str>) {
    struct Names<'a, 'b>(&'b mut Vec<&'a str>);
    impl<'a> Visitor<'a> for Names<'a, '_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(name) = expr {
                self.0.push(name.id.as_str());
            }
            visitor::walk_expr(self, expr);
        }
    }
    Names(names).visit_expr(expr);
}

/// The names a `case` pattern binds.
fn captures<'a>(pattern: &'a Pattern, names: &mut Vec<&'a str>) {
    struct Captures<'a, 'b>(&'b mut Vec<&'a str>);
    impl<'a> Visitor<'a> for Captures<'a, '_> {
        fn visit_pattern(&mut self, pattern: &'a Pattern) {
            match pattern {
                Pattern::MatchAs(p) => self.0.extend(p.name.as_ref().map(|n| n.id.as_str())),
                Pattern::MatchStar(p) => self.0.extend(p.name.as_ref().map(|n| n.id.as_str())),
                Pattern::MatchMapping(p) => self.0.extend(p.rest.as_ref().map(|n| n.id.as_str())),
                _ => {}
            }
            visitor::walk_pattern(self, pattern);
        }
    }
    Captures(names).visit_pattern(pattern);
}

/// The first pass: scopes, what each binds, imports and `def`s.
struct Collect<'x, 'a, 't> {
    analysis: &'x mut Analysis<'a, 't>,
    scope: usize,
    in_class: bool,
}

impl<'a> Collect<'_, 'a, '_> {
    fn bind(&mut self, name: &'a str) {
        let here = &self.analysis.scopes[self.scope];
        if here.globals.contains(name) {
            self.analysis.scopes[0].locals.insert(name);
        } else if !here.nonlocals.contains(name) {
            self.analysis.scopes[self.scope].locals.insert(name);
        }
    }

    fn bind_target(&mut self, target: &'a Expr) {
        match target {
            Expr::Name(name) => self.bind(name.id.as_str()),
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::List(list) => list.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::Starred(starred) => self.bind_target(&starred.value),
            _ => {}
        }
    }

    /// A new function scope with `parameters`; returns its id.
    fn function(&mut self, range: TextRange, parameters: Option<&'a ast::Parameters>, body: Body<'a>) -> usize {
        let id = self.analysis.scopes.len();
        let mut scope = Scope {
            parent: Some(self.scope),
            body: Some(body),
            escapes: self.in_class,
            ..Scope::default()
        };
        if let Some(parameters) = parameters {
            let positional = parameters.posonlyargs.iter().chain(&parameters.args);
            scope.params.extend(positional.map(|p| p.parameter.name.id.as_str()));
            scope.positional = scope.params.len();
            if let Some(vararg) = &parameters.vararg {
                scope.vararg = Some(scope.params.len());
                scope.params.push(vararg.name.id.as_str());
            }
            scope
                .params
                .extend(parameters.kwonlyargs.iter().map(|p| p.parameter.name.id.as_str()));
            if let Some(kwarg) = &parameters.kwarg {
                scope.kwarg = Some(scope.params.len());
                scope.params.push(kwarg.name.id.as_str());
            }
            scope.locals.extend(scope.params.iter().copied());
        }
        self.analysis.scopes.push(scope);
        self.analysis.scope_at.insert(range, id);
        id
    }

    fn inside(&mut self, id: usize, walk: impl FnOnce(&mut Self)) {
        let (scope, in_class) = (self.scope, self.in_class);
        self.scope = id;
        self.in_class = false;
        walk(self);
        self.scope = scope;
        self.in_class = in_class;
    }
}

impl<'a> Visitor<'a> for Collect<'_, 'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(s) => {
                for decorator in &s.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                self.visit_parameters(&s.parameters);
                let name = s.name.id.as_str();
                self.bind(name);
                let id = self.function(s.range(), Some(&s.parameters), Body::Def(&s.body));
                if !s.decorator_list.is_empty() {
                    self.analysis.scopes[id].escapes = true;
                }
                let var = (
                    if self.analysis.scopes[self.scope].globals.contains(name) {
                        0
                    } else {
                        self.scope
                    },
                    name,
                );
                self.analysis.defs.entry(var).or_default().push(id);
                self.inside(id, |walk| {
                    for statement in &s.body {
                        walk.visit_stmt(statement);
                    }
                });
            }
            Stmt::ClassDef(s) => {
                self.bind(s.name.id.as_str());
                for decorator in &s.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                if let Some(arguments) = &s.arguments {
                    self.visit_arguments(arguments);
                }
                let in_class = self.in_class;
                self.in_class = true;
                for statement in &s.body {
                    self.visit_stmt(statement);
                }
                self.in_class = in_class;
            }
            Stmt::Global(s) => {
                for name in &s.names {
                    self.analysis.scopes[self.scope].globals.insert(name.id.as_str());
                    self.analysis.scopes[0].locals.insert(name.id.as_str());
                }
            }
            Stmt::Nonlocal(s) => {
                for name in &s.names {
                    self.analysis.scopes[self.scope].nonlocals.insert(name.id.as_str());
                }
            }
            Stmt::Import(s) => {
                for alias in &s.names {
                    let module = alias.name.id.as_str();
                    let top = module.split('.').next().unwrap_or(module);
                    let bound = alias.asname.as_ref().map_or(top, |n| n.id.as_str());
                    self.bind(bound);
                    self.analysis.imported.insert((self.scope, bound), top);
                }
            }
            Stmt::ImportFrom(s) => {
                let module = s.module.as_ref().map_or("", |m| m.id.as_str());
                let top = module.split('.').next().unwrap_or(module);
                for alias in &s.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.as_str();
                    if bound != "*" {
                        self.bind(bound);
                        self.analysis.imported.insert((self.scope, bound), top);
                    }
                }
            }
            Stmt::Assign(s) => {
                s.targets.iter().for_each(|t| self.bind_target(t));
                visitor::walk_stmt(self, stmt);
            }
            Stmt::AugAssign(s) => {
                self.bind_target(&s.target);
                visitor::walk_stmt(self, stmt);
            }
            Stmt::AnnAssign(s) => {
                self.bind_target(&s.target);
                visitor::walk_stmt(self, stmt);
            }
            Stmt::For(s) => {
                self.bind_target(&s.target);
                visitor::walk_stmt(self, stmt);
            }
            Stmt::With(s) => {
                for item in &s.items {
                    if let Some(target) = &item.optional_vars {
                        self.bind_target(target);
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Try(s) => {
                for handler in &s.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(name) = &handler.name {
                        self.bind(name.id.as_str());
                    }
                }
                visitor::walk_stmt(self, stmt);
            }
            Stmt::Match(s) => {
                for case in &s.cases {
                    let mut names = Vec::new();
                    captures(&case.pattern, &mut names);
                    names.into_iter().for_each(|n| self.bind(n));
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(e) => {
                if let Some(parameters) = &e.parameters {
                    self.visit_parameters(parameters);
                }
                let id = self.function(e.range(), e.parameters.as_deref(), Body::Lambda(&e.body));
                self.analysis.scopes[id].escapes = true;
                self.inside(id, |walk| walk.visit_expr(&e.body));
            }
            Expr::Named(e) => {
                self.bind_target(&e.target);
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_comprehension(&mut self, comprehension: &'a ast::Comprehension) {
        self.bind_target(&comprehension.target);
        visitor::walk_comprehension(self, comprehension);
    }

    fn visit_parameters(&mut self, parameters: &'a ast::Parameters) {
        // Defaults are evaluated where the function is defined; the
        // parameter names belong to the function (see `function`).
        for parameter in parameters
            .posonlyargs
            .iter()
            .chain(&parameters.args)
            .chain(&parameters.kwonlyargs)
        {
            if let Some(default) = &parameter.default {
                self.visit_expr(default);
            }
        }
    }
}
