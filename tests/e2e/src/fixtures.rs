//! Typed builders of the tests' objects: Debuggers, Pingers and script
//! ConfigMaps, as `combo_api` values, applied through `kubectl` as YAML
//! ([`crate::apply_yaml`]).
//!
//! A builder starts from the spec an empty manifest gives (every field at
//! the default the operator reads it with), so a test names only what it
//! sets, as its manifest did.

use std::collections::BTreeMap;

use combo_api::{Category, Debugger, DebuggerSpec, Pinger, PingerSpec, WorkloadType};
use k8s_openapi::api::core::v1::{ConfigMap, Toleration};
use kube::api::ObjectMeta;
use serde::Serialize;

/// `value` as one YAML document.
pub fn to_yaml(value: &impl Serialize) -> String {
    serde_yaml::to_string(value).expect("a test object serializes")
}

/// Manifests as one multi-document YAML text.
pub fn documents(manifests: &[String]) -> String {
    manifests.join("---\n")
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|i| i.to_string()).collect()
}

/// A Debugger named `name`.
#[derive(Clone, Debug)]
pub struct DebuggerBuilder {
    name: String,
    spec: DebuggerSpec,
}

impl DebuggerBuilder {
    /// A Debugger with the spec of an empty manifest.
    pub fn new(name: &str) -> Self {
        let spec = serde_json::from_value(serde_json::json!({})).expect("an empty spec is valid");
        Self {
            name: name.to_string(),
            spec,
        }
    }

    /// Its workload: a DaemonSet (the default) or one Pod.
    pub fn workload(mut self, workload: WorkloadType) -> Self {
        self.spec.workload_type = workload;
        self
    }

    /// Runs the scripts of ConfigMap `name` too (`enableConfigMap`).
    pub fn scripts(mut self, name: &str) -> Self {
        self.spec.enable_config_map = true;
        self.spec.config_map = name.to_string();
        self
    }

    /// The categories it runs.
    pub fn categories(mut self, categories: &[Category]) -> Self {
        self.spec.categories = categories.to_vec();
        self
    }

    /// Its `runAt`: empty (idle), a cron expression or an RFC 3339 time.
    pub fn run_at(mut self, run_at: &str) -> Self {
        self.spec.run_at = run_at.to_string();
        self
    }

    /// `scriptTimeoutSeconds`.
    pub fn script_timeout(mut self, seconds: u32) -> Self {
        self.spec.script_timeout_seconds = seconds;
        self
    }

    /// `errlogRetention`.
    pub fn errlog_retention(mut self, runs: u32) -> Self {
        self.spec.errlog_retention = runs;
        self
    }

    /// The runner's CPU (`cpu`).
    pub fn cpu(mut self, cpu: &str) -> Self {
        self.spec.cpu = cpu.to_string();
        self
    }

    /// The runner's memory (`memory`).
    pub fn memory(mut self, memory: &str) -> Self {
        self.spec.memory = memory.to_string();
        self
    }

    /// The runner pods' `subnet`.
    pub fn subnet(mut self, subnet: &str) -> Self {
        self.spec.subnet = subnet.to_string();
        self
    }

    /// Runs on node `name` only (`nodeName`).
    pub fn node_name(mut self, name: &str) -> Self {
        self.spec.node_name = name.to_string();
        self
    }

    /// The runner image (`image`), instead of the operator's.
    pub fn image(mut self, image: &str) -> Self {
        self.spec.image = image.to_string();
        self
    }

    /// Pulls the images with the credentials of these Secrets
    /// (`imagePullSecrets`).
    pub fn image_pull_secrets(mut self, names: &[&str]) -> Self {
        self.spec.image_pull_secrets = names
            .iter()
            .map(|n| k8s_openapi::api::core::v1::LocalObjectReference {
                name: n.to_string(),
            })
            .collect();
        self
    }

    /// `enableSys`.
    pub fn enable_sys(mut self, on: bool) -> Self {
        self.spec.enable_sys = on;
        self
    }

    /// Runs Pinger `name` beside the runner (`enablePinger`).
    pub fn pinger(mut self, name: &str) -> Self {
        self.spec.enable_pinger = true;
        self.spec.pinger = name.to_string();
        self
    }

    /// The summary ConfigMap it writes (`summaryConfigMap`).
    pub fn summary(mut self, name: &str) -> Self {
        self.spec.summary_config_map = name.to_string();
        self
    }

    /// Tolerates every taint (`tolerations: [{operator: Exists}]`).
    pub fn tolerate_all(mut self) -> Self {
        self.spec.tolerations.push(Toleration {
            operator: Some("Exists".to_string()),
            ..Toleration::default()
        });
        self
    }

    /// Sets a condition per category on its nodes (`nodeConditions`).
    pub fn node_conditions(mut self, on: bool) -> Self {
        self.spec.node_conditions = on;
        self
    }

    /// Taints nodes failing `categories` (`taints`), at most `percent` of
    /// its nodes (`maxTaintedPercent`).
    pub fn taints(mut self, categories: &[Category], percent: u32) -> Self {
        self.spec.taints = categories.to_vec();
        self.spec.max_tainted_percent = percent;
        self
    }

    /// Consecutive failed runs before a node condition or taint
    /// (`failureThreshold`).
    pub fn failure_threshold(mut self, runs: u32) -> Self {
        self.spec.failure_threshold = runs;
        self
    }

    /// Consecutive healthy runs before a failing node's marks clear
    /// (`successThreshold`).
    pub fn success_threshold(mut self, runs: u32) -> Self {
        self.spec.success_threshold = runs;
        self
    }

    /// Sets the default checks' variable `name` to `value` (`checkSettings`).
    pub fn check_setting(mut self, name: &str, value: &str) -> Self {
        self.spec
            .check_settings
            .insert(name.to_string(), value.to_string());
        self
    }

    /// Selects nodes labelled `key=value`.
    pub fn selector(mut self, key: &str, value: &str) -> Self {
        self.spec
            .selector
            .insert(key.to_string(), value.to_string());
        self
    }

    /// The Debugger.
    pub fn build(&self) -> Debugger {
        Debugger::new(&self.name, self.spec.clone())
    }

    /// The Debugger as a manifest.
    pub fn yaml(&self) -> String {
        to_yaml(&self.build())
    }
}

/// A Pinger named `name`.
#[derive(Clone, Debug)]
pub struct PingerBuilder {
    name: String,
    spec: PingerSpec,
}

impl PingerBuilder {
    /// A Pinger with the spec of an empty manifest.
    pub fn new(name: &str) -> Self {
        let spec = serde_json::from_value(serde_json::json!({})).expect("an empty spec is valid");
        Self {
            name: name.to_string(),
            spec,
        }
    }

    /// The pinger's image (`image`).
    pub fn image(mut self, image: &str) -> Self {
        self.spec.image = image.to_string();
        self
    }

    /// Serves `/metrics` (`enableMetrics`) on `port`.
    pub fn metrics(self, port: u16) -> Self {
        self.enable_metrics(true).metrics_port(port)
    }

    /// `enableMetrics`.
    pub fn enable_metrics(mut self, on: bool) -> Self {
        self.spec.enable_metrics = on;
        self
    }

    /// `metricsPort`.
    pub fn metrics_port(mut self, port: u16) -> Self {
        self.spec.metrics_port = port;
        self
    }

    /// A round every `interval_seconds`, `count` probes per target, each
    /// waiting `timeout_ms`.
    pub fn rounds(self, interval_seconds: u32, timeout_ms: u32, count: u32) -> Self {
        self.interval(interval_seconds)
            .timeout_ms(timeout_ms)
            .count(count)
    }

    /// `intervalSeconds`.
    pub fn interval(mut self, seconds: u32) -> Self {
        self.spec.interval_seconds = seconds;
        self
    }

    /// `timeoutMs`.
    pub fn timeout_ms(mut self, ms: u32) -> Self {
        self.spec.timeout_ms = ms;
        self
    }

    /// `count`.
    pub fn count(mut self, count: u32) -> Self {
        self.spec.count = count;
        self
    }

    /// The ICMP targets (`ping`).
    pub fn ping(mut self, targets: &[&str]) -> Self {
        self.spec.ping = strings(targets);
        self
    }

    /// The TCP targets (`tcpPing`).
    pub fn tcp_ping(mut self, targets: &[&str]) -> Self {
        self.spec.tcp_ping = strings(targets);
        self
    }

    /// The names to resolve (`dns`).
    pub fn dns(mut self, names: &[&str]) -> Self {
        self.spec.dns = strings(names);
        self
    }

    /// Probes the peer pods or not (`peers`).
    pub fn peers(mut self, on: bool) -> Self {
        self.spec.peers = on;
        self
    }

    /// `maxPeers` (0: all).
    pub fn max_peers(mut self, n: u32) -> Self {
        self.spec.max_peers = n;
        self
    }

    /// `minProbers`.
    pub fn min_probers(mut self, n: u32) -> Self {
        self.spec.min_probers = n;
        self
    }

    /// Probes the node's gateway or not (`gateway`).
    pub fn gateway(mut self, on: bool) -> Self {
        self.spec.gateway = on;
        self
    }

    /// `maxLossPercent`.
    pub fn max_loss(mut self, percent: u32) -> Self {
        self.spec.max_loss_percent = percent;
        self
    }

    /// The Pinger.
    pub fn build(&self) -> Pinger {
        Pinger::new(&self.name, self.spec.clone())
    }

    /// The Pinger as a manifest.
    pub fn yaml(&self) -> String {
        to_yaml(&self.build())
    }
}

/// A ConfigMap named `name`, of scripts or other text.
#[derive(Clone, Debug)]
pub struct ConfigMapBuilder {
    name: String,
    data: BTreeMap<String, String>,
}

impl ConfigMapBuilder {
    /// An empty ConfigMap.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            data: BTreeMap::new(),
        }
    }

    /// Key `key` holding `text`.
    pub fn entry(mut self, key: &str, text: &str) -> Self {
        self.data.insert(key.to_string(), text.to_string());
        self
    }

    /// The ConfigMap.
    pub fn build(&self) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            data: Some(self.data.clone()),
            ..ConfigMap::default()
        }
    }

    /// The ConfigMap as a manifest.
    pub fn yaml(&self) -> String {
        to_yaml(&self.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize as _;

    /// `yaml` read as a `T`, as the operator reads it, back as JSON.
    fn parsed<T: serde::de::DeserializeOwned + Serialize>(yaml: &str) -> serde_json::Value {
        let object: T = serde_yaml::from_str(yaml).expect("valid manifest");
        serde_json::to_value(object).unwrap()
    }

    #[test]
    fn a_debugger_is_what_its_manifest_written_by_hand_was() {
        let built = DebuggerBuilder::new("stop")
            .scripts("slow")
            .categories(&[Category::Disk])
            .script_timeout(600)
            .pinger("probe")
            .run_at("2026-01-01T00:00:00Z")
            .tolerate_all();
        let by_hand = "apiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata:\n  name: stop\nspec:\n  enableConfigMap: true\n  configMap: slow\n  categories: [disk]\n  scriptTimeoutSeconds: 600\n  enablePinger: true\n  pinger: probe\n  runAt: \"2026-01-01T00:00:00Z\"\n  tolerations: [{operator: Exists}]\n";
        assert_eq!(
            serde_json::to_value(built.build()).unwrap(),
            parsed::<Debugger>(by_hand)
        );
        assert_eq!(
            parsed::<Debugger>(&built.yaml()),
            parsed::<Debugger>(by_hand)
        );
        assert!(!built.yaml().contains("status"), "{}", built.yaml());
    }

    #[test]
    fn a_pinger_is_what_its_manifest_written_by_hand_was() {
        let built = PingerBuilder::new("mesh")
            .metrics(9465)
            .rounds(1, 500, 3)
            .ping(&["127.0.0.1", "127.0.0.2"])
            .peers(true)
            .max_loss(0);
        let by_hand = "apiVersion: kubecombo.io/v1\nkind: Pinger\nmetadata:\n  name: mesh\nspec:\n  enableMetrics: true\n  metricsPort: 9465\n  intervalSeconds: 1\n  timeoutMs: 500\n  count: 3\n  ping: [\"127.0.0.1\", \"127.0.0.2\"]\n  peers: true\n  maxLossPercent: 0\n";
        assert_eq!(parsed::<Pinger>(&built.yaml()), parsed::<Pinger>(by_hand));
    }

    #[test]
    fn a_configmap_keeps_its_scripts_byte_for_byte() {
        let built = ConfigMapBuilder::new("scripts")
            .entry("hello.sh", "#!/bin/sh\necho \"ok hello-$CATEGORY\"\n");
        let by_hand = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scripts\ndata:\n  hello.sh: |\n    #!/bin/sh\n    echo \"ok hello-$CATEGORY\"\n";
        assert_eq!(
            parsed::<ConfigMap>(&built.yaml()),
            parsed::<ConfigMap>(by_hand)
        );
    }

    #[test]
    fn documents_are_separated() {
        let two = documents(&[
            PingerBuilder::new("a").yaml(),
            DebuggerBuilder::new("a").pinger("a").yaml(),
        ]);
        let kinds: Vec<String> = serde_yaml::Deserializer::from_str(&two)
            .map(|d| {
                let v = serde_yaml::Value::deserialize(d).unwrap();
                v["kind"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(kinds, ["Pinger", "Debugger"]);
    }
}
