//! `kubectl combo history`: each node's verdicts of its items over its
//! last runs, from the `spec.history` its runner keeps in its
//! DebuggerReport (docs/reference.md, "`kubectl-combo`"); and the streak
//! of failed runs that `kubectl combo summary` prints beside a failed item.
//! The streaks are pure and so are the tables' rows, in [`rows`]; [`run`]
//! and [`reports`] read the cluster.

pub mod rows;

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};
use combo_api::history::{self, History, FAILED, HISTORY_RUNS};
use combo_api::{keys, DebuggerReport};
use kube::api::ListParams;
use kube::{Api, Client};
use serde::Serialize;

use crate::cli::Output;
use crate::cluster::{api_error, debugger};
use crate::errors::NotFound;
use crate::{output, table};
pub use rows::{
    item_rows, no_failure, timeline_rows, verdict_words, ITEM_HEADER, NO_HISTORY, TIMELINE_HEADER,
};

/// Reports per page of the list: a report's result stays under 32 KiB and
/// its history under 12 KB more (docs/reference.md, "DebuggerReport"), so
/// a page stays under 9 MiB, and the 5,000 reports of a 5,000-node
/// cluster take 25 requests.
pub const REPORTS_PAGE: u32 = 200;

/// Most nodes named in the label selector of [`reports`]: 20 node names of
/// up to 63 characters keep the request's URL under 2 KiB; past them the
/// list takes every report of the Debugger.
pub const MAX_SELECTED_NODES: usize = 20;

/// What one node's report says for `history`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Its history; empty when its runner keeps none.
    pub history: History,
    /// The `<category>/<item>` of each item its latest run lists.
    pub items: BTreeSet<String>,
}

/// Node -> its report, in node order.
pub type Nodes = BTreeMap<String, Reported>;

/// The nodes of `reports`, the newest run of a node kept should it have
/// two reports.
pub fn nodes_of(reports: &[DebuggerReport]) -> Nodes {
    let mut newest: BTreeMap<&str, &DebuggerReport> = BTreeMap::new();
    for r in reports {
        let kept = newest.entry(&r.spec.node).or_insert(r);
        if r.spec.run_at > kept.spec.run_at {
            *kept = r;
        }
    }
    newest
        .into_iter()
        .map(|(node, r)| {
            let items = r
                .spec
                .categories
                .iter()
                .flat_map(|(cat, items)| items.keys().map(move |i| (cat, i)))
                // `(N failed items omitted)` and its kind stand for items.
                .filter(|(_, i)| !i.starts_with('('))
                .map(|(cat, i)| history::key(cat, i))
                .collect();
            let reported = Reported {
                history: r.spec.history.clone(),
                items,
            };
            (node.to_string(), reported)
        })
        .collect()
}

/// A run of consecutive failures of an item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streak {
    /// Its failed runs among those the history lists (at least 1).
    pub runs: usize,
    /// Whether it began before the first run listed, so it is longer.
    pub longer: bool,
    /// The `runAt` of its first run, when known.
    pub since: Option<String>,
}

impl Streak {
    /// `4 runs`, `1 run`, or `20+ runs` for one longer than the history.
    pub fn runs_text(&self) -> String {
        let plus = if self.longer { "+" } else { "" };
        let s = if self.runs == 1 && !self.longer {
            ""
        } else {
            "s"
        };
        format!("{}{plus} run{s}", self.runs)
    }
}

/// The streak of failures of item `key` that ends with run `run_at`:
/// `None` when the history does not list that run, or the item did not
/// fail in it (or is not listed).
pub fn streak_at(h: &History, key: &str, run_at: &str) -> Option<Streak> {
    let at = h.runs.iter().position(|r| r == run_at)?;
    let item = h.items.get(key)?;
    let verdicts: Vec<char> = item.verdicts.chars().take(at + 1).collect();
    let runs = verdicts.iter().rev().take_while(|c| **c == FAILED).count();
    if runs == 0 || verdicts.len() != at + 1 {
        return None;
    }
    let start = at + 1 - runs;
    // `failingSince` is the start of the streak that goes on to the latest
    // run: of this one, when no other verdict follows it.
    let current = item.verdicts.chars().skip(at + 1).all(|c| c == FAILED);
    let since = (current && !item.failing_since.is_empty()).then(|| item.failing_since.clone());
    let longer = start == 0
        && match &since {
            Some(s) => *s != h.runs[0],
            // Runs before the first were dropped only from a full history.
            None => h.runs.len() >= HISTORY_RUNS,
        };
    let since = since.or_else(|| (!longer).then(|| h.runs[start].clone()));
    Some(Streak {
        runs,
        longer,
        since,
    })
}

/// The streak of item `category`/`item` of `node` up to its run `run_at`,
/// from the node's report in `nodes`.
pub fn streak_of(
    nodes: &Nodes,
    node: &str,
    run_at: &str,
    category: &str,
    item: &str,
) -> Option<Streak> {
    let h = &nodes.get(node)?.history;
    streak_at(h, &history::key(category, item), run_at)
}

/// What `kubectl combo summary` prints after a failed item's error,
/// `failing for N runs`, when [`streak_of`] is more than its one run.
pub fn failing_for(
    nodes: &Nodes,
    node: &str,
    run_at: &str,
    category: &str,
    item: &str,
) -> Option<String> {
    streak_of(nodes, node, run_at, category, item)
        .filter(|s| s.runs > 1 || s.longer)
        .map(|s| format!("failing for {}", s.runs_text()))
}

/// The items of `nodes`, in their histories or their latest runs.
pub fn known_items(nodes: &Nodes) -> BTreeSet<String> {
    nodes
        .values()
        .flat_map(|r| r.history.items.keys().chain(&r.items))
        .cloned()
        .collect()
}

/// Most known items an unknown item's error names.
const NAMED_ITEMS: usize = 10;

/// The keys of `known` that `wanted` names: `<category>/<item>`, or an
/// item of any category. None is [`NotFound`], naming the known items of
/// Debugger `ns/name`.
pub fn matching_items(
    ns: &str,
    name: &str,
    known: &BTreeSet<String>,
    wanted: &str,
) -> Result<Vec<String>, NotFound> {
    let found: Vec<String> = known
        .iter()
        .filter(|k| k.as_str() == wanted || history::split(k).1 == wanted)
        .cloned()
        .collect();
    if !found.is_empty() {
        return Ok(found);
    }
    let listed = if known.is_empty() {
        "its reports list no item".to_string()
    } else {
        let mut named: Vec<&str> = known.iter().take(NAMED_ITEMS).map(String::as_str).collect();
        let more = known.len().saturating_sub(NAMED_ITEMS);
        let mut text = String::from("known items: ");
        if more > 0 {
            named.push("...");
        }
        text.push_str(&named.join(", "));
        if more > 0 {
            text.push_str(&format!(" ({more} more)"));
        }
        text
    };
    Err(NotFound(format!(
        "no item {wanted:?} in the reports of Debugger {ns}/{name} (give <category>/<item> or an item's name); {listed}"
    )))
}

/// `nodes` reduced to `node`; [`NotFound`] naming the nodes that did
/// report when it did not.
pub fn only_node(ns: &str, name: &str, nodes: Nodes, node: &str) -> Result<Nodes, NotFound> {
    if let Some((n, r)) = nodes.get_key_value(node) {
        return Ok(BTreeMap::from([(n.clone(), r.clone())]));
    }
    let names: Vec<&str> = nodes.keys().map(String::as_str).collect();
    Err(NotFound(format!(
        "Debugger {ns}/{name} has no report of node {node:?}; its reports are of {}",
        names.join(", ")
    )))
}

/// `kubectl combo history -o json|yaml`: each node's history, as its
/// report's `spec.history` has it (docs/reference.md, "`kubectl-combo`").
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct View {
    /// The Debugger's namespace.
    pub namespace: String,
    /// The Debugger.
    pub debugger: String,
    /// Node -> its history, null when its report has none; with `--item`,
    /// only that item's entries.
    pub nodes: BTreeMap<String, Option<History>>,
}

/// The [`View`] of `nodes`, their items reduced to `keys` when given.
pub fn view(ns: &str, name: &str, nodes: &Nodes, keys: Option<&[String]>) -> View {
    let nodes = nodes
        .iter()
        .map(|(node, r)| {
            let mut h = r.history.clone();
            if let Some(keys) = keys {
                h.items.retain(|k, _| keys.contains(k));
            }
            (node.clone(), (!h.is_empty()).then_some(h))
        })
        .collect();
    View {
        namespace: ns.to_string(),
        debugger: name.to_string(),
        nodes,
    }
}

/// The DebuggerReports of Debugger `ns/name`, in one paged list by its
/// label; of `only` those nodes when given and they are few.
pub async fn reports(
    client: &Client,
    ns: &str,
    name: &str,
    only: Option<&BTreeSet<String>>,
) -> Result<Vec<DebuggerReport>> {
    let mut selector = keys::debugger_selector(name);
    if let Some(nodes) = only.filter(|n| n.len() <= MAX_SELECTED_NODES) {
        let values: Vec<String> = nodes
            .iter()
            .map(|n| combo_api::report::node_label_value(n))
            .collect();
        selector.push_str(&format!(",{} in ({})", keys::LABEL_NODE, values.join(",")));
    }
    let api = Api::<DebuggerReport>::namespaced(client.clone(), ns);
    let mut params = ListParams::default().labels(&selector).limit(REPORTS_PAGE);
    let mut out = Vec::new();
    loop {
        let page = api.list(&params).await.map_err(|e| {
            api_error(
                e,
                &format!("listing the DebuggerReports of Debugger {ns}/{name}"),
            )
        })?;
        out.extend(page.items.into_iter().filter(|r| r.spec.debugger == name));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(out),
        }
    }
}

/// Prints the history of Debugger `ns/name`'s nodes (of `node` only when
/// given): a row per node and item, or with `item` its timeline run by
/// run; with `format` the [`View`] as one document instead.
pub async fn run(
    client: Client,
    ns: &str,
    name: &str,
    node: Option<&str>,
    item: Option<&str>,
    format: Option<Output>,
) -> Result<()> {
    debugger(client.clone(), ns, name).await?;
    let mut nodes = nodes_of(&reports(&client, ns, name, None).await?);
    if nodes.is_empty() {
        bail!(
            "Debugger {ns}/{name} has no report yet: no node has reported a run (kubectl combo status -n {ns} shows its last run)"
        );
    }
    if let Some(node) = node {
        nodes = only_node(ns, name, nodes, node)?;
    }
    let keys = match item {
        Some(i) => Some(matching_items(ns, name, &known_items(&nodes), i)?),
        None => None,
    };
    if let Some(format) = format {
        let v = view(ns, name, &nodes, keys.as_deref());
        print!("{}", output::document(format, &v));
        return Ok(());
    }
    match keys {
        Some(keys) => print!("{}", table(&ITEM_HEADER, &item_rows(&nodes, &keys))),
        None => print!("{}", table(&TIMELINE_HEADER, &timeline_rows(&nodes))),
    }
    Ok(())
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
