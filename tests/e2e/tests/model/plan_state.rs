//! What the user has made in the namespace of one sequence of the
//! model-based test (docs/testing.md, "Model-based test"), the names the
//! next actions may use, and the `Ready` reasons each Debugger may show.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Action, Categories, Nodes, Ref, Spec, CONFIG_MAP_NOT_FOUND, INVALID_SPEC, MAX_NAME,
    NO_NODES_SELECTED, PINGER_NOT_FOUND, PINGER_NOT_READY, ROLLING_OUT, SCRIPT_KEY,
    WORKLOAD_NOT_READY, WORKLOAD_READY,
};

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
            Action::DeleteConfigMap { name } | Action::DeleteScriptsOf { name, .. } => {
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
            Action::CreateSharingDebuggers {
                first,
                second,
                spec,
            } => {
                for name in [first, second] {
                    self.apply(&Action::CreateDebugger {
                        name: name.clone(),
                        spec: spec.clone(),
                    });
                }
            }
            Action::DeleteDebugger { name } => {
                if let Some(gone) = self.debuggers.remove(name) {
                    // Its summary goes with the garbage collector, at its
                    // pace: the others naming it may wait for it.
                    let summary = gone.spec.summary_name(name);
                    for (d, m) in &mut self.debuggers {
                        if m.spec.summary_name(d) == summary {
                            m.summary_unsure = true;
                        }
                    }
                }
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
    /// pods of a Ready DaemonSet); `PingerNotReady` instead when its
    /// Pinger has an invalid target.
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
        // Another Debugger naming the same summary: whichever made it
        // first runs, the other is InvalidSpec.
        let shared = self
            .debuggers
            .iter()
            .any(|(o, m)| o != name && m.spec.summary_name(o) == summary);
        let unsure = d.summary_unsure || shared;
        let mut problems = BTreeSet::new();
        if self.configmaps.contains_key(&summary) || unsure {
            problems.insert(INVALID_SPEC);
        }
        let mut pinger_not_ready = false;
        if let Ref::Named(p) = &spec.pinger {
            match self.pingers.get(p) {
                None => {
                    problems.insert(PINGER_NOT_FOUND);
                }
                Some(bad_dns) => pinger_not_ready = bad_dns.is_some(),
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
        if problems.is_empty() || (unsure && problems.len() == 1) {
            // With the user's summary ConfigMap deleted, the operator may
            // not have looked again: InvalidSpec, or what follows. A
            // Pinger with an invalid target leaves its Debugger running,
            // Ready=False PingerNotReady whatever its pods.
            if pinger_not_ready {
                problems.insert(PINGER_NOT_READY);
            } else {
                problems.extend([WORKLOAD_READY, WORKLOAD_NOT_READY, ROLLING_OUT]);
            }
        }
        problems
    }

    /// Whether the model expects Debugger `name` to be reconciled into
    /// its workload: no problem at all.
    pub fn runs(&self, name: &str) -> bool {
        let expected = self.expected(name);
        expected == BTreeSet::from([WORKLOAD_READY, WORKLOAD_NOT_READY, ROLLING_OUT])
            || expected == BTreeSet::from([PINGER_NOT_READY])
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
        let mut names = self.named_but_not_made(|s| &s.scripts, &self.cm_taken);
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
        let mut names = self.named_but_not_made(|s| &s.pinger, &self.pinger_taken);
        names.push(self.fresh("p"));
        names
    }

    /// The names a Debugger's reference `field` gives that are not in
    /// `taken`, one per Debugger that names one.
    fn named_but_not_made(
        &self,
        field: impl Fn(&Spec) -> &Ref,
        taken: &BTreeSet<String>,
    ) -> Vec<String> {
        self.debuggers
            .values()
            .filter_map(|d| match field(&d.spec) {
                Ref::Named(n) if !taken.contains(n) => Some(n.clone()),
                _ => None,
            })
            .collect()
    }

    /// The name of the next Debugger: `d<n>`.
    pub fn next_debugger(&mut self) -> String {
        self.next_debugger += 1;
        format!("d{}", self.next_debugger)
    }
}
