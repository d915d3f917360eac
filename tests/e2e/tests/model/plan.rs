//! The model of the model-based test
//! (docs/testing.md, "Model-based test"): what a user has made in one
//! namespace, the actions a user may take next, and the `Ready` reason each
//! Debugger should end up with.
//! Pure: no cluster, so its own tests need none.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{json, Value};

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

/// A user ConfigMap: its data, and whether it holds scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserConfigMap {
    pub data: BTreeMap<String, String>,
    pub scripts: bool,
}

/// One Debugger as the model knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDebugger {
    pub spec: Spec,
    /// Its summary ConfigMap was a user's ConfigMap that the user then
    /// deleted: until the Debugger's next edit, the operator may not
    /// have looked again, so `InvalidSpec` is allowed as well.
    pub summary_unsure: bool,
}

/// What the user has made in the namespace of one sequence.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The user's ConfigMaps that exist.
    pub configmaps: BTreeMap<String, UserConfigMap>,
    /// The Pingers that exist: name -> the IP address in `dns`, if any.
    pub pingers: BTreeMap<String, Option<String>>,
    pub debuggers: BTreeMap<String, ModelDebugger>,
    /// Debuggers the user deleted.
    pub deleted: BTreeSet<String>,
    /// ConfigMap names the user made or the operator may have made (every
    /// summary name a Debugger gave): never made again by the user.
    cm_taken: BTreeSet<String>,
    pinger_taken: BTreeSet<String>,
    next_name: u32,
    next_debugger: u32,
}

impl Model {
    /// The model after `action`.
    pub fn apply(&mut self, action: &Action) {
        match action {
            Action::CreateConfigMap { name, data } | Action::EditConfigMap { name, data } => {
                self.cm_taken.insert(name.clone());
                let scripts = data.contains_key(SCRIPT_KEY);
                self.configmaps.insert(
                    name.clone(),
                    UserConfigMap {
                        data: data.clone(),
                        scripts,
                    },
                );
            }
            Action::DeleteConfigMap { name } => {
                self.configmaps.remove(name);
                for (d, m) in &mut self.debuggers {
                    if m.spec.summary_name(d) == *name {
                        m.summary_unsure = true;
                    }
                }
            }
            Action::CreatePinger { name, bad_dns } | Action::EditPinger { name, bad_dns } => {
                self.pinger_taken.insert(name.clone());
                self.pingers.insert(name.clone(), bad_dns.clone());
            }
            Action::DeletePinger { name } => {
                self.pingers.remove(name);
            }
            Action::CreateDebugger { name, spec } => {
                self.cm_taken.insert(spec.summary_name(name));
                self.debuggers.insert(
                    name.clone(),
                    ModelDebugger {
                        spec: spec.clone(),
                        summary_unsure: false,
                    },
                );
            }
            Action::EditDebugger { name, change } => {
                if let Some(m) = self.debuggers.get_mut(name) {
                    m.spec.apply(change);
                    // The edit makes the operator look at the summary again.
                    m.summary_unsure = false;
                    self.cm_taken.insert(m.spec.summary_name(name));
                }
            }
            Action::DeleteDebugger { name } => {
                self.debuggers.remove(name);
                self.deleted.insert(name.clone());
            }
            Action::RestartOperator => {}
        }
    }

    /// The `Ready` reasons Debugger `name` may show once the operator has
    /// caught up. A spec that is wrong by itself (`categories: []`, a name
    /// over 63 characters, a reference enabled without a name, its summary
    /// ConfigMap named as its scripts ConfigMap) gives `InvalidSpec` alone.
    /// Otherwise any one of the problems with what exists may be reported
    /// (which first is the operator's choice): a summary ConfigMap the
    /// user made (`InvalidSpec`), a missing Pinger or scripts ConfigMap,
    /// a selector matching no node. With none, `WorkloadReady`,
    /// `WorkloadNotReady`, or `RollingOut` (a new template replacing the
    /// pods of a Ready DaemonSet).
    pub fn expected(&self, name: &str) -> BTreeSet<&'static str> {
        let Some(d) = self.debuggers.get(name) else {
            return BTreeSet::new();
        };
        let spec = &d.spec;
        let summary = spec.summary_name(name);
        let invalid = name.len() > MAX_NAME
            || spec.categories == Categories::Empty
            || spec.scripts == Ref::Unnamed
            || spec.pinger == Ref::Unnamed
            || spec.scripts == Ref::Named(summary.clone());
        if invalid {
            return BTreeSet::from([INVALID_SPEC]);
        }
        let mut problems = BTreeSet::new();
        if self.configmaps.contains_key(&summary) || d.summary_unsure {
            problems.insert(INVALID_SPEC);
        }
        if let Ref::Named(p) = &spec.pinger {
            if !self.pingers.contains_key(p) {
                problems.insert(PINGER_NOT_FOUND);
            }
        }
        if let Ref::Named(cm) = &spec.scripts {
            if !self.configmaps.contains_key(cm) {
                problems.insert(CONFIG_MAP_NOT_FOUND);
            }
        }
        if spec.nodes == Nodes::None {
            problems.insert(NO_NODES_SELECTED);
        }
        if problems.is_empty() || (d.summary_unsure && problems.len() == 1) {
            // With the user's summary ConfigMap deleted, the operator may
            // not have looked again: InvalidSpec, or what follows.
            problems.extend([WORKLOAD_READY, WORKLOAD_NOT_READY, ROLLING_OUT]);
        }
        problems
    }

    /// Whether the model expects Debugger `name` to be reconciled into
    /// its workload: no problem at all.
    pub fn runs(&self, name: &str) -> bool {
        self.expected(name) == BTreeSet::from([WORKLOAD_READY, WORKLOAD_NOT_READY, ROLLING_OUT])
    }

    /// A name no object of the sequence has had: `<prefix>-<n>`.
    pub fn fresh(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}-{}", self.next_name)
    }

    /// ConfigMap names the user may make now: a new one, a scripts
    /// ConfigMap a Debugger names but that does not exist, or the default
    /// summary name of the next Debugger (a collision to come).
    pub fn cm_names(&mut self) -> Vec<String> {
        let mut names: Vec<String> = self
            .debuggers
            .values()
            .filter_map(|d| match &d.spec.scripts {
                Ref::Named(n) if !self.cm_taken.contains(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let next_summary = format!("d{}-summary", self.next_debugger + 1);
        if !self.cm_taken.contains(&next_summary) {
            names.push(next_summary);
        }
        names.push(self.fresh("cm"));
        names
    }

    /// Pinger names the user may make now: one a Debugger names that
    /// does not exist, or a new one.
    pub fn pinger_names(&mut self) -> Vec<String> {
        let mut names: Vec<String> = self
            .debuggers
            .values()
            .filter_map(|d| match &d.spec.pinger {
                Ref::Named(p) if !self.pinger_taken.contains(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        names.push(self.fresh("p"));
        names
    }

    /// The name of the next Debugger: `d<n>`.
    pub fn next_debugger(&mut self) -> String {
        self.next_debugger += 1;
        format!("d{}", self.next_debugger)
    }
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
            Action::RestartOperator => f.write_str("delete the operator's pod (a restart)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debugger(spec: Spec) -> Action {
        Action::CreateDebugger {
            name: "d1".into(),
            spec,
        }
    }

    fn plain() -> Spec {
        Spec {
            workload: Workload::DaemonSet,
            nodes: Nodes::One(1),
            scripts: Ref::Off,
            pinger: Ref::Off,
            categories: Categories::Default,
            summary: None,
        }
    }

    #[test]
    fn collisions_with_the_users_configmaps_are_invalid_specs() {
        let mut m = Model::default();
        let data = BTreeMap::from([("note".to_string(), "x".to_string())]);
        m.apply(&Action::CreateConfigMap {
            name: "d1-summary".into(),
            data,
        });
        m.apply(&debugger(plain()));
        assert_eq!(m.expected("d1"), BTreeSet::from([INVALID_SPEC]));
        // Deleted by the user: the operator may not have looked again.
        m.apply(&Action::DeleteConfigMap {
            name: "d1-summary".into(),
        });
        assert!(m.expected("d1").contains(INVALID_SPEC));
        assert!(m.expected("d1").contains(WORKLOAD_READY));
        m.apply(&Action::EditDebugger {
            name: "d1".into(),
            change: Change::Nodes(Nodes::None),
        });
        assert_eq!(m.expected("d1"), BTreeSet::from([NO_NODES_SELECTED]));

        let mut own = Model::default();
        own.apply(&debugger(Spec {
            scripts: Ref::Named("s".into()),
            summary: Some("s".into()),
            ..plain()
        }));
        assert_eq!(own.expected("d1"), BTreeSet::from([INVALID_SPEC]));
    }

    #[test]
    fn missing_objects_give_any_of_their_reasons() {
        let mut m = Model::default();
        m.apply(&debugger(Spec {
            scripts: Ref::Named("s".into()),
            pinger: Ref::Named("p".into()),
            ..plain()
        }));
        assert_eq!(
            m.expected("d1"),
            BTreeSet::from([PINGER_NOT_FOUND, CONFIG_MAP_NOT_FOUND])
        );
        m.apply(&Action::CreatePinger {
            name: "p".into(),
            bad_dns: Some("10.1.2.3".into()),
        });
        assert_eq!(m.expected("d1"), BTreeSet::from([CONFIG_MAP_NOT_FOUND]));
        assert!(!m.runs("d1"));
    }

    #[test]
    fn a_selector_patch_replaces_the_old_selector() {
        let spec = Spec {
            nodes: Nodes::One(2),
            ..plain()
        };
        assert_eq!(
            spec.json()["selector"],
            json!({"kubernetes.io/hostname": "node-2"})
        );
        assert_eq!(
            Change::Nodes(Nodes::None).patch()["selector"]["kubernetes.io/hostname"],
            Value::Null
        );
    }
}
