//! A real Prometheus for the end-to-end tests: the scrape job the Prometheus
//! Operator would make of the shipped PodMonitor, the shipped rules with
//! shorter `for:` durations, and the process, stopped when dropped
//! (docs/testing.md, "Prometheus end to end").
//!
//! Debian's `prometheus` is built without Kubernetes service discovery, so
//! the pods reach it through a file ([`crate::pod_sd`]) that carries the
//! labels Kubernetes discovery (role pod) gives them; the relabeling, the
//! scraping and the rules are Prometheus's own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use serde_yaml::{Mapping, Value};

/// The scrape job of the first endpoint of a PodMonitor, as the Prometheus
/// Operator generates it: keep the pods whose labels match the selector,
/// drop finished pods, label each target with its `namespace`, `container`,
/// `pod` and `job`, then the monitor's own relabelings. The targets come
/// from `sd_file`, written by [`crate::pod_sd`] for the pods of one
/// namespace (a test sees only its own; the monitor selects any), and the
/// scrape interval is `interval` instead of the monitor's.
pub fn scrape_job(podmonitor: &str, sd_file: &Path, interval: &str) -> Result<Value> {
    let mut job = monitor_job(podmonitor, interval)?;
    job.insert(
        "file_sd_configs".into(),
        yaml(&format!(
            "[{{files: ['{}'], refresh_interval: 5s}}]",
            sd_file.display()
        ))?,
    );
    Ok(Value::Mapping(job))
}

/// [`scrape_job`] without its discovery: the job's name, interval, path,
/// `honor_labels` (the endpoint's `honorLabels`) and relabelings.
pub fn monitor_job(podmonitor: &str, interval: &str) -> Result<Mapping> {
    let monitor: Value = serde_yaml::from_str(podmonitor)?;
    let kind = monitor["kind"].as_str().unwrap_or_default();
    if kind != "PodMonitor" {
        bail!("not a PodMonitor: kind {kind:?}");
    }
    let name = monitor["metadata"]["name"]
        .as_str()
        .context("PodMonitor without a name")?;
    let spec = &monitor["spec"];
    if spec["selector"].get("matchExpressions").is_some() {
        bail!("selector.matchExpressions is not translated");
    }
    let endpoint = &spec["podMetricsEndpoints"][0];
    if endpoint.is_null() {
        bail!("PodMonitor without podMetricsEndpoints");
    }
    let mut relabel = Vec::new();
    if let Some(labels) = spec["selector"]["matchLabels"].as_mapping() {
        for (key, value) in labels {
            let key = label_name(key.as_str().context("label key")?);
            let value = value.as_str().context("label value")?;
            relabel.push(yaml(&format!(
                "{{action: keep, source_labels: [__meta_kubernetes_pod_label_{key}, __meta_kubernetes_pod_labelpresent_{key}], regex: '({value});true'}}"
            ))?);
        }
    }
    if let Some(port) = endpoint["port"].as_str() {
        relabel.push(yaml(&format!(
            "{{action: keep, source_labels: [__meta_kubernetes_pod_container_port_name], regex: '{port}'}}"
        ))?);
    }
    relabel.push(yaml(
        "{action: drop, source_labels: [__meta_kubernetes_pod_phase], regex: '(Failed|Succeeded)'}",
    )?);
    for (meta, label) in [
        ("namespace", "namespace"),
        ("pod_container_name", "container"),
        ("pod_name", "pod"),
    ] {
        relabel.push(yaml(&format!(
            "{{source_labels: [__meta_kubernetes_{meta}], target_label: {label}}}"
        ))?);
    }
    relabel.push(yaml(&format!(
        "{{target_label: job, replacement: '{name}'}}"
    ))?);
    for r in endpoint["relabelings"].as_sequence().into_iter().flatten() {
        relabel.push(snake_case_keys(r)?);
    }
    let mut job = Mapping::new();
    job.insert("job_name".into(), format!("podMonitor/{name}/0").into());
    let honor = endpoint["honorLabels"].as_bool().unwrap_or(false);
    job.insert("honor_labels".into(), honor.into());
    job.insert("scrape_interval".into(), interval.into());
    job.insert(
        "metrics_path".into(),
        endpoint["path"].as_str().unwrap_or("/metrics").into(),
    );
    job.insert("relabel_configs".into(), Value::Sequence(relabel));
    Ok(job)
}

/// A Kubernetes label key as Prometheus names its meta label: every
/// character other than a letter, digit or `_` becomes `_`.
pub(crate) fn label_name(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// A relabeling of the Prometheus Operator (`sourceLabels`, `targetLabel`)
/// as Prometheus writes it (`source_labels`, `target_label`).
fn snake_case_keys(relabeling: &Value) -> Result<Value> {
    let map = relabeling
        .as_mapping()
        .context("a relabeling is a mapping")?;
    let mut out = Mapping::new();
    for (key, value) in map {
        let key = key.as_str().context("relabeling key")?;
        let mut snake = String::new();
        for c in key.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        }
        out.insert(snake.into(), value.clone());
    }
    Ok(Value::Mapping(out))
}

pub(crate) fn yaml(text: &str) -> Result<Value> {
    Ok(serde_yaml::from_str(text)?)
}

/// A rules file with every rule's `for:` set to `for_` and nothing else
/// changed: the expressions, labels and annotations stay the shipped ones.
pub fn with_for(rules: &str, for_: &str) -> Result<String> {
    let mut doc: Value = serde_yaml::from_str(rules)?;
    let groups = doc["groups"]
        .as_sequence_mut()
        .context("a rules file has groups")?;
    for group in groups {
        let Some(rules) = group.get_mut("rules").and_then(Value::as_sequence_mut) else {
            continue;
        };
        for rule in rules.iter_mut().filter_map(Value::as_mapping_mut) {
            if rule.contains_key("for") {
                rule.insert("for".into(), for_.into());
            }
        }
    }
    Ok(serde_yaml::to_string(&doc)?)
}

/// One alert of `/api/v1/alerts`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct Alert {
    /// Its labels, `alertname` among them.
    pub labels: BTreeMap<String, String>,
    /// `pending` or `firing`.
    pub state: String,
}

impl Alert {
    /// A label's value, empty when it has none.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// The alerts of a `/api/v1/alerts` answer.
pub fn parse_alerts(body: &str) -> Result<Vec<Alert>> {
    #[derive(serde::Deserialize)]
    struct Data {
        /// vmalert answers `null` when no alert is active.
        alerts: Option<Vec<Alert>>,
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        status: String,
        data: Data,
    }
    let answer: Answer = serde_json::from_str(body)?;
    if answer.status != "success" {
        bail!("alerts: status {}", answer.status);
    }
    Ok(answer.data.alerts.unwrap_or_default())
}

/// The single number of an instant query's answer (`count(...)` and the
/// like); `None` when the vector is empty.
pub fn parse_scalar(body: &str) -> Result<Option<f64>> {
    let answer: serde_json::Value = serde_json::from_str(body)?;
    if answer["status"] != "success" {
        bail!("query: {answer}");
    }
    let Some(first) = answer["data"]["result"].as_array().and_then(|r| r.first()) else {
        return Ok(None);
    };
    let value = first["value"][1].as_str().context("sample value")?;
    Ok(Some(value.parse()?))
}

/// The values of `label` over the series of an instant query's answer.
pub fn parse_label_values(body: &str, label: &str) -> Result<BTreeSet<String>> {
    let answer: serde_json::Value = serde_json::from_str(body)?;
    if answer["status"] != "success" {
        bail!("query: {answer}");
    }
    Ok(answer["data"]["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|series| series["metric"][label].as_str().map(str::to_string))
        .collect())
}

/// A Prometheus server (Debian's `prometheus`) on a loopback port, with its
/// configuration and data in a directory of its own. Dropping it kills the
/// process by its pid and removes the directory.
pub struct Prometheus {
    child: Child,
    dir: PathBuf,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Prometheus {
    /// Starts Prometheus with `config` (`rule_files` and storage are filled
    /// in) and `rules`, and waits until it is ready.
    pub async fn start(mut config: Value, rules: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "kc-prometheus-{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .as_nanos()
        ));
        std::fs::create_dir_all(dir.join("data"))?;
        std::fs::write(dir.join("rules.yaml"), rules)?;
        config["rule_files"] = yaml(&format!("['{}']", dir.join("rules.yaml").display()))?;
        std::fs::write(dir.join("prometheus.yml"), serde_yaml::to_string(&config)?)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let log = std::fs::File::create(dir.join("prometheus.log"))?;
        let spawned = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                bail!(
                    "prometheus: {e}: install Debian's package prometheus (tests/prometheus.sh does)"
                );
            }
        };
        let prometheus = Prometheus {
            child,
            dir,
            url: format!("http://127.0.0.1:{port}"),
        };
        crate::wait_for(Duration::from_secs(60), "Prometheus ready", || async {
            Ok(prometheus.get("/-/ready", &[]).is_ok())
        })
        .await?;
        Ok(prometheus)
    }

    /// GET of `path` with URL-encoded query parameters; the body.
    pub fn get(&self, path: &str, params: &[(&str, &str)]) -> Result<String> {
        http_get(&self.url, path, params)
    }

    /// The value of an instant query that yields one number.
    pub fn scalar(&self, query: &str) -> Result<Option<f64>> {
        parse_scalar(&self.get("/api/v1/query", &[("query", query)])?)
    }

    /// The values of `label` over the series an instant query yields.
    pub fn label_values(&self, query: &str, label: &str) -> Result<BTreeSet<String>> {
        parse_label_values(&self.get("/api/v1/query", &[("query", query)])?, label)
    }

    /// The pending and firing alerts.
    pub fn alerts(&self) -> Result<Vec<Alert>> {
        parse_alerts(&self.get("/api/v1/alerts", &[])?)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Shown with the test's output when it fails.
        let log = std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        eprintln!(
            "last lines of the Prometheus log:\n{}",
            lines[lines.len().saturating_sub(15)..].join("\n")
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;

/// GET of `base` + `path` with URL-encoded query parameters (curl, 5 s at
/// most); the body.
pub fn http_get(base: &str, path: &str, params: &[(&str, &str)]) -> Result<String> {
    let mut curl = Command::new("curl");
    curl.args(["-sSfG", "--max-time", "5"]);
    for (key, value) in params {
        curl.arg("--data-urlencode").arg(format!("{key}={value}"));
    }
    let out = curl.arg(format!("{base}{path}")).output()?;
    if !out.status.success() {
        bail!(
            "GET {base}{path}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}
