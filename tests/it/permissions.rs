//! Permissions (the second seed): tools declare what they touch, the policy
//! grants it or the invoker denies the call naming what is missing; a
//! tool's `required_scopes`, held by the chain's principal or denied before
//! any approval is asked; and the
//! seed's sandboxed `read_file`, through real chains, with every way out of
//! its root refused.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chainbox::manifest::Manifest;
use chainbox::result::PolicyDecision;
use chainbox::tools::Permission;
use chainbox::tools::command::CommandTool;
use chainbox::tools::read_file::ReadFileTool;
use chainbox::{
    Approval, CallStatus, ChainPolicy, ChainRunResult, Principal, RunOptions, Tool, ToolRegistry, ToolRisk,
};
use serde_json::json;

use crate::fixtures::{Silent, engine};

fn granting(permissions: &[Permission]) -> ChainPolicy {
    ChainPolicy {
        granted_permissions: permissions.iter().copied().collect(),
        ..ChainPolicy::default()
    }
}

async fn run(script: &str, tools: Vec<Arc<dyn Tool>>, policy: &ChainPolicy) -> ChainRunResult {
    let registry = ToolRegistry::from_local(tools).expect("registry");
    engine()
        .run(script, &registry, policy, &Approval::auto(ToolRisk::Critical))
        .await
}

/// A command tool that leaves `ran` in `dir` when it runs.
fn marking_tool(dir: &Path, permissions: &[Permission]) -> Arc<dyn Tool> {
    Arc::new(
        CommandTool::new(
            "mark",
            "touches a file",
            json!({"type": "object"}),
            vec!["sh".into(), "-c".into(), "touch ran && echo '\"marked\"'".into()],
        )
        .with_working_dir(dir)
        .with_permissions(permissions.iter().copied()),
    )
}

const CATCH: &str = "try:\n    r = await mark()\nexcept PermissionError as e:\n    r = 'denied: ' + str(e)\nr";

#[tokio::test(flavor = "multi_thread")]
async fn call_needing_an_ungranted_permission_is_denied_naming_it_and_never_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run(
        CATCH,
        vec![marking_tool(dir.path(), &[Permission::Net])],
        &ChainPolicy::default(),
    )
    .await;
    let message = r.output.as_str().unwrap_or_default();
    assert!(
        message.starts_with("denied: ") && message.contains("needs permission net"),
        "{r:#?}"
    );
    let record = &r.call_trace[0];
    assert_eq!(record.status, CallStatus::Denied);
    assert_eq!(record.policy, Some(PolicyDecision::DeniedPermission));
    assert_eq!(record.error.as_deref(), message.strip_prefix("denied: "));
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn call_with_every_permission_granted_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let needs = [Permission::Shell, Permission::FsWrite];
    let r = run(CATCH, vec![marking_tool(dir.path(), &needs)], &granting(&needs)).await;
    assert_eq!(r.output, json!("marked"), "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::WithinRisk));
    assert!(dir.path().join("ran").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn denial_names_only_the_missing_permissions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let needs = [Permission::FsRead, Permission::FsWrite, Permission::DbWrite];
    let r = run(
        CATCH,
        vec![marking_tool(dir.path(), &needs)],
        &granting(&[Permission::FsRead]),
    )
    .await;
    let message = r.output.as_str().unwrap_or_default();
    assert!(message.contains("needs permission fs.write, db.write,"), "{r:#?}");
    assert!(!message.contains("fs.read"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_declaring_no_permission_runs_under_a_policy_granting_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run(CATCH, vec![marking_tool(dir.path(), &[])], &ChainPolicy::default()).await;
    assert_eq!(r.output, json!("marked"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn manifest_permissions_are_enforced_in_a_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "[[tool]]\nname = \"mark\"\ndescription = \"\"\npermissions = [\"fs.write\"]\n\
                command = [\"sh\", \"-c\", \"touch ran && echo 1\"]";
    let manifest = Manifest::from_str(text, dir.path()).expect("manifest");
    let registry = manifest.registry().await.expect("registry");
    let approval = Approval::auto(ToolRisk::Critical);
    let denied = engine().run(CATCH, &registry, &ChainPolicy::default(), &approval).await;
    assert_eq!(
        denied.call_trace[0].policy,
        Some(PolicyDecision::DeniedPermission),
        "{denied:#?}"
    );
    assert!(!dir.path().join("ran").exists());
    let granted = engine()
        .run(CATCH, &registry, &granting(&[Permission::FsWrite]), &approval)
        .await;
    assert_eq!(granted.output, json!(1), "{granted:#?}");
}

// ---------------------------------------------------------------- scopes

/// `pay(amount)`, rated critical (every call is asked of the approval
/// handler), requiring `payments:write` by policy; counting its runs.
fn pay_tool(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    Arc::new(
        crate::fixtures::tool("pay", &["amount"], move |_| {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(json!("paid"))
        })
        .with_risk(ToolRisk::Critical),
    )
}

fn requiring_payments_write() -> ChainPolicy {
    ChainPolicy::from_toml_str("approval_timeout_s = 0.2\n[tools.pay]\nrequired_scopes = [\"payments:write\"]")
        .expect("policy")
}

fn principal(scopes: &[&str]) -> Principal {
    Principal::new("https://id.example", "alice", scopes.iter().map(|s| (*s).to_owned()))
}

const PAY: &str = "try:\n    r = await pay(amount=5)\nexcept PermissionError as e:\n    r = 'denied: ' + str(e)\nr";

/// `PAY` for `principal` under [`requiring_payments_write`], the approval
/// handler one that never answers and counts its requests.
async fn pay_for(principal: Option<Principal>, runs: &Arc<AtomicUsize>, approval: &Silent) -> ChainRunResult {
    let registry = ToolRegistry::from_local([pay_tool(runs)]).expect("registry");
    let options = RunOptions {
        principal,
        ..RunOptions::default()
    };
    engine()
        .run_with(
            PAY,
            &registry,
            &requiring_payments_write(),
            &Approval::new(approval.clone()),
            options,
        )
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_lacking_a_required_scope_is_denied_and_no_approval_is_asked() {
    let (runs, approval) = (Arc::new(AtomicUsize::new(0)), Silent::default());
    let r = pay_for(Some(principal(&["payments:read"])), &runs, &approval).await;
    let message = r.output.as_str().unwrap_or_default();
    assert!(
        message.starts_with("denied: ") && message.contains("\"pay\"") && message.contains("\"payments:write\""),
        "{r:#?}"
    );
    let record = &r.call_trace[0];
    assert_eq!(record.status, CallStatus::Denied);
    assert_eq!(record.policy, Some(PolicyDecision::DeniedScope));
    assert_eq!(record.error.as_deref(), message.strip_prefix("denied: "));
    assert_eq!(approval.asked(), 0, "the approval handler was never asked");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_principal_holding_the_required_scopes_goes_on_to_the_approval_gate() {
    let (runs, approval) = (Arc::new(AtomicUsize::new(0)), Silent::default());
    let r = pay_for(Some(principal(&["payments:read", "payments:write"])), &runs, &approval).await;
    assert_eq!(approval.asked(), 1, "{r:#?}");
    // The handler never answers: denied at the approval gate, as before.
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::DeniedApproval), "{r:#?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_without_a_principal_is_not_restricted_by_required_scopes() {
    let runs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::from_local([pay_tool(&runs)]).expect("registry");
    let r = engine()
        .run(
            PAY,
            &registry,
            &requiring_payments_write(),
            &Approval::auto(ToolRisk::Critical),
        )
        .await;
    assert_eq!(r.output, json!("paid"), "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::Approved));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn a_required_scope_with_a_space_is_a_policy_error_naming_the_field() {
    let refused = ChainPolicy::from_toml_str("[tools.pay]\nrequired_scopes = [\"payments write\"]");
    let Err(e) = refused else { panic!("accepted") };
    assert!(e.to_string().contains("`tools.pay.required_scopes`"), "{e}");
}

// ---------------------------------------------------------------- read_file

/// `tmp/secret.txt` outside the root; `tmp/root/notes/todo.txt` inside, with
/// symlinks `root/up` → `../secret.txt`, `root/parent` → `tmp` (a folder),
/// `root/abs` → the secret's absolute path and `root/alias` → `notes/todo.txt`.
struct Tree {
    tmp: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("root");
        std::fs::create_dir_all(root.join("notes")).expect("mkdir");
        std::fs::write(tmp.path().join("secret.txt"), "top secret").expect("write");
        std::fs::write(root.join("notes/todo.txt"), "buy milk").expect("write");
        std::os::unix::fs::symlink("../secret.txt", root.join("up")).expect("symlink");
        std::os::unix::fs::symlink(tmp.path(), root.join("parent")).expect("symlink");
        std::os::unix::fs::symlink(tmp.path().join("secret.txt"), root.join("abs")).expect("symlink");
        std::os::unix::fs::symlink("notes/todo.txt", root.join("alias")).expect("symlink");
        Tree { tmp }
    }

    fn root(&self) -> std::path::PathBuf {
        self.tmp.path().join("root")
    }

    async fn read(&self, path: &str) -> ChainRunResult {
        let tool = ReadFileTool::new(self.root()).expect("root");
        let script = format!(
            "try:\n    r = await read_file(path={})\n    r = r['text']\nexcept RuntimeError as e:\n    r = 'refused: ' + str(e)\nr",
            serde_json::to_string(path).expect("json")
        );
        run(&script, vec![Arc::new(tool)], &granting(&[Permission::FsRead])).await
    }
}

fn assert_refused(r: &ChainRunResult) {
    let message = r.output.as_str().unwrap_or_default();
    assert!(
        message.starts_with("refused: ") && message.contains("outside the sandbox root"),
        "{r:#?}"
    );
    assert!(!message.contains("top secret"), "{message}");
    assert_eq!(r.call_trace[0].status, CallStatus::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_reads_a_file_inside_its_root_with_provenance() {
    let tree = Tree::new();
    let tool = ReadFileTool::new(tree.root()).expect("root");
    let r = run(
        "r = await read_file(path='notes/todo.txt')\n[r['text'], r['source'], r['policy'], r['observed_at'][-1]]",
        vec![Arc::new(tool)],
        &granting(&[Permission::FsRead]),
    )
    .await;
    let canonical = std::fs::canonicalize(tree.root()).expect("canonical");
    let source = canonical.join("notes/todo.txt").display().to_string();
    assert_eq!(r.output, json!(["buy milk", source, "sandbox-read", "Z"]), "{r:#?}");
    let record = &r.call_trace[0];
    assert_eq!(record.source.as_deref(), Some("builtin:read_file"));
    assert_eq!(record.policy, Some(PolicyDecision::WithinRisk));
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_without_fs_read_granted_is_denied() {
    let tree = Tree::new();
    let tool = ReadFileTool::new(tree.root()).expect("root");
    let r = run(
        "try:\n    await read_file(path='notes/todo.txt')\nexcept PermissionError as e:\n    r = str(e)\nr",
        vec![Arc::new(tool)],
        &ChainPolicy::default(),
    )
    .await;
    assert!(r.output.as_str().unwrap_or_default().contains("fs.read"), "{r:#?}");
    assert_eq!(r.call_trace[0].policy, Some(PolicyDecision::DeniedPermission));
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_dot_dot_out_of_its_root() {
    assert_refused(&Tree::new().read("../secret.txt").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_dot_dot_hidden_inside_a_path() {
    assert_refused(&Tree::new().read("notes/../../secret.txt").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_an_absolute_path_outside_its_root() {
    let tree = Tree::new();
    let secret = tree.tmp.path().join("secret.txt").display().to_string();
    assert_refused(&tree.read(&secret).await);
    assert_refused(&tree.read("/etc/passwd").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_an_absolute_path_climbing_out_of_its_root() {
    let tree = Tree::new();
    let sneaky = format!(
        "{}/../secret.txt",
        std::fs::canonicalize(tree.root()).expect("c").display()
    );
    assert_refused(&tree.read(&sneaky).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_a_relative_symlink_pointing_out() {
    assert_refused(&Tree::new().read("up").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_an_absolute_symlink_pointing_out() {
    assert_refused(&Tree::new().read("abs").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_refuses_a_symlinked_folder_pointing_out() {
    assert_refused(&Tree::new().read("parent/secret.txt").await);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_follows_a_symlink_that_stays_inside() {
    let r = Tree::new().read("alias").await;
    assert_eq!(r.output, json!("buy milk"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_accepts_an_absolute_path_inside_its_root() {
    let tree = Tree::new();
    let inside = std::fs::canonicalize(tree.root()).expect("c").join("notes/todo.txt");
    let r = tree.read(&inside.display().to_string()).await;
    assert_eq!(r.output, json!("buy milk"), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn read_file_schema_is_strict() {
    let tree = Tree::new();
    let tool = ReadFileTool::new(tree.root()).expect("root");
    let r = run(
        "try:\n    await read_file(path='notes/todo.txt', mode='w')\nexcept ValueError as e:\n    r = str(e)\nr",
        vec![Arc::new(tool)],
        // What the run does with the call the check before it refuses.
        &ChainPolicy {
            type_check: chainbox::TypeCheck::Off,
            ..granting(&[Permission::FsRead])
        },
    )
    .await;
    assert!(r.output.as_str().unwrap_or_default().contains("mode"), "{r:#?}");
}
