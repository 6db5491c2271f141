//! What the check reads from a script's syntax tree, without types: its
//! calls to tools (where each is, whether it is awaited, whether its
//! arguments are spelled out), the names the script binds, and how deep it
//! nests. Decisions that need no types are made here: a call to a name
//! that is neither bound, a builtin nor a tool is an unknown tool, and a
//! tool call subscripted or read an attribute of before it is awaited is a
//! coroutine used as its result.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;

use crate::python_choice::{bound_names, is_builtin};

/// Names a chain script may call that are neither builtins nor tools: the
/// guests define them.
pub(super) const GUEST_FUNCTIONS: &[&str] = &["load_artifact"];

/// Attributes a coroutine object has: reading one of an un-awaited tool
/// call is odd but not wrong.
const COROUTINE_ATTRIBUTES: &[&str] = &[
    "send",
    "throw",
    "close",
    "cr_await",
    "cr_code",
    "cr_frame",
    "cr_running",
    "cr_origin",
    "cr_suspended",
    "__await__",
    "__name__",
    "__qualname__",
];

/// One call of a tool by its name (`search(query=...)`).
#[derive(Debug, Clone)]
pub(super) struct ToolCall {
    /// The tool.
    pub name: String,
    /// The whole call expression.
    pub range: TextRange,
    /// Whether an argument is unpacked (`*args`, `**kwargs`): its
    /// arguments are known only at run time.
    pub unpacked: bool,
    /// What the `try` statements around it catch ([`Caught`]).
    pub caught: Caught,
}

/// The exceptions the `try` statements around a call catch, by name (`*`
/// for a bare `except`): a script that catches what a bad call raises
/// expects it to fail, and runs as CPython runs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Caught(Vec<String>);

impl Caught {
    /// Whether one of `raised` (or one of their bases) is caught.
    pub fn any_of(&self, raised: &[&str]) -> bool {
        self.0
            .iter()
            .any(|name| matches!(name.as_str(), "*" | "Exception" | "BaseException") || raised.contains(&name.as_str()))
    }
}

/// A finding that needs no types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Finding {
    /// A call to a name nothing defines.
    UnknownTool {
        /// The name called.
        name: String,
    },
    /// `tool(...)[...]` or `tool(...).attr`: the coroutine used as if it
    /// were the tool's result.
    NotAwaited {
        /// The tool.
        name: String,
        /// `subscripted` or `read .attr of`.
        how: String,
    },
}

/// What [`scan`] learnt of a script.
#[derive(Debug, Default)]
pub(super) struct Scan {
    /// Every call of a tool the script does not rebind, in source order.
    pub calls: Vec<ToolCall>,
    /// Findings, each with the range it is about and what is caught
    /// around it.
    pub findings: Vec<(Finding, TextRange, Caught)>,
    /// The deepest nesting of expressions and statements.
    pub depth: usize,
}

/// Reads `module`. `is_tool` says which names are tools; with
/// `names_from_before` (a session's later cell, whose earlier cells bound
/// names this one cannot see) no call is an unknown tool.
pub(super) fn scan(module: &ast::ModModule, is_tool: &dyn Fn(&str) -> bool, names_from_before: bool) -> Scan {
    let bound = bound_names(module);
    // A star import, `globals()` or `exec` may bind any name: no call is
    // then known to be of an unknown tool.
    let dynamic = bound.contains("*");
    let mut walk = Walk {
        bound: &bound,
        is_tool,
        unknown_names: !names_from_before && !dynamic,
        scan: Scan::default(),
        depth: 0,
        dynamic_calls: false,
        caught: Vec::new(),
    };
    walk.visit_body(&module.body);
    let mut scan = walk.scan;
    if walk.dynamic_calls {
        scan.findings
            .retain(|(finding, ..)| !matches!(finding, Finding::UnknownTool { .. }));
    }
    scan
}

struct Walk<'a, 'b> {
    bound: &'b FxHashSet<&'a str>,
    is_tool: &'b dyn Fn(&str) -> bool,
    unknown_names: bool,
    scan: Scan,
    depth: usize,
    /// The script calls `globals`, `locals`, `vars`, `exec` or `eval`.
    dynamic_calls: bool,
    /// What the `try` bodies the walk is in catch, innermost last.
    caught: Vec<String>,
}

impl Walk<'_, '_> {
    /// The tool `expr` calls directly, if it is a tool call.
    fn tool_called<'e>(&self, expr: &'e Expr) -> Option<&'e str> {
        let Expr::Call(call) = expr else { return None };
        let Expr::Name(name) = &*call.func else { return None };
        let name = name.id.as_str();
        ((self.is_tool)(name) && !self.bound.contains(name)).then_some(name)
    }

    fn find(&mut self, finding: Finding, range: TextRange) {
        let caught = Caught(self.caught.clone());
        self.scan.findings.push((finding, range, caught));
    }

    fn enter(&mut self) {
        self.depth += 1;
        self.scan.depth = self.scan.depth.max(self.depth);
    }
}

impl<'a> Visitor<'a> for Walk<'a, '_> {
    fn visit_stmt(&mut self, stmt: &'a ast::Stmt) {
        self.enter();
        match stmt {
            ast::Stmt::Try(statement) => {
                // Only the body is guarded by the handlers.
                let before = self.caught.len();
                for handler in &statement.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    match handler.type_.as_deref() {
                        None => self.caught.push("*".to_owned()),
                        Some(Expr::Tuple(types)) => self.caught.extend(types.iter().filter_map(exception_name)),
                        Some(other) => self.caught.extend(exception_name(other)),
                    }
                }
                self.visit_body(&statement.body);
                self.caught.truncate(before);
                for handler in &statement.handlers {
                    self.visit_except_handler(handler);
                }
                self.visit_body(&statement.orelse);
                self.visit_body(&statement.finalbody);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
        self.depth -= 1;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.enter();
        match expr {
            Expr::Call(call) => {
                if let Expr::Name(func) = &*call.func {
                    let name = func.id.as_str();
                    if matches!(name, "globals" | "locals" | "vars" | "exec" | "eval") {
                        self.dynamic_calls = true;
                    }
                    if self.bound.contains(name) {
                        // The script's own function (or a tool it rebound).
                    } else if (self.is_tool)(name) {
                        let unpacked = call.arguments.args.iter().any(Expr::is_starred_expr)
                            || call.arguments.keywords.iter().any(|k| k.arg.is_none());
                        self.scan.calls.push(ToolCall {
                            name: name.to_owned(),
                            range: call.range(),
                            unpacked,
                            caught: Caught(self.caught.clone()),
                        });
                    } else if self.unknown_names && !is_builtin(name) && !GUEST_FUNCTIONS.contains(&name) {
                        self.find(Finding::UnknownTool { name: name.to_owned() }, func.range());
                    }
                }
            }
            Expr::Subscript(subscript) => {
                if let Some(name) = self.tool_called(&subscript.value) {
                    let finding = Finding::NotAwaited {
                        name: name.to_owned(),
                        how: "subscripted".to_owned(),
                    };
                    self.find(finding, subscript.range());
                }
            }
            Expr::Attribute(attribute) => {
                if let Some(name) = self.tool_called(&attribute.value)
                    && !COROUTINE_ATTRIBUTES.contains(&attribute.attr.as_str())
                {
                    let finding = Finding::NotAwaited {
                        name: name.to_owned(),
                        how: format!("read `.{}` of", attribute.attr.as_str()),
                    };
                    self.find(finding, attribute.range());
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

/// The name an `except` clause catches (`ValueError`, `errors.ValueError`).
fn exception_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => Some(attribute.attr.to_string()),
        _ => None,
    }
}
