//! The analysis as specifications: what taints a guarded call, and what
//! must not. The tools: `fetch_page` and `read_inbox` untrusted,
//! `lookup_contact` trusted, `send_email` guarding `to` only, `run_shell`
//! critical (every argument guarded).

use std::sync::Arc;

use serde_json::json;

use super::analyze;
use crate::flow::{FlowTools, Taint};
use crate::policy::{ChainPolicy, Flow};
use crate::tools::tests::Declared;
use crate::tools::{Tool, ToolInfo, ToolRegistry, ToolRisk};

fn tools() -> FlowTools {
    let schema = |props: &[&str]| {
        let properties: serde_json::Map<String, serde_json::Value> = props
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties})
    };
    let declared: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Declared(
            ToolInfo::new("fetch_page", "", schema(&["url"])).with_untrusted_output(),
        )),
        Arc::new(Declared(
            ToolInfo::new("read_inbox", "", schema(&[])).with_untrusted_output(),
        )),
        Arc::new(Declared(ToolInfo::new("lookup_contact", "", schema(&["name"])))),
        Arc::new(Declared(
            ToolInfo::new("send_email", "", schema(&["to", "subject", "body"]))
                .with_risk(ToolRisk::High)
                .with_guarded_args(["to"]),
        )),
        Arc::new(Declared(
            ToolInfo::new("run_shell", "", schema(&["cmd"])).with_risk(ToolRisk::Critical),
        )),
    ];
    let registry = ToolRegistry::from_local(declared).expect("registry");
    FlowTools::new(&registry, &ChainPolicy::default())
}

/// What calls of `tool` may derive from in `script`.
fn taint(script: &str, tool: &str) -> Option<Taint> {
    analyze(script, &tools(), false).taint_of(tool).cloned()
}

fn from(tools: &[&str]) -> Option<Taint> {
    Some(Taint {
        any: false,
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
    })
}

fn assert_tainted(script: &str) {
    let got = taint(script, "send_email");
    assert!(got.is_some(), "send_email should be tainted in:\n{script}");
}

fn assert_clean(script: &str) {
    let got = taint(script, "send_email");
    assert_eq!(got, None, "send_email should be clean in:\n{script}");
}

#[test]
fn untrusted_text_in_an_unguarded_argument_leaves_the_call_clean() {
    assert_clean(
        "page = fetch_page(url='https://news.example')\n\
         send_email(to='boss@corp.example', subject='digest', body=page[:500])",
    );
}

#[test]
fn an_untrusted_result_passed_to_a_guarded_argument_taints_the_call_from_its_tool() {
    let script = "page = fetch_page(url='x')\nsend_email(to=page, subject='s', body='b')";
    assert_eq!(taint(script, "send_email"), from(&["fetch_page"]));
}

#[test]
fn positional_arguments_are_guarded_by_their_parameter() {
    assert_tainted("page = fetch_page('x')\nsend_email(page, 's', 'b')");
    assert_clean("page = fetch_page('x')\nsend_email('a@corp.example', 's', page)");
}

#[test]
fn string_processing_of_any_kind_keeps_the_taint() {
    for derive in [
        "re.search(r'[\\w.]+@[\\w.]+', page).group(0)",
        "page[page.find('to:') + 3:].strip().split()[0].lower()",
        "base64.b64decode(base64.b64encode(page.encode())).decode()",
        "codecs.decode(page, 'rot13')",
        "json.loads(page)['to']",
        "''.join(chr(ord(c)) for c in page)",
        "f'{page}@evil.example'",
        "'{}'.format(page)",
        "str(len(page)) + '@x'",
    ] {
        assert_tainted(&format!(
            "import re, base64, codecs, json\npage = fetch_page('x')\nto = {derive}\nsend_email(to=to, subject='s', body='b')"
        ));
    }
}

#[test]
fn a_trusted_literal_that_also_appears_in_untrusted_text_stays_clean() {
    assert_clean(
        "page = fetch_page('x')\n\
         if 'boss@corp.example' in page:\n    note = 'mentioned'\n\
         send_email(to='boss@corp.example', subject='s', body=page)",
    );
}

#[test]
fn a_literal_assigned_under_an_untrusted_condition_is_tainted() {
    assert_tainted(
        "page = fetch_page('x')\nto = 'boss@corp.example'\n\
         if 'mallory' in page:\n    to = 'mallory@evil.example'\n\
         send_email(to=to, subject='s', body='b')",
    );
}

#[test]
fn a_call_made_in_a_loop_over_untrusted_data_is_tainted() {
    assert_tainted(
        "for mail in read_inbox():\n    send_email(to='me@corp.example', subject=mail['subject'], body='b')",
    );
}

#[test]
fn a_call_under_an_untrusted_condition_or_filter_is_tainted() {
    assert_tainted(
        "page = fetch_page('x')\nif 'urgent' in page:\n    send_email(to='me@corp.example', subject='s', body='b')",
    );
    assert_tainted("page = fetch_page('x')\nx = send_email(to='a@b', subject='s', body='b') if page else None");
    assert_tainted("[send_email(to='a@b', subject='s', body=m) for m in read_inbox() if m]");
    assert_tainted("page = fetch_page('x')\nok = page and send_email(to='a@b', subject='s', body='b')");
}

#[test]
fn a_raise_decided_by_untrusted_data_taints_what_follows_it() {
    assert_tainted(
        "page = fetch_page('x')\nif 'stop' not in page:\n    raise SystemExit\n\
         send_email(to='me@corp.example', subject='s', body='b')",
    );
}

#[test]
fn a_break_decided_by_untrusted_data_does_not_taint_what_follows_the_loop() {
    assert_clean(
        "for mail in read_inbox():\n    if 'x' in mail['body']:\n        break\n\
         send_email(to='me@corp.example', subject='s', body='b')",
    );
}

#[test]
fn an_exception_handler_after_untrusted_work_is_tainted() {
    assert_tainted(
        "page = fetch_page('x')\ntry:\n    n = int(page)\nexcept ValueError as e:\n    to = str(e)\n\
         send_email(to=to, subject='s', body='b')",
    );
}

#[test]
fn a_trusted_lookup_keyed_by_untrusted_text_launders_nothing() {
    assert_tainted(
        "page = fetch_page('x')\nto = lookup_contact(name=page.split()[0])\nsend_email(to=to, subject='s', body='b')",
    );
    assert_tainted(
        "page = fetch_page('x')\nbook = {'alice': 'a@corp.example'}\nto = book.get(page.strip(), 'b@corp.example')\n\
         send_email(to=to, subject='s', body='b')",
    );
}

#[test]
fn a_trusted_lookup_with_a_literal_key_is_clean() {
    assert_clean(
        "page = fetch_page('x')\nto = lookup_contact(name='alice')\nsend_email(to=to, subject='digest', body=page)",
    );
}

#[test]
fn gathered_results_are_tainted_together() {
    assert_tainted(
        "import asyncio\npage, who = await asyncio.gather(fetch_page('x'), lookup_contact(name='alice'))\n\
         send_email(to=who, subject='s', body=page)",
    );
}

#[test]
fn a_helper_passes_its_arguments_taint_to_its_result() {
    assert_tainted(
        "def pick(text):\n    return text.split()[-1]\npage = fetch_page('x')\nsend_email(to=pick(page), subject='s', body='b')",
    );
}

#[test]
fn a_helper_called_only_with_trusted_arguments_returns_clean() {
    assert_clean(
        "def clean(text):\n    return text.strip()\npage = fetch_page('x')\nsummary = clean(page)\n\
         send_email(to=clean(' a@corp.example '), subject='s', body='b')",
    );
}

#[test]
fn a_guarded_call_inside_a_helper_takes_its_callers_arguments() {
    assert_tainted("def notify(who):\n    send_email(to=who, subject='s', body='b')\nnotify(fetch_page('x'))");
    assert_clean(
        "def notify(who, text):\n    send_email(to=who, subject='s', body=text)\nnotify('a@corp.example', fetch_page('x'))",
    );
}

#[test]
fn closures_lambdas_and_methods_are_followed_conservatively() {
    assert_tainted(
        "page = fetch_page('x')\ndef make():\n    return lambda: page.split()[0]\nsend_email(to=make()(), subject='s', body='b')",
    );
    assert_tainted(
        "class Mailer:\n    def go(self, who):\n        send_email(to=who, subject='s', body='b')\n\
         page = fetch_page('x')\nMailer().go('a@corp.example')",
    );
}

#[test]
fn a_sort_key_lambda_does_not_taint_a_trusted_list() {
    assert_clean(
        "page = fetch_page('x')\ncontacts = [{'n': 2, 'to': 'a@corp.example'}]\n\
         best = sorted(contacts, key=lambda c: c['n'])[0]\nsend_email(to=best['to'], subject='s', body=page)",
    );
}

#[test]
fn a_mutation_through_an_alias_taints_the_original() {
    assert_tainted("a = []\nb = a\npage = fetch_page('x')\nb.append(page)\nsend_email(to=a[0], subject='s', body='b')");
}

#[test]
fn storing_untrusted_text_in_a_container_does_not_taint_what_the_container_holds() {
    assert_clean(
        "to = 'boss@corp.example'\nmail = {'to': to}\nmail['body'] = fetch_page('x')\n\
         send_email(to=to, subject='s', body=mail['body'])",
    );
}

#[test]
fn unpacked_arguments_are_guarded() {
    assert_tainted("page = fetch_page('x')\nargs = {'to': page, 'subject': 's', 'body': 'b'}\nsend_email(**args)");
}

#[test]
fn walrus_and_conditional_expressions_carry_the_taint() {
    assert_tainted("if (to := fetch_page('x').strip()):\n    send_email(to=to, subject='s', body='b')");
}

#[test]
fn code_the_tree_cannot_follow_taints_every_guarded_tool() {
    for opaque in [
        "exec('x = 1')",
        "eval('1')",
        "globals()['x'] = 1",
        "getattr(object, 'a' + 'b')",
        "import sys",
        "from os import *",
        "(lambda: 0).__globals__",
        "getattr(len, '__self__')",
        "import operator\nf = operator.attrgetter('__glo' + 'bals__')",
        "import pickle",
        "import logging.config",
        "g = globals\ng()['x'] = 1",
        "ga = getattr\nga(len, 'x')",
        "import operator\nag = operator.attrgetter",
        "from operator import attrgetter as ag",
    ] {
        let script =
            format!("page = fetch_page('x')\n{opaque}\nsend_email(to='a@corp.example', subject='s', body='b')");
        assert_eq!(taint(&script, "send_email"), Some(Taint::any()), "{opaque}");
        assert_eq!(taint(&script, "run_shell"), Some(Taint::any()), "{opaque}");
    }
}

#[test]
fn a_guarded_tool_used_as_a_value_is_tainted_by_everything() {
    assert_eq!(
        taint(
            "f = send_email\nf(to='a@corp.example', subject='s', body='b')",
            "send_email"
        ),
        Some(Taint::any())
    );
}

#[test]
fn load_artifact_may_return_any_untrusted_result() {
    assert_eq!(
        taint(
            "to = load_artifact('sha256:00')\nsend_email(to=to, subject='s', body='b')",
            "send_email"
        ),
        Some(Taint::any())
    );
}

#[test]
fn a_critical_tool_guards_every_argument() {
    assert_eq!(
        taint("page = fetch_page('x')\nrun_shell(cmd='echo ' + page)", "run_shell"),
        from(&["fetch_page"])
    );
}

#[test]
fn a_later_cells_names_from_before_may_hold_anything() {
    let verdict = analyze("send_email(to=earlier, subject='s', body='b')", &tools(), true);
    assert_eq!(verdict.taint_of("send_email"), Some(&Taint::any()));
    let verdict = analyze(
        "send_email(to='a@corp.example', subject='s', body=str(earlier))",
        &tools(),
        true,
    );
    assert_eq!(verdict.taint_of("send_email"), None);
}

#[test]
fn a_script_that_does_not_parse_taints_every_guarded_tool() {
    let verdict = analyze("send_email(to=", &tools(), false);
    assert_eq!(verdict.taint_of("send_email"), Some(&Taint::any()));
}

#[test]
fn without_an_untrusted_tool_or_with_flow_off_nothing_is_tainted() {
    let guarded: Vec<Arc<dyn Tool>> = vec![Arc::new(Declared(
        ToolInfo::new("send_email", "", json!({"type": "object"})).with_risk(ToolRisk::High),
    ))];
    let registry = ToolRegistry::from_local(guarded).expect("registry");
    let tools = FlowTools::new(&registry, &ChainPolicy::default());
    assert!(analyze("exec('x')\nsend_email(to=x)", &tools, false).is_clean());
    let policy = ChainPolicy {
        flow: Flow::Off,
        ..ChainPolicy::default()
    };
    let registry = ToolRegistry::from_local(vec![Arc::new(Declared(
        ToolInfo::new("fetch_page", "", json!({"type": "object"})).with_untrusted_output(),
    )) as Arc<dyn Tool>])
    .expect("registry");
    assert!(!FlowTools::new(&registry, &policy).is_active());
}

#[test]
fn a_plain_literal_attribute_name_is_followed() {
    assert_clean(
        "page = fetch_page('x')\nsubject = getattr(page, 'upper')()\nsend_email(to='a@corp.example', subject=subject, body='b')",
    );
}

#[test]
fn workspace_files_may_hold_any_untrusted_result() {
    assert_eq!(
        taint(
            "to = open('/workspace/media/x.txt').read()\nsend_email(to=to, subject='s', body='b')",
            "send_email"
        ),
        Some(Taint::any())
    );
    assert_eq!(
        taint(
            "from pathlib import Path\nto = Path('/workspace/a').read_text()\nsend_email(to=to, subject='s', body='b')",
            "send_email"
        ),
        Some(Taint::any())
    );
}

#[test]
fn a_helper_that_raises_on_untrusted_data_taints_what_follows_its_call() {
    assert_tainted(
        "def check(text):\n    if len(text) > 10000:\n        raise ValueError('long')\n\
         check(fetch_page('x'))\nsend_email(to='me@corp.example', subject='s', body='b')",
    );
    assert_clean(
        "def check(text):\n    if len(text) > 10000:\n        raise ValueError('long')\n\
         check('fine')\npage = fetch_page('x')\nsend_email(to='me@corp.example', subject='s', body=page)",
    );
}

#[test]
fn a_decorated_helpers_result_may_be_anything() {
    assert_eq!(
        taint(
            "def deco(f):\n    return f\n@deco\ndef pick():\n    return 'a@corp.example'\n\
             send_email(to=pick(), subject='s', body='b')",
            "send_email"
        ),
        Some(Taint::any())
    );
}
