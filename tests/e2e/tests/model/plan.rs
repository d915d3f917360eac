//! The model of the model-based test
//! (docs/testing.md, "Model-based test"): what a user has made in one
//! namespace, the actions a user may take next, and the `Ready` reason each
//! Debugger should end up with. This file holds the actions and the specs
//! they write; `plan_state.rs` what the user has made and what follows.
//! Pure: no cluster, so its own tests need none.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};

#[path = "plan_state.rs"]
mod state;

pub use state::Model;

/// Names a Debugger may give its summary ConfigMap or its scripts
/// ConfigMap; also a Pinger reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ref {
    /// Not enabled.
    Off,
    /// Enabled, naming this object.
    Named(String),
    /// Enabled without a name: a spec conflict.
    Unnamed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    DaemonSet,
    Pod,
}

/// Which nodes the selector matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nodes {
    All,
    /// `node-<n>`.
    One(usize),
    /// No node has the selector's label.
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Categories {
    /// Left out: every category.
    Default,
    Only(&'static str),
    /// `categories: []`.
    Empty,
}

/// The part of a Debugger's spec the model varies; everything else keeps
/// its default (`runAt` empty: no run, so the pods stay idle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub workload: Workload,
    pub nodes: Nodes,
    pub scripts: Ref,
    pub pinger: Ref,
    pub categories: Categories,
    /// `summaryConfigMap`; `None` is the default `<debugger>-summary`.
    pub summary: Option<String>,
}

/// One field of a Debugger changed by an edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Workload(Workload),
    Nodes(Nodes),
    Scripts(Ref),
    Pinger(Ref),
    Categories(Categories),
    Summary(Option<String>),
}

/// A user's action. ConfigMaps are the user's own data (scripts or
/// notes); the test never expects the operator to touch them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    CreateConfigMap {
        name: String,
        data: BTreeMap<String, String>,
    },
    EditConfigMap {
        name: String,
        data: BTreeMap<String, String>,
    },
    DeleteConfigMap {
        name: String,
    },
    /// A Pinger; `bad_dns` is an IP address in `dns`, which the operator
    /// must report as `InvalidSpec` naming it.
    CreatePinger {
        name: String,
        bad_dns: Option<String>,
    },
    EditPinger {
        name: String,
        bad_dns: Option<String>,
    },
    DeletePinger {
        name: String,
    },
    CreateDebugger {
        name: String,
        spec: Spec,
    },
    EditDebugger {
        name: String,
        change: Change,
    },
    DeleteDebugger {
        name: String,
    },
    /// Two Debuggers of one spec naming one `summaryConfigMap`, created
    /// together: one of them gets the summary, the other `InvalidSpec`
    /// and no workload, and takes the name once it is free.
    CreateSharingDebuggers {
        first: String,
        second: String,
        spec: Spec,
    },
    /// Deletes the scripts ConfigMap Debugger `debugger` uses: it turns
    /// `ConfigMapNotFound`, its summary still agreeing with its status.
    DeleteScriptsOf {
        debugger: String,
        name: String,
    },
    /// Deletes the operator's pod; its Deployment makes a new one.
    RestartOperator,
}

/// The Kubernetes limit on a label value: the Debugger's name is one.
pub const MAX_NAME: usize = 63;

/// The selector label of [`Nodes::None`].
pub const NO_NODE_LABEL: &str = "kubecombo.io/model-test";

/// The reasons of a Debugger's `Ready` condition (docs/operator.md).
pub const INVALID_SPEC: &str = "InvalidSpec";
pub const PINGER_NOT_FOUND: &str = "PingerNotFound";
pub const PINGER_NOT_READY: &str = "PingerNotReady";
pub const CONFIG_MAP_NOT_FOUND: &str = "ConfigMapNotFound";
pub const NO_NODES_SELECTED: &str = "NoNodesSelected";
pub const WORKLOAD_READY: &str = "WorkloadReady";
pub const WORKLOAD_NOT_READY: &str = "WorkloadNotReady";
pub const ROLLING_OUT: &str = "RollingOut";

impl Spec {
    /// The spec as the user writes it.
    pub fn json(&self) -> Value {
        let mut spec = json!({"workloadType": match self.workload {
            Workload::DaemonSet => "daemonset",
            Workload::Pod => "pod",
        }});
        let fields = [
            Change::Nodes(self.nodes),
            Change::Scripts(self.scripts.clone()),
            Change::Pinger(self.pinger.clone()),
            Change::Categories(self.categories),
            Change::Summary(self.summary.clone()),
        ];
        for change in fields {
            for (k, v) in change.patch().as_object().into_iter().flatten() {
                if !v.is_null() {
                    spec[k] = v.clone();
                }
            }
        }
        // A merge patch removes a key with null; a new selector is a map.
        if let Some(sel) = spec["selector"].as_object_mut() {
            sel.retain(|_, v| !v.is_null());
        }
        spec
    }

    fn apply(&mut self, change: &Change) {
        match change.clone() {
            Change::Workload(w) => self.workload = w,
            Change::Nodes(n) => self.nodes = n,
            Change::Scripts(r) => self.scripts = r,
            Change::Pinger(r) => self.pinger = r,
            Change::Categories(c) => self.categories = c,
            Change::Summary(s) => self.summary = s,
        }
    }

    /// The summary ConfigMap's name for Debugger `name`.
    pub fn summary_name(&self, name: &str) -> String {
        self.summary
            .clone()
            .unwrap_or_else(|| format!("{name}-summary"))
    }
}

impl Change {
    /// The JSON merge patch of `spec` that makes this change.
    pub fn patch(&self) -> Value {
        let named = |r: &Ref| match r {
            Ref::Off => (false, String::new()),
            Ref::Named(n) => (true, n.clone()),
            Ref::Unnamed => (true, String::new()),
        };
        match self {
            Change::Workload(Workload::DaemonSet) => json!({"workloadType": "daemonset"}),
            Change::Workload(Workload::Pod) => json!({"workloadType": "pod"}),
            // Both keys named, so that a merge patch replaces the old one.
            Change::Nodes(n) => json!({"selector": match n {
                Nodes::All => json!({"kubernetes.io/hostname": null, NO_NODE_LABEL: null}),
                Nodes::One(i) => json!({"kubernetes.io/hostname": format!("node-{i}"), NO_NODE_LABEL: null}),
                Nodes::None => json!({"kubernetes.io/hostname": null, NO_NODE_LABEL: "none"}),
            }}),
            Change::Scripts(r) => {
                let (on, name) = named(r);
                json!({"enableConfigMap": on, "configMap": name})
            }
            Change::Pinger(r) => {
                let (on, name) = named(r);
                json!({"enablePinger": on, "pinger": name})
            }
            Change::Categories(Categories::Default) => json!({"categories": null}),
            Change::Categories(Categories::Only(c)) => json!({"categories": [c]}),
            Change::Categories(Categories::Empty) => json!({"categories": []}),
            Change::Summary(s) => json!({"summaryConfigMap": s.clone().unwrap_or_default()}),
        }
    }
}

/// The spec of a Pinger the test makes: loopback only, no peers, slow.
pub fn pinger_json(bad_dns: Option<&str>) -> Value {
    json!({
        "ping": ["127.0.0.1"],
        "peers": false,
        "intervalSeconds": 10,
        "dns": bad_dns.map(|d| vec![d]).unwrap_or_default(),
    })
}

/// The key of a scripts ConfigMap's one script.
pub const SCRIPT_KEY: &str = "hello.sh";

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ref::Off => f.write_str("off"),
            Ref::Named(n) => f.write_str(n),
            Ref::Unnamed => f.write_str("enabled without a name"),
        }
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.json())
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CreateConfigMap { name, data } => {
                write!(f, "create ConfigMap {name} {data:?}")
            }
            Action::EditConfigMap { name, data } => write!(f, "edit ConfigMap {name} to {data:?}"),
            Action::DeleteConfigMap { name } => write!(f, "delete ConfigMap {name}"),
            Action::CreatePinger { name, bad_dns } => {
                write!(
                    f,
                    "create Pinger {name} {}",
                    pinger_json(bad_dns.as_deref())
                )
            }
            Action::EditPinger { name, bad_dns } => {
                write!(
                    f,
                    "edit Pinger {name} to {}",
                    pinger_json(bad_dns.as_deref())
                )
            }
            Action::DeletePinger { name } => write!(f, "delete Pinger {name}"),
            Action::CreateDebugger { name, spec } => write!(f, "create Debugger {name} {spec}"),
            Action::EditDebugger { name, change } => {
                write!(f, "edit Debugger {name}: merge patch {}", change.patch())
            }
            Action::DeleteDebugger { name } => write!(f, "delete Debugger {name}"),
            Action::CreateSharingDebuggers {
                first,
                second,
                spec,
            } => write!(
                f,
                "create Debuggers {first} and {second} together, both {spec}"
            ),
            Action::DeleteScriptsOf { debugger, name } => {
                write!(
                    f,
                    "delete ConfigMap {name}, the scripts of Debugger {debugger}"
                )
            }
            Action::RestartOperator => f.write_str("delete the operator's pod (a restart)"),
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
