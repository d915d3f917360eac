//! What the operator holds for the reports of 5,000 busy nodes, counted by
//! the allocator: the report index, the Events on the Node waiting to be
//! written, the results kept for the metrics, and the peak of one scrape
//! (plain, and gzipped as a scraper asks for it) (docs/operator.md,
//! "Memory").

// A counting allocator implements `GlobalAlloc`, an unsafe trait; it only
// hands each call on to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chrono::Utc;
use combo_api::history::History;
use combo_api::{
    Category, Debugger, DebuggerReport, DebuggerReportSpec, DebuggerSpec, NodeSummary,
};
use combo_operator::metrics::registry::Metrics;
use combo_operator::node_events::queue::Outbox;
use combo_operator::node_events::NodeEvents;
use combo_operator::reports::results;
use combo_operator::reports::store::Reports;
use kube::api::ObjectMeta;
use kube::runtime::watcher;

/// The system allocator, counting the bytes it holds and their peak.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Counted as the system allocator grows a block: in place where it
        // can (large blocks are remapped, not copied).
        let held = HELD.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(held, Ordering::Relaxed);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NAMESPACE: &str = "ns";
const DEBUGGER: &str = "busy";
const MIB: f64 = 1024.0 * 1024.0;

/// A busy node's result ([`combo_testkit::busy::busy_result`]) for run
/// `run` (0-based minutes past 06:00).
fn busy_result(node: usize, run: usize) -> NodeSummary {
    combo_testkit::busy::busy_result(
        node,
        &format!("2026-11-22T06:{run:02}:00Z"),
        &format!("2026-11-22T06:{run:02}:04Z"),
    )
}

/// The history of runs up to `run` (verdicts only: the same on every
/// node).
fn history(run: usize) -> History {
    (run.saturating_sub(19)..=run).fold(History::default(), |h, r| h.next(&busy_result(0, r)))
}

/// Node `node`'s report of run `run`, with `history`.
fn report(node: usize, run: usize, history: &History) -> DebuggerReport {
    let name = format!("node-{node:05}");
    let result = busy_result(node, run);
    let spec = DebuggerReportSpec::of(DEBUGGER, &name, &result).with_history(history.clone());
    let mut r = DebuggerReport::new(&format!("{DEBUGGER}-{name}"), spec);
    r.metadata.namespace = Some(NAMESPACE.into());
    r
}

fn held_mib() -> f64 {
    HELD.load(Ordering::Relaxed) as f64 / MIB
}

/// Nodes to report: `COMBO_MEMORY_NODES`, 1,000 unless set (5,000 takes
/// two minutes in a debug build; docs/operator.md gives its figures).
fn nodes() -> usize {
    std::env::var("COMBO_MEMORY_NODES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000)
}

/// Bytes the operator may keep per reporting node, besides the bounded
/// queue of Node Events (at most 7 MB) and the full values (at most 900
/// KiB a Debugger, failed and healthy nodes each).
const PER_NODE_BYTES: f64 = 4096.0;
const FIXED_MIB: f64 = 9.0;

#[test]
fn busy_nodes_fit_the_operators_budget() {
    let nodes = nodes();
    let metrics = Arc::new(Metrics::default());
    let reports = Reports::default();
    let outbox = Outbox::default();
    let events = NodeEvents::new(outbox.clone(), metrics.clone());
    reports.follow_with(Box::new(move |e| events.observe(e)));
    let dbg = Debugger::new(
        DEBUGGER,
        DebuggerSpec {
            categories: vec![Category::Disk, Category::Net, Category::Mem, Category::Svc],
            ..Default::default()
        },
    );
    let dbg = Debugger {
        metadata: ObjectMeta {
            namespace: Some(NAMESPACE.into()),
            ..dbg.metadata
        },
        ..dbg
    };

    let before = held_mib();
    // Two runs, one report at a time as the watch hands them over: the
    // second run's Events wait in the queue.
    for run in [18, 19] {
        let history = history(run);
        for node in 0..nodes {
            reports.observe(&watcher::Event::Apply(report(node, run, &history)));
        }
    }
    let kept = held_mib() - before;
    let queued = outbox.len();

    let start = held_mib();
    let by_node = reports.of(NAMESPACE, DEBUGGER);
    let of_nodes = results::of(by_node.values().map(|r| r.as_ref()), &dbg.spec.categories);
    metrics.results().set(&dbg, of_nodes, None, Utc::now());
    drop(by_node);
    let results = held_mib() - start;

    // The scrapes after the first: each is written into room for the last.
    drop(metrics.encode());
    PEAK.store(HELD.load(Ordering::Relaxed), Ordering::Relaxed);
    let at_scrape = held_mib();
    let text = metrics.encode();
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    let scrape_peak = PEAK.load(Ordering::Relaxed) as f64 / MIB - at_scrape;
    let exposition = text.len() as f64 / MIB;
    drop(text);
    // A scraper that takes gzip (Prometheus and vmagent do): the text is
    // compressed as it is written, never held whole.
    drop(metrics.encode_gzip());
    PEAK.store(HELD.load(Ordering::Relaxed), Ordering::Relaxed);
    let at_scrape = held_mib();
    let zipped = metrics.encode_gzip().len() as f64 / MIB;
    let gzip_peak = PEAK.load(Ordering::Relaxed) as f64 / MIB - at_scrape;

    println!(
        "{nodes} busy nodes: reports and Events kept {kept:.1} MiB ({queued} Events queued), results {results:.1} MiB, one scrape peaks {scrape_peak:.1} MiB more ({series} series, {exposition:.1} MiB of text), {gzip_peak:.1} MiB gzipped ({zipped:.1} MiB sent)"
    );
    // Before the index let full values go and the queue was cut to one
    // Event a node, 5,000 nodes took 56 MiB (1,000: 24 MiB); before scrapes
    // took room for the last one's, a scrape held 1.8 times its text.
    let budget = nodes as f64 * PER_NODE_BYTES / MIB + FIXED_MIB;
    assert!(
        kept + results < budget,
        "the operator's state for {nodes} busy nodes is {:.1} MiB, over {budget:.1}",
        kept + results
    );
    assert!(
        scrape_peak < exposition * 1.15,
        "a scrape of {exposition:.1} MiB of text holds {scrape_peak:.1} MiB"
    );
    assert!(
        gzip_peak < exposition * 0.2 + 1.0,
        "a gzip scrape of {exposition:.1} MiB of text holds {gzip_peak:.1} MiB"
    );
}
