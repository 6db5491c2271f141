//! The artifact stores' contract ([`chainbox::artifacts`]), one suite of
//! behaviours run on each store: `memory::`, `fs::` (a temporary
//! directory) and `s3::` (an [`ObjectArtifactStore`] on a throwaway
//! SeaweedFS, [`crate::s3::S3Server`]; without one the test fails under CI
//! and is skipped elsewhere). Then what only the object store has: pins
//! shared between handles, tampering caught, and its synchronous API
//! called from inside both kinds of tokio runtime.

use std::sync::Arc;

use chainbox::artifacts::{self, Artifact, ArtifactError, ArtifactRef, ArtifactStore};
use chainbox::{FsArtifactStore, MemoryArtifactStore};
use object_store::ObjectStoreExt;

use crate::s3::S3Server;

// ---- The behaviours ----

fn the_same_bytes_get_the_same_ref_and_keep_their_first_media_type(store: &dyn ArtifactStore) {
    let a = store.put(b"payload", "text/plain").expect("put");
    let b = store.put(b"payload", "application/json").expect("put again");
    assert_eq!(a, b);
    assert_eq!(a, ArtifactRef::of(b"payload"));
    assert_ne!(a, store.put(b"other", "text/plain").expect("put other"));
    assert_eq!(store.get(&a).expect("get").expect("present").media_type, "text/plain");
}

fn bytes_and_media_type_round_trip(store: &dyn ArtifactStore) {
    let bytes: Vec<u8> = (0..=255).cycle().take(300_000).collect();
    let r = store.put(&bytes, "image/png").expect("put");
    assert_eq!(
        store.get(&r).expect("get"),
        Some(Artifact {
            bytes,
            media_type: "image/png".into()
        })
    );
    let empty = store.put(b"", "application/octet-stream").expect("put empty");
    assert_eq!(store.get(&empty).expect("get empty").expect("present").bytes, b"");
    let odd = store.put(b"odd", "text/plain; charset=\"\u{e4}%\"").expect("put odd");
    assert_eq!(
        store.get(&odd).expect("get odd").expect("present").media_type,
        "text/plain; charset=\"\u{e4}%\""
    );
}

fn an_unknown_ref_is_none(store: &dyn ArtifactStore) {
    assert_eq!(store.get(&ArtifactRef::of(b"absent")).expect("get"), None);
}

fn pinning_an_absent_artifact_is_not_found(store: &dyn ArtifactStore) {
    let r = ArtifactRef::of(b"absent");
    let pinned = store.pin("c", &r);
    assert!(
        matches!(pinned, Err(ArtifactError::NotFound(x)) if x == r),
        "{pinned:?}"
    );
}

fn gc_removes_what_no_chain_pins(store: &dyn ArtifactStore) {
    let kept = store.put(b"kept", "text/plain").expect("put");
    let also_kept = store.put_pinned("c/2", b"also kept", "text/plain").expect("put_pinned");
    let dropped = store.put(b"dropped", "text/plain").expect("put");
    store.pin("c1", &kept).expect("pin");
    assert_eq!(store.gc().expect("gc"), 1);
    assert!(store.get(&kept).expect("get").is_some());
    assert!(store.get(&also_kept).expect("get").is_some());
    assert!(store.get(&dropped).expect("get").is_none());
}

fn unpinning_a_chain_lets_gc_remove_only_its_artifacts(store: &dyn ArtifactStore) {
    let shared = store.put_pinned("a", b"shared", "text/plain").expect("put_pinned");
    store.pin("b", &shared).expect("pin");
    let only_a = store.put_pinned("a", b"only a", "text/plain").expect("put_pinned");
    store.unpin_chain("a").expect("unpin");
    assert_eq!(store.gc().expect("gc"), 1);
    assert!(store.get(&shared).expect("get").is_some());
    assert!(store.get(&only_a).expect("get").is_none());
    store.unpin_chain("b").expect("unpin");
    assert_eq!(store.gc().expect("gc"), 1);
    assert_eq!(store.gc().expect("gc"), 0);
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[test]
                fn $name() {
                    super::$name(&chainbox::MemoryArtifactStore::new());
                }
            )*
        }

        mod fs {
            $(
                #[test]
                fn $name() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    super::$name(&chainbox::FsArtifactStore::new(dir.path()).expect("store"));
                }
            )*
        }

        mod s3 {
            #[test]
            fn behaves_as_the_memory_store() {
                let Some(server) = crate::s3::S3Server::start() else { return };
                $(
                    eprintln!("s3: {}", stringify!($name));
                    super::$name(&server.store(stringify!($name)));
                )*
            }
        }
    };
}

suite!(
    the_same_bytes_get_the_same_ref_and_keep_their_first_media_type,
    bytes_and_media_type_round_trip,
    an_unknown_ref_is_none,
    pinning_an_absent_artifact_is_not_found,
    gc_removes_what_no_chain_pins,
    unpinning_a_chain_lets_gc_remove_only_its_artifacts,
);

// ---- The object store only ----

#[test]
fn s3_artifacts_and_pins_are_shared_by_every_handle_on_the_prefix() {
    let Some(server) = S3Server::start() else { return };
    let node_a = server.store("shared");
    let node_b = server.store("shared");
    let elsewhere = server.store("elsewhere");
    assert_eq!(server.url("shared"), format!("s3://{}/shared", server.bucket()));
    let r = node_a
        .put_pinned("chain-1", b"offloaded on a", "application/json")
        .expect("put on a");
    let loose = node_a.put(b"nobody pins this", "text/plain").expect("put loose");
    assert_eq!(
        node_b.get(&r).expect("get on b").map(|a| a.bytes),
        Some(b"offloaded on a".to_vec())
    );
    assert_eq!(elsewhere.get(&r).expect("get elsewhere"), None, "prefixes are apart");
    // b's gc keeps what a pinned, and collects the rest.
    assert_eq!(node_b.gc().expect("gc on b"), 1);
    assert!(node_a.get(&r).expect("get").is_some());
    assert!(node_a.get(&loose).expect("get").is_none());
    node_b.unpin_chain("chain-1").expect("unpin on b");
    assert_eq!(node_a.gc().expect("gc on a"), 1);
}

#[test]
fn s3_an_object_whose_bytes_do_not_match_its_ref_is_corrupt() {
    let Some(server) = S3Server::start() else { return };
    let store = server.store("tamper");
    let r = store.put(b"hello", "text/plain").expect("put");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let key = object_store::path::Path::from(format!("tamper/sha256/{}", r.hex()));
    runtime
        .block_on(server.object_store().put(&key, b"HELLO".to_vec().into()))
        .expect("overwrite the object");
    let got = store.get(&r);
    assert!(
        matches!(got, Err(ArtifactError::Corrupt { artifact, ref reason }) if artifact == r && reason.contains("hash")),
        "{got:?}"
    );
}

#[test]
fn s3_errors_name_the_store_and_the_key() {
    let Some(server) = S3Server::start() else { return };
    // A store on a bucket the server does not have.
    let s3 = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name("no-such-bucket")
        .with_access_key_id(crate::s3::ACCESS_KEY)
        .with_secret_access_key("wrong-secret")
        .with_region("us-east-1")
        .with_endpoint(server.endpoint())
        .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
        .with_retry(object_store::RetryConfig {
            max_retries: 0,
            ..object_store::RetryConfig::default()
        })
        .build()
        .expect("client");
    let store = chainbox::ObjectArtifactStore::new(Arc::new(s3), "p", "s3://no-such-bucket/p").expect("store");
    let e = store.put(b"x", "text/plain").expect_err("refused");
    let text = e.to_string();
    assert!(matches!(e, ArtifactError::ObjectStore { .. }), "{e:?}");
    assert!(text.contains("s3://no-such-bucket/p"), "{text}");
    assert!(
        text.contains(&format!("p/sha256/{}", ArtifactRef::of(b"x").hex())),
        "{text}"
    );
    assert!(!text.contains("wrong-secret"), "{text}");
}

/// The synchronous API blocks its caller, never the runtime it needs: from
/// a current-thread runtime (whose only thread is the caller) and from a
/// worker of a multi-thread one.
#[test]
fn s3_store_calls_work_from_inside_either_kind_of_tokio_runtime() {
    let Some(server) = S3Server::start() else { return };
    let store: Arc<dyn ArtifactStore> = Arc::new(server.store("runtimes"));
    for multi in [false, true] {
        let runtime = if multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread().enable_all().build()
        }
        .expect("runtime");
        let store = store.clone();
        let got = runtime.block_on(async move {
            tokio::spawn(async move {
                let bytes = format!(
                    "from a {} runtime",
                    if multi { "multi-thread" } else { "current-thread" }
                );
                let r = store.put(bytes.as_bytes(), "text/plain").expect("put");
                store.get(&r).expect("get").map(|a| a.bytes == bytes.as_bytes())
            })
            .await
            .expect("the task")
        });
        assert_eq!(got, Some(true), "multi-thread: {multi}");
    }
}

#[test]
fn a_store_dropped_inside_a_runtime_does_not_panic() {
    let Some(server) = S3Server::start() else { return };
    let store = server.store("drop");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        store.put(b"x", "text/plain").expect("put");
        drop(store);
    });
}

// ---- Opening by URL ----

#[test]
fn open_picks_the_store_by_url_and_refuses_unknown_schemes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let memory = artifacts::open("memory:").expect("memory:");
    let r = memory.put(b"m", "text/plain").expect("put");
    assert!(memory.get(&r).expect("get").is_some());

    let file = artifacts::open(&format!("file:{}", dir.path().display())).expect("file:");
    let r = file.put(b"f", "text/plain").expect("put");
    let again = FsArtifactStore::new(dir.path()).expect("the same dir");
    assert!(again.get(&r).expect("get").is_some(), "file: is the directory");
    assert!(artifacts::open(&format!("file://{}", dir.path().display())).is_ok());

    for bad in [
        "gs://bucket/x",
        "s3://",
        "file:",
        "file://relative",
        "ftp://user:hunter2@host/x",
    ] {
        let e = artifacts::open(bad).map(drop).expect_err(bad);
        assert!(matches!(e, ArtifactError::BadUrl { .. }), "{bad}: {e:?}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}

// ---- Across processes: a durable chain's artifacts on S3 ----

/// A manifest of `fetch(n)` (safe: `n` rows of 100 bytes, over the 4096
/// bytes a result may be inline, so offloaded), `snap()` (safe: a PNG, a
/// media result) and `wire(amount)` (critical); each command appends a line
/// to `DIR/<tool>.runs` per run.
fn artifact_manifest(dir: &std::path::Path) -> std::path::PathBuf {
    let tool = dir.join("tool.py");
    std::fs::write(
        &tool,
        format!(
            "import json, sys, os\nreq = json.load(sys.stdin)\nname = req['name']\nargs = req['arguments']\n\
             with open(os.path.join(sys.argv[1], name + '.runs'), 'a') as f:\n    f.write('x\\n')\n\
             if name == 'fetch':\n    print(json.dumps({{'rows': ['row %d ' % i + 'x' * 94 for i in range(args['n'])]}}))\n\
             elif name == 'snap':\n    print(json.dumps({{'content': [{{'type': 'text', 'text': 'a picture'}}, {{'type': 'image', 'media_type': 'image/png', 'data': {png:?}}}]}}))\n\
             else:\n    print(json.dumps('sent %d' % args['amount']))\n",
            png = crate::fixtures::PNG_1X1
        ),
    )
    .expect("the tool");
    let manifest = dir.join("tools.toml");
    let (py, d) = (tool.display().to_string(), dir.display().to_string());
    let command = format!("command = [\"python3\", {py:?}, {d:?}]");
    std::fs::write(
        &manifest,
        format!(
            "[[tool]]\nname = \"fetch\"\ndescription = \"rows\"\n{command}\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\nn = {{ type = \"integer\" }}\n\n\
             [[tool]]\nname = \"snap\"\ndescription = \"a picture\"\n{command}\n[tool.input_schema]\ntype = \"object\"\n\n\
             [[tool]]\nname = \"wire\"\ndescription = \"sends\"\nrisk = \"critical\"\n{command}\n[tool.input_schema]\ntype = \"object\"\n[tool.input_schema.properties]\namount = {{ type = \"integer\" }}\n"
        ),
    )
    .expect("the manifest");
    manifest
}

fn runs(dir: &std::path::Path, tool: &str) -> usize {
    std::fs::read_to_string(dir.join(format!("{tool}.runs"))).map_or(0, |text| text.lines().count())
}

/// `chainbox ARGS` in `cwd` with `env`: its exit code, stdout and stderr.
fn chainbox_in(cwd: &std::path::Path, env: &[(&str, String)], args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("chainbox runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Reads an offloaded result and a media file of calls made before the
/// approval, after it.
const ARTIFACT_SCRIPT: &str = "big = await fetch(n=60)\npic = await snap()\nr = await wire(amount=5)\n\
     rows = load_artifact(big)['rows']\nf = pic['files'][0]\nimg = open(f['path'], 'rb').read()\n\
     [r, len(rows), rows[59][:6], f['path'], len(img), img[:4] == b'\\x89PNG']";

#[test]
fn a_chain_resumed_in_another_process_reads_its_earlier_artifacts_and_media_from_s3() {
    let Some(server) = S3Server::start() else { return };
    let env = server.env();
    let dir = tempfile::tempdir().expect("a temp dir");
    let manifest = artifact_manifest(dir.path()).display().to_string();
    let script = dir.path().join("chain.py");
    std::fs::write(&script, ARTIFACT_SCRIPT).expect("the script");
    let script = script.display().to_string();
    let state = format!("sqlite:{}", dir.path().join("chains.db").display());
    let artifacts = server.url("chains");
    let (node_a, node_b) = (tempfile::tempdir().expect("a"), tempfile::tempdir().expect("b"));

    // The uninterrupted answer.
    let (code, out, err) = chainbox_in(
        node_a.path(),
        &env,
        &["run", &script, "--tools", &manifest, "--approve", "auto", "--json"],
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let uninterrupted: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(uninterrupted["output"][1], 60, "{uninterrupted}");
    for tool in ["fetch", "snap", "wire"] {
        std::fs::remove_file(dir.path().join(format!("{tool}.runs"))).expect("reset");
    }

    // Node A suspends at the approval, its large result and picture on S3.
    let (code, out, err) = chainbox_in(
        node_a.path(),
        &env,
        &[
            "run",
            &script,
            "--tools",
            &manifest,
            "--approve",
            "defer",
            "--state",
            &state,
            "--artifacts",
            &artifacts,
            "--json",
        ],
    );
    assert_eq!(code, Some(3), "{out}\n{err}");
    let suspended: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let chain_id = suspended["chain_id"].as_str().expect("a chain id").to_owned();
    assert!(
        suspended["call_trace"][0]["artifact_ref"].is_string(),
        "fetch's result is offloaded: {suspended}"
    );

    // Node B decides and resumes: another directory, another process.
    let (code, _, err) = chainbox_in(
        node_b.path(),
        &env,
        &["decide", &chain_id, "approve", "--state", &state],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = chainbox_in(
        node_b.path(),
        &env,
        &[
            "resume",
            &chain_id,
            "--tools",
            &manifest,
            "--state",
            &state,
            "--artifacts",
            &artifacts,
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    let resumed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(resumed["output"], uninterrupted["output"], "{resumed}");
    assert_eq!(
        (
            runs(dir.path(), "fetch"),
            runs(dir.path(), "snap"),
            runs(dir.path(), "wire")
        ),
        (1, 1, 1),
        "no tool ran twice"
    );
    // The replayed call's picture is the chain's file again.
    assert_eq!(resumed["files"], uninterrupted["files"], "{resumed}");
}

// ---- In one process: what a resumed chain makes of its replayed calls ----

/// `rows(n)` (safe: `n` rows of 100 bytes, offloaded past 4096 bytes),
/// `chart()` (a PNG) and `wire(amount)` (critical).
fn replay_registry() -> chainbox::ToolRegistry {
    use chainbox::tools::Tool;
    use serde_json::{Value, json};
    chainbox::ToolRegistry::from_local([
        Arc::new(crate::fixtures::tool("rows", &["n"], |args| {
            let n = args.get("n").and_then(Value::as_u64).unwrap_or(0);
            Ok(json!({"rows": (0..n).map(|i| format!("row {i:03} {}", "x".repeat(92))).collect::<Vec<_>>()}))
        })) as Arc<dyn Tool>,
        Arc::new(crate::fixtures::ChartTool),
        Arc::new(
            crate::fixtures::tool("wire", &["amount"], |_| Ok(json!("sent"))).with_risk(chainbox::ToolRisk::Critical),
        ),
    ])
    .expect("registry")
}

/// A durable chain on an engine of its own whose artifacts go to `artifacts`.
fn durable_on(artifacts: Arc<dyn ArtifactStore>) -> chainbox::durable::Durable {
    let engine = chainbox::Engine::with_config(chainbox::EngineConfig {
        artifacts: Some(artifacts),
        max_concurrent_chains: 4,
        prefault: false,
        ..chainbox::EngineConfig::default()
    })
    .expect("engine");
    chainbox::durable::Durable::new(engine, Arc::new(chainbox::store::MemoryStore::new()))
}

/// Runs `script` until it suspends at `wire`, approves, and resumes it:
/// the suspended result, then the resumed one.
async fn suspend_and_resume(
    durable: &chainbox::durable::Durable,
    script: &str,
    between: impl FnOnce(),
) -> (chainbox::ChainRunResult, chainbox::ChainRunResult) {
    let registry = replay_registry();
    let policy = chainbox::ChainPolicy {
        python: chainbox::PythonChoice::Monty,
        ..chainbox::ChainPolicy::default()
    };
    let suspended = durable
        .run(script, &registry, &policy, &chainbox::Approval::defer())
        .await
        .expect("runs");
    assert_eq!(suspended.status, chainbox::ChainStatus::Suspended, "{suspended:#?}");
    let chain_id = suspended.chain_id.clone().expect("a chain id");
    between();
    durable
        .decide(&chain_id, chainbox::approval::ApprovalDecision::Approved, "test")
        .await
        .expect("decide");
    let resumed = durable
        .resume(&chain_id, &registry, &chainbox::Approval::defer())
        .await
        .expect("resumes");
    (suspended, resumed)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_chain_loads_its_replayed_offloaded_result_and_reads_its_replayed_media_file() {
    let durable = durable_on(Arc::new(MemoryArtifactStore::new()));
    let script = "big = await rows(n=50)\nc = await chart()\nr = await wire(amount=1)\n\
                  f = c['files'][0]\ndata = open(f['path'], 'rb').read()\n\
                  [r, load_artifact(big)['rows'][49][:7], f['path'], data[:4] == b'\\x89PNG']";
    let (suspended, resumed) = suspend_and_resume(&durable, script, || {}).await;
    crate::fixtures::assert_ok(&resumed);
    assert_eq!(
        resumed.output,
        serde_json::json!(["sent", "row 049", "/workspace/media/chart_1.png", true])
    );
    assert_eq!(resumed.files, suspended.files, "the replayed file is the chain's again");
    assert_eq!(resumed.artifacts.len(), 2, "{:?}", resumed.artifacts);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_chains_artifacts_stay_pinned_until_its_resume_ends() {
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let durable = durable_on(artifacts.clone());
    let script = "big = await rows(n=50)\nr = await wire(amount=1)\nload_artifact(big)['rows'][0][:7]";
    let (suspended, resumed) = suspend_and_resume(&durable, script, || {
        assert_eq!(artifacts.gc().expect("gc"), 0, "a gc while it waits keeps them");
    })
    .await;
    let offloaded = suspended.call_trace[0].artifact_ref.expect("offloaded");
    crate::fixtures::assert_ok(&resumed);
    assert_eq!(resumed.output, serde_json::json!("row 000"));
    assert!(artifacts.gc().expect("gc") >= 1, "released when the chain ended");
    assert_eq!(artifacts.get(&offloaded).expect("get"), None);
}

#[test]
fn run_resume_and_serve_refuse_an_artifacts_url_of_an_unknown_scheme() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("chain.py");
    std::fs::write(&script, "1").expect("script");
    let script = script.display().to_string();
    let state = format!("sqlite:{}", dir.path().join("chains.db").display());
    let url = "gs://bucket/prefix";
    for args in [
        vec!["run", &script, "--artifacts", url],
        vec!["run", &script, "--state", &state, "--artifacts", url],
        vec!["resume", "chain_x", "--state", &state, "--artifacts", url],
        vec!["serve", "--artifacts", url],
    ] {
        let (code, out, err) = chainbox_in(dir.path(), &[], &args);
        assert_eq!(code, Some(2), "{args:?}: {out}\n{err}");
        assert!(
            err.contains("--artifacts") && err.contains("gs://bucket/prefix") && err.contains("unknown scheme"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn s3_refuses_a_second_conditional_create_so_the_first_media_type_stays() {
    let Some(server) = S3Server::start() else { return };
    let raw = server.object_store();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let key = object_store::path::Path::from("conditional/object");
    let create = || object_store::PutOptions {
        mode: object_store::PutMode::Create,
        ..object_store::PutOptions::default()
    };
    runtime
        .block_on(raw.put_opts(&key, b"first".to_vec().into(), create()))
        .expect("the first create");
    let second = runtime.block_on(raw.put_opts(&key, b"second".to_vec().into(), create()));
    assert!(
        matches!(second, Err(object_store::Error::AlreadyExists { .. })),
        "SeaweedFS honours If-None-Match: {second:?}"
    );
    // Concurrent first puts of the same bytes: all succeed, one media type wins for good.
    let store = Arc::new(server.store("race"));
    let threads: Vec<_> = (0..6)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || store.put(b"raced", &format!("text/x-{i}")).expect("put"))
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().expect("thread"), ArtifactRef::of(b"raced"));
    }
    let first = store.get(&ArtifactRef::of(b"raced")).expect("get").expect("present");
    store.put(b"raced", "text/later").expect("put again");
    assert_eq!(store.get(&ArtifactRef::of(b"raced")).expect("get"), Some(first));
}

#[test]
fn an_unreachable_s3_store_fails_the_offloading_call_soon_naming_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = artifact_manifest(dir.path()).display().to_string();
    let script = dir.path().join("chain.py");
    std::fs::write(&script, "await fetch(n=60)").expect("script");
    let script = script.display().to_string();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a port");
    let endpoint = format!("http://127.0.0.1:{}", closed.local_addr().expect("addr").port());
    drop(closed);
    let env = [
        ("AWS_ACCESS_KEY_ID", "k".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t-value".to_owned()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ALLOW_HTTP", "true".to_owned()),
    ];
    let started = std::time::Instant::now();
    let (code, out, err) = chainbox_in(
        dir.path(),
        &env,
        &[
            "run",
            &script,
            "--tools",
            &manifest,
            "--approve",
            "auto",
            "--artifacts",
            "s3://nowhere/p",
            "--json",
        ],
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(code, Some(1), "{out}\n{err}");
    let result: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let why = result["call_trace"][0]["error"].as_str().expect("the call's error");
    assert!(why.contains("artifact store s3://nowhere/p"), "{why}");
    assert!(!out.contains("s3cr3t-value"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_handle_with_its_own_artifact_store_offloads_there_and_its_resume_reads_them_back() {
    // The shared engine (its store in memory), a handle storing elsewhere:
    // what an embedder with one engine and a store per chain store does.
    let artifacts = Arc::new(MemoryArtifactStore::new());
    let durable = chainbox::durable::Durable::new(
        crate::fixtures::engine().clone(),
        Arc::new(chainbox::store::MemoryStore::new()),
    )
    .with_artifacts(Some(artifacts.clone()));
    let script = "big = await rows(n=50)\nr = await wire(amount=1)\nload_artifact(big)['rows'][49][:7]";
    let (suspended, resumed) = suspend_and_resume(&durable, script, || {}).await;
    let offloaded = suspended.call_trace[0].artifact_ref.expect("offloaded");
    assert!(
        artifacts.get(&offloaded).expect("get").is_some(),
        "in the handle's store"
    );
    assert_eq!(
        crate::fixtures::engine().artifacts().get(&offloaded).expect("get"),
        None,
        "not in the engine's"
    );
    crate::fixtures::assert_ok(&resumed);
    assert_eq!(resumed.output, serde_json::json!("row 049"));
}
