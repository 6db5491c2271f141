//! The check's verdicts, one behaviour each: what it refuses (only calls
//! that cannot succeed) and what it lets run.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::tools::tests::Declared;
use crate::tools::{Tool, ToolInfo};

fn registry() -> ToolRegistry {
    let search = ToolInfo::new(
        "search",
        "Searches.",
        json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
            "additionalProperties": false
        }),
    );
    let send = ToolInfo::new(
        "send_email",
        "Sends an email.",
        json!({
            "type": "object",
            "properties": {
                "to": {"type": "string"},
                "body": {"type": "string"},
                "priority": {"type": "string", "enum": ["low", "high"]}
            },
            "required": ["to", "body"]
        }),
    );
    let open = ToolInfo::new(
        "annotate",
        "Takes any extra fields.",
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": true}),
    );
    let tools: Vec<Arc<dyn Tool>> = [search, send, open]
        .into_iter()
        .map(|info| Arc::new(Declared(info)) as Arc<dyn Tool>)
        .collect();
    ToolRegistry::from_local(tools).expect("distinct names")
}

fn verdict(script: &str) -> Verdict {
    Checker::default().check(script, &registry(), TypeCheck::Enforce, false)
}

/// The rules of the refusals of `script`.
fn refused(script: &str) -> Vec<String> {
    verdict(script).refusals.into_iter().map(|d| d.rule).collect()
}

#[test]
fn a_script_whose_tool_calls_fit_passes() {
    let v = verdict("r = await search(query='x', limit=3)\nawait send_email(to='a', body=r['text'])");
    assert!(!v.refused(), "{v:?}");
}

#[test]
fn an_unknown_tool_is_refused_and_the_tools_are_named() {
    let v = verdict("x = 1\nawait fetch(url='x')");
    assert_eq!(v.refusals.len(), 1, "{v:?}");
    let d = &v.refusals[0];
    assert_eq!((d.rule.as_str(), d.line, d.col), ("unknown-tool", 2, 7));
    assert!(
        d.message.contains("`fetch`") && d.message.contains("search, send_email"),
        "{}",
        d.message
    );
}

#[cfg(feature = "type-check")]
#[test]
fn an_unknown_argument_is_refused_with_the_tools_signature() {
    let v = verdict("r = await search(query='x', limt=3)");
    assert_eq!(v.refusals.len(), 1, "{v:?}");
    let d = &v.refusals[0];
    assert_eq!((d.rule.as_str(), d.line), ("unknown-argument", 1));
    assert!(d.message.contains("`limt`"), "{}", d.message);
    assert!(
        d.message.contains("search(query: str, limit: int | None = None)"),
        "{}",
        d.message
    );
}

#[cfg(feature = "type-check")]
#[test]
fn a_missing_argument_is_refused() {
    assert_eq!(refused("await send_email(to='a')"), ["missing-argument"]);
}

#[cfg(feature = "type-check")]
#[test]
fn too_many_positional_arguments_are_refused() {
    assert_eq!(refused("await search('a', 3, 4)"), ["too-many-positional-arguments"]);
}

#[cfg(feature = "type-check")]
#[test]
fn a_value_of_the_wrong_type_is_refused() {
    assert_eq!(refused("await search(query=3)"), ["invalid-argument-type"]);
}

#[cfg(feature = "type-check")]
#[test]
fn an_enum_value_outside_the_schema_is_refused() {
    assert_eq!(
        refused("await send_email(to='a', body='b', priority='urgent')"),
        ["invalid-argument-type"]
    );
}

#[cfg(feature = "type-check")]
/// The checker's typeshed types `asyncio.gather`, `max`, `min`, `sum` and
/// `sorted` loosely (`typeshed.rs`): a chain's usual reading of its
/// results is neither refused nor warned about.
#[cfg(feature = "type-check")]
#[test]
fn gather_and_the_loosened_builtins_read_tool_results_without_a_word() {
    let script = "import asyncio\n\
        rs = await asyncio.gather(*[search(query=q) for q in ['a', 'b']])\n\
        a, b = await asyncio.gather(search(query='a'), search(query='b'), return_exceptions=True)\n\
        best = max(rs, key=lambda r: r['score'])\n\
        worst = min(rs, key=lambda r: r['score'], default=None)\n\
        n = sum(len(r['hits']) for r in rs) + sum([1, 2], 0)\n\
        top = sorted(rs, key=lambda r: r['score'], reverse=True)[:1]\n\
        await send_email(to=best['from'], body=f'{n} {top} {worst} {a} {b}')\n\
        max(1, 2) + min([3, 4])";
    assert_eq!(verdict(script), Verdict::default());
}

#[test]
fn a_bad_call_inside_gather_is_refused() {
    let script = "import asyncio\na, b = await asyncio.gather(search(query='a'), search(query=1))";
    assert_eq!(refused(script), ["invalid-argument-type"]);
}

#[test]
fn a_tool_call_subscripted_before_it_is_awaited_is_refused() {
    assert_eq!(refused("r = search(query='x')['items']"), ["not-awaited"]);
    assert_eq!(refused("r = search(query='x').items"), ["not-awaited"]);
}

#[test]
fn every_refusal_is_listed_in_source_order() {
    let v = verdict("await nope()\nawait search(query='x').y");
    let lines: Vec<u32> = v.refusals.iter().map(|d| d.line).collect();
    assert_eq!(lines, [1, 2], "{v:?}");
}

#[test]
fn unpacked_arguments_run() {
    let v = verdict("kw = {'query': 'a'}\nawait search(**kw)\nargs = ['a']\nawait search(*args)");
    assert!(!v.refused(), "{v:?}");
}

#[test]
fn a_string_that_may_be_an_enum_value_runs() {
    let script = "for p in ['low', 'high']:\n    await send_email(to='a', body='b', priority=p)";
    assert!(!verdict(script).refused());
}

#[test]
fn a_value_that_is_one_of_several_types_runs() {
    let script = "d = {'a': 'x'}\nawait search(query=d.get('a'))";
    assert!(!verdict(script).refused());
}

#[test]
fn values_from_tool_results_run() {
    let script = "r = await search(query='a')\nawait search(query=r['next'], limit=r['n'])";
    assert!(!verdict(script).refused());
}

#[test]
fn a_schema_open_to_more_properties_takes_unknown_arguments() {
    assert!(!verdict("await annotate(id=1, colour='red')").refused());
}

#[test]
fn a_script_that_defines_a_tools_name_calls_its_own_function() {
    let script = "def search(q):\n    return q\nsearch(1, 2)";
    assert!(!verdict(script).refused());
}

#[test]
fn builtins_modules_monty_lacks_and_the_sandboxs_functions_are_not_refused() {
    let script = "import statistics\nx = statistics.mean([1, 2])\nlist(map(str, [1]))\n\
                  getattr(x, 'real')\nload_artifact({'artifact_ref': 'x'})";
    let v = verdict(script);
    assert!(!v.refused(), "{v:?}");
    assert!(v.warnings.is_empty(), "gaps of the checker are not the script's: {v:?}");
}

#[test]
fn a_star_import_may_define_any_name() {
    assert!(!verdict("from math import *\nprint(floor(1.5))\nawait fetch()").refused());
}

#[test]
fn a_later_session_cell_may_call_what_earlier_cells_defined() {
    let checker = Checker::default();
    let v = checker.check("await helper()", &registry(), TypeCheck::Enforce, true);
    assert!(!v.refused(), "{v:?}");
}

#[cfg(feature = "type-check")]
#[test]
fn other_diagnostics_are_warnings_with_their_line() {
    let v = verdict("x = 1\nx.foo");
    assert!(!v.refused());
    assert_eq!(v.warnings.len(), 1, "{v:?}");
    assert_eq!(v.warnings[0].line, Some(2));
    assert!(v.warnings[0].message.contains("unresolved-attribute"), "{v:?}");
}

#[test]
fn warn_turns_refusals_into_warnings() {
    let v = Checker::default().check("await fetch()", &registry(), TypeCheck::Warn, false);
    assert!(!v.refused());
    assert_eq!(v.warnings.len(), 1, "{v:?}");
    assert_eq!(v.warnings[0].line, Some(1));
}

#[test]
fn off_checks_nothing() {
    let v = Checker::default().check("await fetch()", &registry(), TypeCheck::Off, false);
    assert_eq!(v, Verdict::default());
}

#[test]
fn a_script_that_does_not_parse_is_left_to_the_interpreter() {
    assert_eq!(verdict("await fetch(("), Verdict::default());
}

#[test]
fn a_deeply_nested_script_is_checked_by_its_tree_only() {
    let script = format!("await fetch()\nx = {}1{}", "[".repeat(200), "]".repeat(200));
    let v = verdict(&script);
    assert_eq!(refused(&script), ["unknown-tool"]);
    assert!(v.warnings.iter().any(|w| w.message.contains("nests deeper")), "{v:?}");
}

#[test]
fn a_verdict_is_the_same_from_the_cache() {
    let checker = Checker::default();
    let first = checker.check(
        "await search(query=1)\nawait fetch()",
        &registry(),
        TypeCheck::Enforce,
        false,
    );
    let again = checker.check(
        "await search(query=1)\nawait fetch()",
        &registry(),
        TypeCheck::Enforce,
        false,
    );
    assert_eq!(first, again);
    assert!(first.refused());
}

#[test]
fn positions_count_characters_from_one() {
    let lines = Lines::new("a = 'é'\nbb = 1");
    assert_eq!(lines.position(TextSize::new(0)), (1, 1));
    assert_eq!(lines.position(TextSize::new(9)), (2, 1));
    assert_eq!(lines.position(TextSize::new(7)), (1, 7));
}

#[cfg(feature = "type-check")]
#[test]
fn a_bad_call_whose_error_the_script_catches_runs() {
    let script = "try:\n    await search(query=3)\nexcept ValueError as e:\n    print(e)";
    let v = verdict(script);
    assert!(!v.refused(), "{v:?}");
    assert!(!v.warnings.is_empty(), "it is still said: {v:?}");
}

#[test]
fn an_unknown_name_whose_name_error_the_script_catches_runs() {
    assert!(!verdict("try:\n    await nope()\nexcept NameError:\n    pass").refused());
    assert!(!verdict("try:\n    await nope()\nexcept (KeyError, Exception):\n    pass").refused());
}

#[test]
fn a_handler_for_another_error_does_not_excuse_a_bad_call() {
    assert_eq!(
        refused("try:\n    await nope()\nexcept KeyError:\n    pass"),
        ["unknown-tool"]
    );
    assert_eq!(
        refused("try:\n    pass\nexcept Exception:\n    await nope()"),
        ["unknown-tool"],
        "a handler's own body is not guarded"
    );
}

#[test]
fn a_tuple_for_a_list_runs() {
    let registry = {
        let tag = ToolInfo::new(
            "tag",
            "Tags.",
            json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}),
        );
        ToolRegistry::from_local([Arc::new(Declared(tag)) as Arc<dyn Tool>]).expect("registry")
    };
    let v = Checker::default().check("await tag(tags=('a', 'b'))", &registry, TypeCheck::Enforce, false);
    assert!(!v.refused(), "{v:?}");
}
