//! Debuggers and Pingers for the operator's tests and benches, as the API
//! server hands them out: named, in a namespace, with a uid (`uid-<name>`)
//! and generation 1. A test starts from [`debugger`] or [`pinger`] and
//! sets only the fields it is about, e.g.
//! `debugger("ops", "node-check").workload_type(WorkloadType::Pod).build()`;
//! every other field keeps the CRD's default.

use combo_api::{Category, Debugger, DebuggerSpec, Pinger, PingerSpec, WorkloadType};
use k8s_openapi::api::core::v1::{Affinity, LocalObjectReference, Toleration};
use kube::api::ObjectMeta;

/// Metadata of an object the API server stored once: `namespace`, `name`,
/// uid `uid-<name>`, generation 1.
fn stored(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        uid: Some(format!("uid-{name}")),
        generation: Some(1),
        ..ObjectMeta::default()
    }
}

/// Debugger `name` of `namespace` with the CRD's default spec; see
/// [`DebuggerBuilder`] for what a test can change.
pub fn debugger(namespace: &str, name: &str) -> DebuggerBuilder {
    DebuggerBuilder(Debugger {
        metadata: stored(namespace, name),
        spec: DebuggerSpec::default(),
        status: None,
    })
}

/// Pinger `name` of `namespace` with the CRD's default spec; see
/// [`PingerBuilder`] for what a test can change.
pub fn pinger(namespace: &str, name: &str) -> PingerBuilder {
    PingerBuilder(Pinger {
        metadata: stored(namespace, name),
        spec: PingerSpec::default(),
        status: None,
    })
}

/// The setters of the object's metadata: uid and generation.
macro_rules! metadata_setters {
    () => {
        /// Another uid than `uid-<name>`.
        pub fn uid(mut self, uid: &str) -> Self {
            self.0.metadata.uid = Some(uid.into());
            self
        }

        /// No uid, as an object never stored.
        pub fn without_uid(mut self) -> Self {
            self.0.metadata.uid = None;
            self
        }

        /// Another `metadata.generation` than 1.
        pub fn generation(mut self, generation: i64) -> Self {
            self.0.metadata.generation = Some(generation);
            self
        }
    };
}

/// Sets one field of the object's spec, named as in the Rust struct.
macro_rules! setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty => |$v:ident| $value:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $field(mut self, $v: $ty) -> Self {
                self.0.spec.$field = $value;
                self
            }
        )*
    };
}

/// A [`Debugger`] under construction, from [`debugger`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct DebuggerBuilder(Debugger);

impl DebuggerBuilder {
    metadata_setters!();

    /// Follow Pinger `name`: `enablePinger` on and `pinger: name`.
    pub fn pinger(mut self, name: &str) -> Self {
        self.0.spec.enable_pinger = true;
        self.0.spec.pinger = name.into();
        self
    }

    /// Mount ConfigMap `name`: `enableConfigMap` on and `configMap: name`.
    pub fn config_map(mut self, name: &str) -> Self {
        self.0.spec.enable_config_map = true;
        self.0.spec.config_map = name.into();
        self
    }

    /// One more of `checkSettings`.
    pub fn check_setting(mut self, name: &str, value: &str) -> Self {
        self.0.spec.check_settings.insert(name.into(), value.into());
        self
    }

    /// One more label of `selector`.
    pub fn selector(mut self, key: &str, value: &str) -> Self {
        self.0.spec.selector.insert(key.into(), value.into());
        self
    }

    /// Any change the typed setters do not make.
    pub fn spec_with(mut self, change: impl FnOnce(&mut DebuggerSpec)) -> Self {
        change(&mut self.0.spec);
        self
    }

    setters! {
        /// `workloadType`.
        workload_type: WorkloadType => |v| v;
        /// `image`.
        image: &str => |v| v.into();
        /// `imagePullSecrets`, by name.
        image_pull_secrets: &[&str] => |v| v
            .iter()
            .map(|name| LocalObjectReference { name: (*name).into() })
            .collect();
        /// `cpu`.
        cpu: &str => |v| v.into();
        /// `memory`.
        memory: &str => |v| v.into();
        /// `qosBandwidth`.
        qos_bandwidth: &str => |v| v.into();
        /// `subnet`.
        subnet: &str => |v| v.into();
        /// `hostNetwork`.
        host_network: bool => |v| v;
        /// `tolerations`.
        tolerations: Vec<Toleration> => |v| v;
        /// `affinity`.
        affinity: Affinity => |v| Some(v);
        /// `nodeName`.
        node_name: &str => |v| v.into();
        /// `enablePinger` alone; [`Self::pinger`] sets it with the name.
        enable_pinger: bool => |v| v;
        /// `enableConfigMap` alone; [`Self::config_map`] sets it with the name.
        enable_config_map: bool => |v| v;
        /// `enableSys`.
        enable_sys: bool => |v| v;
        /// `runAt`.
        run_at: &str => |v| v.into();
        /// `categories`.
        categories: &[Category] => |v| v.to_vec();
        /// `scriptTimeoutSeconds`.
        script_timeout_seconds: u32 => |v| v;
        /// `errlogRetention`.
        errlog_retention: u32 => |v| v;
        /// `summaryConfigMap`.
        summary_config_map: &str => |v| v.into();
        /// `nodeConditions`.
        node_conditions: bool => |v| v;
        /// `taints`.
        taints: &[Category] => |v| v.to_vec();
        /// `maxTaintedPercent`.
        max_tainted_percent: u32 => |v| v;
    }

    /// The Debugger.
    pub fn build(self) -> Debugger {
        self.0
    }
}

/// A [`Pinger`] under construction, from [`pinger`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct PingerBuilder(Pinger);

/// `names` as owned strings.
fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_string()).collect()
}

impl PingerBuilder {
    metadata_setters!();

    /// Any change the typed setters do not make.
    pub fn spec_with(mut self, change: impl FnOnce(&mut PingerSpec)) -> Self {
        change(&mut self.0.spec);
        self
    }

    setters! {
        /// `image`.
        image: &str => |v| v.into();
        /// `enableMetrics`.
        enable_metrics: bool => |v| v;
        /// `metricsPort`.
        metrics_port: u16 => |v| v;
        /// `intervalSeconds`.
        interval_seconds: u32 => |v| v;
        /// `timeoutMs`.
        timeout_ms: u32 => |v| v;
        /// `count`.
        count: u32 => |v| v;
        /// `ping` targets.
        ping: &[&str] => |v| strings(v);
        /// `tcpPing` targets.
        tcp_ping: &[&str] => |v| strings(v);
        /// `udpPing` targets.
        udp_ping: &[&str] => |v| strings(v);
        /// `dns` names.
        dns: &[&str] => |v| strings(v);
        /// `dnsServers`.
        dns_servers: &[&str] => |v| strings(v);
        /// `peers`.
        peers: bool => |v| v;
        /// `maxPeers`.
        max_peers: u32 => |v| v;
        /// `minProbers`.
        min_probers: u32 => |v| v;
        /// `gateway`.
        gateway: bool => |v| v;
        /// `maxLossPercent`.
        max_loss_percent: u32 => |v| v;
        /// `maxLatencyMs`.
        max_latency_ms: u32 => |v| v;
    }

    /// The Pinger.
    pub fn build(self) -> Pinger {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debugger_is_stored_with_a_uid_and_the_crd_defaults() {
        let d = debugger("ops", "a").build();
        assert_eq!(d.metadata.namespace.as_deref(), Some("ops"));
        assert_eq!(d.metadata.name.as_deref(), Some("a"));
        assert_eq!(d.metadata.uid.as_deref(), Some("uid-a"));
        assert_eq!(d.metadata.generation, Some(1));
        assert_eq!(d.spec, DebuggerSpec::default());
        assert_eq!(d.status, None);
    }

    #[test]
    fn a_debugger_setter_changes_its_field_only() {
        let d = debugger("ops", "a")
            .pinger("mesh")
            .taints(&[Category::Disk])
            .build();
        let expected = DebuggerSpec {
            enable_pinger: true,
            pinger: "mesh".into(),
            taints: vec![Category::Disk],
            ..DebuggerSpec::default()
        };
        assert_eq!(d.spec, expected);
    }

    #[test]
    fn a_pinger_is_stored_with_a_uid_and_the_crd_defaults() {
        let p = pinger("ops", "mesh").ping(&["10.0.0.1"]).build();
        assert_eq!(p.metadata.uid.as_deref(), Some("uid-mesh"));
        assert_eq!(p.metadata.generation, Some(1));
        let expected = PingerSpec {
            ping: vec!["10.0.0.1".into()],
            ..PingerSpec::default()
        };
        assert_eq!(p.spec, expected);
    }
}
