//! Debian's VictoriaMetrics (package `victoria-metrics`, 1.79) for the
//! end-to-end tests: `vmagent` scrapes with Kubernetes service discovery
//! (`kubernetes_sd_configs`, which Debian's Prometheus is built without)
//! and writes what it scrapes to a single-node `victoria-metrics`;
//! `vmalert` evaluates rule files on that and notifies a receiver in the
//! test. Each listens on 127.0.0.1 only, keeps its data in a directory of
//! the stack's, and is killed by its pid when dropped, or with the test
//! process when that is killed first (docs/testing.md#kubernetes-discovery-end-to-end).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use combo_testkit::leftovers;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::PostParams;
use kube::config::Kubeconfig;
use kube::{Api, Client};
use serde_yaml::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::prometheus::{
    http_get, monitor_job, parse_alerts, parse_label_values, parse_scalar, yaml, Alert,
};

/// How a scraper reaches the API server: as a ServiceAccount, with a
/// token of its own.
#[derive(Clone, Debug)]
pub struct ApiAccess {
    /// The API server's URL, from the test kubeconfig.
    pub server: String,
    /// The cluster's CA, from the test kubeconfig.
    pub ca_file: PathBuf,
    /// A file holding the ServiceAccount's token.
    pub token_file: PathBuf,
}

impl ApiAccess {
    /// Access as ServiceAccount `name` of `namespace`: a token of the
    /// TokenRequest API (valid one hour), written into `dir`, and the
    /// server and CA of the test kubeconfig.
    pub async fn service_account(
        client: &Client,
        namespace: &str,
        name: &str,
        dir: &Path,
    ) -> Result<Self> {
        let request = TokenRequest {
            spec: TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            },
            ..TokenRequest::default()
        };
        let answer = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .with_context(|| format!("a token of ServiceAccount {namespace}/{name}"))?;
        let token = answer.status.context("TokenRequest without status")?.token;
        let token_file = dir.join("token");
        std::fs::write(&token_file, token)?;
        let config = Kubeconfig::read_from(crate::kubeconfig())?;
        let cluster = config
            .clusters
            .first()
            .and_then(|c| c.cluster.clone())
            .context("a cluster in the kubeconfig")?;
        Ok(ApiAccess {
            server: cluster.server.context("the cluster's server")?,
            ca_file: cluster
                .certificate_authority
                .context("the kubeconfig names its CA file (certificate-authority)")?
                .into(),
            token_file,
        })
    }
}

/// The scrape job of a PodMonitor (as [`monitor_job`] makes it) with
/// Kubernetes discovery of role `pod` through `access`, limited to the
/// monitor's `namespaceSelector.matchNames` when it has some.
pub fn kubernetes_job(podmonitor: &str, access: &ApiAccess, interval: &str) -> Result<Value> {
    let monitor: Value = serde_yaml::from_str(podmonitor)?;
    let mut job = monitor_job(podmonitor, interval)?;
    let mut sd = yaml(&format!(
        "{{role: pod, api_server: '{}', bearer_token_file: '{}', tls_config: {{ca_file: '{}'}}}}",
        access.server,
        access.token_file.display(),
        access.ca_file.display()
    ))?;
    if let Some(names) = monitor["spec"]["namespaceSelector"].get("matchNames") {
        sd["namespaces"] = yaml("{names: []}")?;
        sd["namespaces"]["names"] = names.clone();
    }
    job.insert("kubernetes_sd_configs".into(), Value::Sequence(vec![sd]));
    Ok(Value::Mapping(job))
}

/// A free port on 127.0.0.1 (the OS's choice, released for the process).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// One process of the stack, on `url`, its output in `<dir>/<name>.log`.
struct Daemon {
    name: &'static str,
    child: Child,
    log: PathBuf,
    url: String,
}

impl Daemon {
    /// Starts `name` with `args` and `-httpListenAddr` on a free loopback
    /// port, and waits until its `/health` answers.
    async fn start(name: &'static str, args: &[String], dir: &Path) -> Result<Self> {
        let installed = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()));
        if !installed {
            bail!("{name}: install Debian's package victoria-metrics (tests/deps.sh does)");
        }
        let port = free_port()?;
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)?;
        // Killed with the test even when the test is killed before its
        // drop: util-linux's setpriv sets the parent-death signal and execs
        // `name`, a child of the test's thread, which lives as long.
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--", name])
            .args(args)
            .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("setpriv: install Debian's package util-linux (tests/deps.sh does)")?;
        let daemon = Daemon {
            name,
            child,
            log,
            url: format!("http://127.0.0.1:{port}"),
        };
        crate::wait_for(Duration::from_secs(60), &format!("{name} up"), || async {
            Ok(daemon.get("/health", &[]).is_ok())
        })
        .await?;
        Ok(daemon)
    }

    /// GET of `path` with URL-encoded query parameters; the body.
    fn get(&self, path: &str, params: &[(&str, &str)]) -> Result<String> {
        http_get(&self.url, path, params).with_context(|| self.name.to_string())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Shown with the test's output when it fails.
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        eprintln!(
            "last lines of the {} log:\n{}",
            self.name,
            lines[lines.len().saturating_sub(10)..].join("\n")
        );
    }
}

/// An Alertmanager stand-in on 127.0.0.1 for `vmalert -notifier.url`: it
/// answers 200 to every request and keeps the bodies it was sent.
struct Notifier {
    url: String,
    bodies: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Notifier {
    async fn start() -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = bodies.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    if let Ok(body) = read_request_body(&mut conn).await {
                        kept.lock().expect("notifier lock").push(body);
                    }
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                    let _ = conn.write_all(ok).await;
                });
            }
        });
        Ok(Notifier { url, bodies, task })
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The body of one HTTP/1.1 request (by its Content-Length).
async fn read_request_body(conn: &mut tokio::net::TcpStream) -> Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, length) = loop {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed in the request head");
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf[head_end..]).into_owned())
}

/// The directory of a stack, removed when dropped (after its processes).
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// vmalert -> victoria-metrics <- vmagent, and the notifier. Fields drop
/// in this order: the processes first, then their directory.
pub struct Victoria {
    alert: Daemon,
    agent: Daemon,
    storage: Daemon,
    notifier: Notifier,
    dir: Dir,
}

impl Victoria {
    /// A directory for a stack (and for what its scrape config names,
    /// such as a token).
    pub fn dir() -> Result<PathBuf> {
        const DIR_PREFIX: &str = "kc-victoria-";
        let tmp = std::env::temp_dir();
        // Stacks of test processes killed before their drop: their
        // processes died with them (see Daemon::start), their files stay.
        for gone in leftovers::orphans_in(&tmp, DIR_PREFIX) {
            let _ = std::fs::remove_dir_all(tmp.join(gone));
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        let dir = tmp.join(leftovers::own_name(DIR_PREFIX, &format!("{nanos:x}")));
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// Starts the stack in `dir` (from [`Victoria::dir`], removed when the
    /// stack is dropped): vmagent with `scrape` (checked first with its
    /// dry run), vmalert with `rules`, both evaluating and scraping every
    /// 2 s.
    pub async fn start(dir: PathBuf, scrape: &Value, rules: &str) -> Result<Self> {
        let dir = Dir(dir);
        let path = |name: &str| dir.0.join(name).display().to_string();
        std::fs::write(path("scrape.yaml"), serde_yaml::to_string(scrape)?)?;
        std::fs::write(path("rules.yaml"), rules)?;
        let dry = Command::new("vmagent")
            .arg(format!("-promscrape.config={}", path("scrape.yaml")))
            .args(["-promscrape.config.dryRun", "-loggerLevel=ERROR"])
            .output()
            .context("vmagent: install Debian's package victoria-metrics")?;
        if !dry.status.success() || !dry.stderr.is_empty() {
            bail!(
                "vmagent refuses the scrape config: {}",
                String::from_utf8_lossy(&dry.stderr)
            );
        }
        let notifier = Notifier::start().await?;
        // Data is visible to queries 1 s after it arrives (30 s by
        // default), and a series not scraped for 10 s is gone.
        let storage_args = [
            format!("-storageDataPath={}", path("storage")),
            "-retentionPeriod=1d".into(),
            "-search.latencyOffset=1s".into(),
            "-search.maxStalenessInterval=10s".into(),
        ];
        let storage = Daemon::start("victoria-metrics", &storage_args, &dir.0).await?;
        let agent_args = [
            format!("-promscrape.config={}", path("scrape.yaml")),
            "-promscrape.kubernetesSDCheckInterval=2s".into(),
            format!("-remoteWrite.url={}/api/v1/write", storage.url),
            format!("-remoteWrite.tmpDataPath={}", path("agent")),
        ];
        let agent = Daemon::start("vmagent", &agent_args, &dir.0).await?;
        let alert_args = [
            format!("-rule={}", path("rules.yaml")),
            format!("-datasource.url={}", storage.url),
            "-datasource.queryStep=10s".into(),
            format!("-notifier.url={}", notifier.url),
            "-evaluationInterval=2s".into(),
        ];
        let alert = Daemon::start("vmalert", &alert_args, &dir.0).await?;
        Ok(Victoria {
            alert,
            agent,
            storage,
            notifier,
            dir,
        })
    }

    /// The value of an instant query (to victoria-metrics) that yields one
    /// number.
    pub fn scalar(&self, query: &str) -> Result<Option<f64>> {
        parse_scalar(&self.storage.get("/api/v1/query", &[("query", query)])?)
    }

    /// The values of `label` over the series an instant query yields.
    pub fn label_values(
        &self,
        query: &str,
        label: &str,
    ) -> Result<std::collections::BTreeSet<String>> {
        let body = self.storage.get("/api/v1/query", &[("query", query)])?;
        parse_label_values(&body, label)
    }

    /// The series of an instant query's answer: each one's labels and value.
    pub fn vector(
        &self,
        query: &str,
    ) -> Result<Vec<(std::collections::BTreeMap<String, String>, f64)>> {
        let body = self.storage.get("/api/v1/query", &[("query", query)])?;
        let answer: serde_json::Value = serde_json::from_str(&body)?;
        if answer["status"] != "success" {
            bail!("query {query}: {answer}");
        }
        answer["data"]["result"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect();
                let value = series["value"][1].as_str().context("a sample value")?;
                Ok((labels, value.parse()?))
            })
            .collect()
    }

    /// vmagent's view of its targets (`/api/v1/targets`), for messages.
    pub fn targets(&self) -> Result<String> {
        self.agent.get("/api/v1/targets", &[])
    }

    /// vmalert's pending and firing alerts.
    pub fn alerts(&self) -> Result<Vec<Alert>> {
        parse_alerts(&self.alert.get("/api/v1/alerts", &[])?)
    }

    /// The alerts vmalert sent to the notifier, each as the notifier got
    /// it (Alertmanager's `/api/v2/alerts` list), oldest first.
    pub fn notified(&self) -> Vec<serde_json::Value> {
        let bodies = self.notifier.bodies.lock().expect("notifier lock").clone();
        bodies
            .iter()
            .filter_map(|b| serde_json::from_str::<Vec<serde_json::Value>>(b).ok())
            .flatten()
            .collect()
    }

    /// The stack's directory.
    pub fn path(&self) -> &Path {
        &self.dir.0
    }
}

#[cfg(test)]
#[path = "victoria_tests.rs"]
mod tests;
