//! The results of each Debugger as metrics: per category, per node while
//! it fails, and its runs (docs/operator.md#results-as-metrics). The
//! latest [`Results`] of each Debugger are kept and written out at each
//! scrape, so a series goes with the Debugger, the category or the
//! failure it stood for, and the count of nodes that missed a run follows
//! the clock without a reconcile.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use combo_api::{Category, Debugger, RunAt};
use kube::runtime::watcher;
use kube::ResourceExt;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use crate::core::validate::Verdict;
use crate::reports::missed;
use crate::reports::results::{self, Results};
use crate::reports::store::NodeReports;

/// A Debugger's namespace and name.
type Key = (String, String);

/// What is kept of one Debugger.
#[derive(Debug)]
struct Entry {
    results: Results,
    /// Its parsed `runAt`, when valid.
    schedule: Option<RunAt>,
    /// Since when runs of it are expected (see [`missed::check`]).
    since: DateTime<Utc>,
    /// See [`missed::grace`].
    grace: chrono::Duration,
}

#[derive(Debug, Default)]
struct State {
    debuggers: BTreeMap<Key, Entry>,
    /// Per Debugger, the items of each category (in [`Category::all`]'s
    /// order) that turned failing, over the runs its nodes reported;
    /// written out for the Debuggers in `debuggers`, and dropped with them.
    transitions: BTreeMap<Key, [u64; CATEGORIES]>,
    /// The Debuggers a re-list of the watch has shown so far.
    listing: Option<BTreeSet<Key>>,
}

/// How many categories there are.
const CATEGORIES: usize = 5;

impl State {
    fn retain(&mut self, keep: impl Fn(&Key) -> bool) {
        self.debuggers.retain(|k, _| keep(k));
        self.transitions.retain(|k, _| keep(k));
    }
}

/// The results of every Debugger this replica reconciles, written out as
/// metrics at each scrape. Bounded by the Debuggers that exist: a deletion
/// or a re-list without it removes a Debugger's series.
#[derive(Debug, Default)]
pub struct ResultMetrics(Mutex<State>);

impl ResultMetrics {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("result metrics lock")
    }

    /// Keeps `results` as those of `dbg`, whose valid `runAt` is
    /// `schedule`, expected to run since `since`.
    pub fn set(
        &self,
        dbg: &Debugger,
        results: Results,
        schedule: Option<RunAt>,
        since: DateTime<Utc>,
    ) {
        let entry = Entry {
            results,
            schedule,
            since,
            grace: missed::grace(dbg.spec.script_timeout_seconds),
        };
        self.state().debuggers.insert(key(dbg), entry);
    }

    /// Keeps the results of `reports`, the reports of `dbg`, whose verdict
    /// is `verdict` and whose runs are expected since `since` (as the
    /// `RunsMissed` condition takes it, `records::run_at_since`). Missed
    /// nodes are counted for a valid spec only, as that condition is.
    pub fn record(
        &self,
        dbg: &Debugger,
        reports: &NodeReports,
        verdict: &Verdict,
        since: DateTime<Utc>,
    ) {
        let schedule = verdict.as_ref().ok().map(|valid| valid.run_at.clone());
        let results = results::of(reports.values().map(|r| r.as_ref()), &dbg.spec.categories);
        self.set(dbg, results, schedule, since);
    }

    /// Counts `n` items of `category` that turned failing in one run of a
    /// node of Debugger `name` in `ns` (each run once: the caller tells a
    /// run seen again, docs/operator.md#results-as-metrics).
    pub fn turned_failing(&self, ns: &str, name: &str, category: Category, n: u64) {
        let mut state = self.state();
        let key = (ns.to_string(), name.to_string());
        let counts = state.transitions.entry(key).or_default();
        counts[category_index(category)] += n;
    }

    /// Removes every series of `dbg`.
    pub fn forget(&self, dbg: &Debugger) {
        let key = key(dbg);
        self.state().retain(|k| *k != key);
    }

    /// Removes every series (this replica stopped reconciling).
    pub fn clear(&self) {
        let mut state = self.state();
        state.retain(|_| false);
        state.listing = None;
    }

    /// Follows the Debugger watch: a deletion removes the Debugger's
    /// series, a re-list those of the Debuggers it no longer shows.
    pub fn observe(&self, event: &watcher::Event<Debugger>) {
        let mut state = self.state();
        match event {
            watcher::Event::Delete(d) => {
                let gone = key(d);
                state.retain(|k| *k != gone);
            }
            watcher::Event::Apply(_) => {}
            watcher::Event::Init => state.listing = Some(BTreeSet::new()),
            watcher::Event::InitApply(d) => {
                state
                    .listing
                    .get_or_insert_with(BTreeSet::new)
                    .insert(key(d));
            }
            watcher::Event::InitDone => {
                if let Some(listed) = state.listing.take() {
                    state.retain(|k| listed.contains(k));
                }
            }
        }
    }

    /// How many Debuggers have series.
    pub fn len(&self) -> usize {
        self.state().debuggers.len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes every series as of `now`.
    fn encode_at(&self, encoder: &mut DescriptorEncoder, now: DateTime<Utc>) -> std::fmt::Result {
        let state = self.state();
        let per_category = |pick: fn(&results::CategoryResults) -> i64| {
            state.debuggers.iter().flat_map(move |((ns, name), e)| {
                e.results.categories.iter().map(move |(cat, r)| {
                    (
                        vec![
                            ("namespace", ns.as_str()),
                            ("debugger", name.as_str()),
                            ("category", cat),
                        ],
                        pick(r),
                    )
                })
            })
        };
        gauge(
            encoder,
            FAILED_ITEMS,
            per_category(|r| r.failed_items.into()),
        )?;
        gauge(
            encoder,
            FAILING_NODES,
            per_category(|r| r.failing.len() as i64),
        )?;
        gauge(
            encoder,
            SKIPPED_ITEMS,
            per_category(|r| r.skipped_items.into()),
        )?;
        let per_debugger = |value: &dyn Fn(&Entry) -> Option<i64>| -> Vec<(Labels<'_>, i64)> {
            state
                .debuggers
                .iter()
                .filter_map(|((ns, name), e)| {
                    let labels = vec![("namespace", ns.as_str()), ("debugger", name.as_str())];
                    Some((labels, value(e)?))
                })
                .collect()
        };
        gauge(
            encoder,
            NODES,
            per_debugger(&|e| Some(e.results.nodes() as i64)),
        )?;
        gauge(
            encoder,
            MISSED_NODES,
            per_debugger(&|e| {
                let check = missed::check(e.schedule.as_ref()?, e.since, e.grace, now);
                Some(results::missed(&e.results, check.run) as i64)
            }),
        )?;
        gauge(
            encoder,
            LAST_RUN,
            per_debugger(&|e| Some(e.results.last_run()?.timestamp())),
        )?;
        let per_node = state.debuggers.iter().flat_map(|((ns, name), e)| {
            e.results.categories.iter().flat_map(move |(cat, r)| {
                r.failing.iter().map(move |(node, failed)| {
                    (
                        vec![
                            ("namespace", ns.as_str()),
                            ("debugger", name.as_str()),
                            ("category", *cat),
                            ("node", node.as_str()),
                        ],
                        i64::from(*failed),
                    )
                })
            })
        });
        gauge(encoder, NODE_FAILED_ITEMS, per_node)?;
        let per_item = state.debuggers.iter().flat_map(|((ns, name), e)| {
            e.results.categories.iter().flat_map(move |(cat, r)| {
                r.failing.keys().flat_map(move |node| {
                    let of = [ns.as_str(), name.as_str(), node.as_str(), *cat];
                    let (named, more) = r.problems_of(node);
                    let items = named.iter().map(move |i| (item_labels(of, i), 1));
                    let other = (more > 0).then(|| (item_labels(of, OTHER_ITEMS), i64::from(more)));
                    items.chain(other)
                })
            })
        });
        gauge(encoder, NODE_PROBLEM, per_item)?;
        let transitions = state.debuggers.iter().flat_map(|(k, e)| {
            let counts = state.transitions.get(k);
            e.results.categories.keys().map(move |cat| {
                let labels = vec![
                    ("namespace", k.0.as_str()),
                    ("debugger", k.1.as_str()),
                    ("category", *cat),
                ];
                let i = cat.parse().map_or(0, category_index);
                (labels, counts.map_or(0, |c| c[i]))
            })
        });
        counter(encoder, NODE_PROBLEM_TRANSITIONS, transitions)
    }
}

/// The `item` of the series that counts a node's failing items of a
/// category past those named.
pub const OTHER_ITEMS: &str = "(other)";

/// The labels of one item's series: `of` is its namespace, Debugger,
/// node and category.
fn item_labels<'a>([ns, name, node, cat]: [&'a str; 4], item: &'a str) -> Labels<'a> {
    vec![
        ("namespace", ns),
        ("debugger", name),
        ("node", node),
        ("category", cat),
        ("item", item),
    ]
}

/// The place of `category` in [`Category::all`].
fn category_index(category: Category) -> usize {
    Category::all()
        .iter()
        .position(|c| *c == category)
        .unwrap_or_default()
}

impl Collector for ResultMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        self.encode_at(&mut encoder, Utc::now())
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// A metric's name (under the registry's prefix) and help.
type Descriptor = (&'static str, &'static str);

const FAILED_ITEMS: Descriptor = (
    "debugger_failed_items",
    "Failed items of a Debugger's category over its nodes' latest reports.",
);
const FAILING_NODES: Descriptor = (
    "debugger_failing_nodes",
    "Nodes whose latest report has a failed item in the category.",
);
const SKIPPED_ITEMS: Descriptor = (
    "debugger_skipped_items",
    "Skipped items of a Debugger's category over its nodes' latest reports.",
);
const NODES: Descriptor = ("debugger_nodes", "Nodes with a report of the Debugger.");
const MISSED_NODES: Descriptor = (
    "debugger_missed_nodes",
    "Nodes that have not reported the run due a grace ago (docs/operator.md, \"Missed runs\").",
);
const LAST_RUN: Descriptor = (
    "debugger_last_run_timestamp_seconds",
    "Scheduled time of the newest run a node of the Debugger reported.",
);
const NODE_FAILED_ITEMS: Descriptor = (
    "node_failed_items",
    "Failed items of a category in a node's latest report; only while there are some.",
);
const NODE_PROBLEM: Descriptor = (
    "node_problem",
    "1 while the item fails in the node's latest report; item \"(other)\": how many more of the category fail.",
);
const NODE_PROBLEM_TRANSITIONS: Descriptor = (
    "node_problem_transitions",
    "Items of the category that turned failing, counted once per node and run.",
);

/// Writes one gauge family; nothing when it has no series, since an
/// empty family would still print its descriptor.
fn gauge<'a>(
    encoder: &mut DescriptorEncoder,
    (name, help): Descriptor,
    series: impl IntoIterator<Item = (Labels<'a>, i64)>,
) -> std::fmt::Result {
    let mut series = series.into_iter().peekable();
    if series.peek().is_none() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Writes one counter family, as [`gauge`] does.
fn counter<'a>(
    encoder: &mut DescriptorEncoder,
    (name, help): Descriptor,
    series: impl IntoIterator<Item = (Labels<'a>, u64)>,
) -> std::fmt::Result {
    let mut series = series.into_iter().peekable();
    if series.peek().is_none() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn key(dbg: &Debugger) -> Key {
    (dbg.namespace().unwrap_or_default(), dbg.name_any())
}

#[cfg(test)]
#[path = "results_tests.rs"]
mod tests;
