//! The marks the operator keeps on nodes, read from a Node, and what one
//! Debugger asks of its nodes: the vocabulary the node watch, the marks'
//! decisions and the finalizer share.

use combo_api::keys::{node_mark_name, NODE_MARK_PREFIX};
use combo_api::{Category, Debugger};
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use kube::ResourceExt;

/// The operator's marks on one node: its conditions and taints whose
/// names start with `kubecombo.io/`, of every Debugger.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeMarks {
    /// Conditions, in the node's order.
    pub conditions: Vec<NodeCondition>,
    /// Taints, in the node's order.
    pub taints: Vec<Taint>,
}

impl NodeMarks {
    /// The marks `node` carries; nothing else of it is kept.
    pub fn of(node: &Node) -> NodeMarks {
        let ours = |name: &str| name.starts_with(NODE_MARK_PREFIX);
        NodeMarks {
            conditions: node
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .filter(|c| ours(&c.type_))
                .cloned()
                .collect(),
            taints: node
                .spec
                .iter()
                .flat_map(|s| s.taints.iter().flatten())
                .filter(|t| ours(&t.key))
                .cloned()
                .collect(),
        }
    }

    /// Whether the node carries no mark at all.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.taints.is_empty()
    }

    /// The condition of type `name`.
    pub fn condition(&self, name: &str) -> Option<&NodeCondition> {
        self.conditions.iter().find(|c| c.type_ == name)
    }

    /// Whether a taint with key `name` is on the node.
    pub fn tainted(&self, name: &str) -> bool {
        self.taints.iter().any(|t| t.key == name)
    }
}

/// What one Debugger asks of its nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    /// The condition type and taint key of each category, all five.
    pub names: Vec<(Category, String)>,
    /// Set conditions (`nodeConditions`).
    pub conditions: bool,
    /// The categories that run.
    pub categories: Vec<Category>,
    /// The categories that taint, when the operator may taint.
    pub taints: Vec<Category>,
    /// Whether the operator may write taints (not `--no-taints`).
    pub taints_writable: bool,
    /// `taints` lists categories but the operator may not taint.
    pub taints_disabled: bool,
    /// `maxTaintedPercent`.
    pub max_tainted_percent: u32,
    /// `failureThreshold`: consecutive failed runs that make a category
    /// failing.
    pub failure_threshold: u32,
    /// `successThreshold`: consecutive healthy runs that clear a failing
    /// category.
    pub success_threshold: u32,
}

impl Wanted {
    /// What `dbg` asks for; `taints_allowed` is false under `--no-taints`.
    pub fn of(dbg: &Debugger, taints_allowed: bool) -> Wanted {
        let spec = &dbg.spec;
        let ns = dbg.namespace().unwrap_or_default();
        let name = dbg.name_any();
        Wanted {
            names: Category::all()
                .into_iter()
                .map(|c| (c, node_mark_name(&ns, &name, c)))
                .collect(),
            conditions: spec.node_conditions,
            categories: spec.categories.clone(),
            taints: if taints_allowed {
                spec.taints.clone()
            } else {
                Vec::new()
            },
            taints_writable: taints_allowed,
            taints_disabled: !taints_allowed && !spec.taints.is_empty(),
            max_tainted_percent: spec.max_tainted_percent,
            failure_threshold: spec.failure_threshold,
            success_threshold: spec.success_threshold,
        }
    }

    /// Nothing: every mark of `dbg` goes (it is deleted).
    pub fn nothing(dbg: &Debugger, taints_allowed: bool) -> Wanted {
        Wanted {
            conditions: false,
            taints: Vec::new(),
            taints_disabled: false,
            ..Wanted::of(dbg, taints_allowed)
        }
    }

    /// Whether marks may be on nodes because of this: the finalizer stays
    /// while this holds.
    pub fn any(&self) -> bool {
        self.conditions || !self.taints.is_empty()
    }

    /// Whether `marks` hold a condition or taint of this Debugger.
    pub fn owns(&self, marks: &NodeMarks) -> bool {
        self.names
            .iter()
            .any(|(_, n)| marks.condition(n).is_some() || marks.tainted(n))
    }

    /// The name of `category`.
    pub fn name(&self, category: Category) -> &str {
        self.names
            .iter()
            .find(|(c, _)| *c == category)
            .map(|(_, n)| n.as_str())
            .expect("every category has a name")
    }
}
