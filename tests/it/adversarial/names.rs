//! Name attacks: tools that do not exist, case and whitespace variants of
//! real names, Unicode look-alikes, and names of tools a chain must never
//! reach (`run_chain`, provider-hosted tools). Lookup is exact, and a name
//! that is not a registered tool never reaches a tool.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chainbox::tools::HostedTool;
use chainbox::{AnyTool, Approval, CallStatus, ChainPolicy, ChainStatus, ErrorKind, Tool, ToolRegistry, ToolRisk};
use serde_json::json;

use crate::fixtures::{
    adversarial_registry, assert_ended, assert_next_chain_ok, assert_ok, assert_trace, fn_tool, run_full, run_tight,
    tight,
};

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tool_is_a_name_error_after_the_calls_before_it() {
    let r = run_tight("await noop()\nawait delete_everything(confirm=True)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("NameError"));
    assert_eq!(
        r.error.as_ref().map(|e| e.message.as_str()),
        Some("name 'delete_everything' is not defined")
    );
    // As in Python, the name is undefined: it never becomes a call, so it
    // has no record and spends no budget.
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_undefined_name_spends_no_call_budget() {
    let policy = ChainPolicy {
        max_tool_calls: 1,
        ..crate::fixtures::unchecked()
    };
    let script = "await noop()\ntry:\n    await nope()\nexcept NameError:\n    pass\n'still within budget'";
    let r = run_full(
        script,
        &adversarial_registry(),
        &policy,
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!("still within budget"), "{r:#?}");
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn case_variants_of_a_tool_name_do_not_resolve() {
    let names = ["ECHO", "Echo", "eCHO", "ecHo", "_echo", "echo_"];
    let mut script = String::from("out = []\n");
    for name in names {
        script.push_str(&format!(
            "try:\n    await {name}(text='x')\n    out.append('called')\nexcept NameError:\n    out.append('NameError')\n"
        ));
    }
    script.push_str("out");
    let r = run_tight(&script).await;
    assert_ok(&r);
    assert_eq!(r.output, json!(vec!["NameError"; 6]), "{r:#?}");
    // Looked up exactly, found nothing: no call was made.
    assert_trace(&r, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn unicode_look_alikes_of_a_tool_name_do_not_resolve() {
    // Cyrillic е (U+0435), Greek ο (U+03BF), dotless ı (U+0131).
    for name in ["\u{435}cho", "ech\u{3bf}", "no\u{3bf}p", "\u{131}cho"] {
        let r = run_tight(&format!("await {name}(text='x')")).await;
        assert_eq!(r.status, ChainStatus::Error, "{name}: {r:#?}");
        assert_eq!(r.error_kind(), Some(ErrorKind::Script), "{name}: {r:#?}");
        assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("NameError"));
        // Looked up exactly, found nothing: no call was made.
        assert_trace(&r, &[]);
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_close_to_a_tool_gets_pythons_hint() {
    for script in [
        "await ech(text='x')",
        "f = ech",
        "def g():\n    return ech(text='x')\nawait g()",
    ] {
        let r = run_tight(script).await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
        assert_eq!(
            r.error.as_ref().map(|e| e.message.as_str()),
            Some("name 'ech' is not defined. Did you mean: 'echo'?"),
            "{script}: {r:#?}"
        );
        assert_trace(&r, &[]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn compatibility_forms_of_a_name_fold_to_the_exact_tool_as_in_python() {
    // Python folds identifiers to NFKC (fullwidth ｅ is e), and so does the
    // interpreter: the call is to `echo` itself, recorded under its real name.
    let r = run_tight("await \u{ff45}cho(text='x')").await;
    assert_ok(&r);
    assert_eq!(r.output, json!("x"), "{r:#?}");
    assert_trace(&r, &[("echo", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn registry_refuses_names_with_whitespace_look_alikes_or_control_characters() {
    for name in [
        "echo ",
        " echo",
        "ec ho",
        "echo\t",
        "echo\n",
        "echo\0",
        "\u{435}cho",
        "\u{ff45}cho",
        "echo\u{200b}",
        "",
        "1echo",
        "echo-tool",
    ] {
        let tool = fn_tool(Box::leak(name.to_owned().into_boxed_str()), &[], |_| Ok(json!(null)));
        assert!(ToolRegistry::from_local([tool]).is_err(), "{name:?} was accepted");
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn run_chain_registered_as_a_tool_is_refused_inside_a_chain() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let run_chain = fn_tool("run_chain", &["script"], move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!("nested chain ran"))
    });
    let tools: Vec<Arc<dyn Tool>> = vec![run_chain];
    let registry = ToolRegistry::from_local(tools).expect("registry");
    let r = run_full(
        "try:\n    r = await run_chain(script='while True: pass')\nexcept PermissionError:\n    r = 'refused'\nr",
        &registry,
        &tight(),
        &Approval::auto(ToolRisk::Critical),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!("refused"), "{r:#?}");
    assert_trace(&r, &[("run_chain", CallStatus::Denied)]);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_hosted_tool_is_refused_inside_a_chain() {
    let hosted = AnyTool::Hosted(HostedTool {
        name: "web_search".into(),
        description: "hosted by the provider".into(),
        provider_specs: HashMap::new(),
    });
    let tools = adversarial_registry()
        .iter()
        .cloned()
        .chain(std::iter::once(hosted))
        .collect::<Vec<_>>();
    let registry = ToolRegistry::from_tools(tools).expect("registry");
    let r = run_full(
        "try:\n    r = await web_search(query='x')\nexcept PermissionError:\n    r = 'refused'\nr",
        &registry,
        &tight(),
        &Approval::auto(ToolRisk::Critical),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!("refused"), "{r:#?}");
    assert_trace(&r, &[("web_search", CallStatus::Denied)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn builtins_and_dunder_names_are_not_routes_to_tools() {
    let r = run_tight("out = []\nfor expr in ['globals()', '__builtins__', '__import__(\"chainbox\")', 'getattr(echo, \"__call__\")']:\n    try:\n        eval(expr)\n        out.append('ok')\n    except Exception as e:\n        out.append(type(e).__name__)\n[out, await noop()]").await;
    assert_ok(&r);
    // Whatever these do, no tool ran: a name the interpreter lacks reaches
    // the invoker as an unknown tool and is refused there.
    assert_eq!(
        r.call_trace.last().map(|c| (c.tool.as_str(), c.status)),
        Some(("noop", CallStatus::Ok))
    );
    for c in &r.call_trace[..r.call_trace.len() - 1] {
        assert_eq!(c.status, CallStatus::Error, "{r:#?}");
        assert!(
            c.error.as_deref().is_some_and(|e| e.contains("no tool named")),
            "{r:#?}"
        );
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn look_alike_argument_names_do_not_bind_to_the_real_parameter() {
    // Cyrillic е in `tеxt`: a different key. The open-schema `echo` gets no
    // `text`; a strict schema refuses the call before the tool runs.
    let strict = Arc::new(StrictEcho) as Arc<dyn Tool>;
    let r = run_full(
        "out = [await echo(t\u{435}xt='x')]\ntry:\n    await strict_echo(t\u{435}xt='x')\nexcept ValueError:\n    out.append('refused')\nout",
        &crate::fixtures::adversarial_registry_with([strict]),
        &tight(),
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!([null, "refused"]), "{r:#?}");
    assert_trace(&r, &[("echo", CallStatus::Ok), ("strict_echo", CallStatus::Error)]);
    assert_next_chain_ok().await;
}

/// `strict_echo(text)`: no other argument allowed.
struct StrictEcho;

#[async_trait::async_trait]
impl Tool for StrictEcho {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| chainbox::ToolInfo::new("strict_echo", "echoes text", {
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false})
        }))
    }
    async fn execute(
        &self,
        _: chainbox::ToolContext,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<chainbox::ToolOutput, chainbox::ToolError> {
        Ok(chainbox::ToolOutput::Value(args["text"].clone()))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn odd_bytes_in_the_source_are_compile_errors_or_harmless() {
    for script in [
        "x = 1\0\nx",
        "\u{feff}x = 1\nx",
        "x = 1\r\ny = 2\rx + y",
        "x = 1\x0c\nx",
        "if True:\n\tx = 1\n        y = 2\nx",
        "x = '\u{202e}evil\u{202c}'\nx",
        "\u{0}",
    ] {
        let r = run_tight(script).await;
        assert!(
            matches!(r.status, ChainStatus::Ok | ChainStatus::Error),
            "{script:?}: {r:#?}"
        );
        assert!(
            matches!(r.error_kind(), None | Some(ErrorKind::Compile | ErrorKind::Script)),
            "{script:?}: {r:#?}"
        );
        assert_trace(&r, &[]);
    }
    assert_next_chain_ok().await;
}
