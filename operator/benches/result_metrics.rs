//! The result metrics of one Debugger on 5,000 nodes, without a cluster:
//! the series, the /metrics bytes and the time to take the results at a
//! reconcile and to write them at a scrape, with every node healthy, 50
//! failing and every node failing in every category (the most series
//! there can be); beside it, the run summary every reconcile computes
//! already. Prints; `cargo bench -p combo-operator --bench result_metrics`
//! (docs/benchmarks.md#operator-result-metrics-at-5000-nodes).

#[path = "support/fixture.rs"]
mod fixture;

use std::time::Instant;

use combo_api::RunAt;
use combo_operator::core::images::Images;
use combo_operator::core::validate::{Valid, Verdict};
use combo_operator::metrics::registry::Metrics;
use combo_operator::reports::store::NodeReports;
use combo_testkit::fixtures::debugger;

const NODES: usize = 5000;
const CATEGORIES: [&str; 5] = ["disk", "net", "mem", "svc", "custom"];

/// Whether a node (by index) fails in a category.
type Failing = Box<dyn Fn(usize, &str) -> bool>;

/// The default scripts' 34 items over four categories and two custom
/// ones; `failing(node, category)` adds a failed item there.
fn reports(failing: impl Fn(usize, &str) -> bool) -> NodeReports {
    let categories: Vec<_> = CATEGORIES.into_iter().zip([8, 11, 6, 9, 2]).collect();
    fixture::reports(NODES, &categories, |i, cat| {
        failing(i, cat).then_some("bad")
    })
}

/// Mean milliseconds of `f` over `n` calls.
fn ms(n: u32, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    start.elapsed().as_secs_f64() * 1000.0 / f64::from(n)
}

fn main() {
    let dbg = debugger("ops", "node-check").build();
    let verdict: Verdict = Ok(Valid::of(
        &dbg,
        RunAt::parse("0 * * * *").expect("a cron"),
        None,
        &Images::default(),
    ));
    let cases: [(&str, Failing); 3] = [
        ("every node healthy", Box::new(|_, _| false)),
        (
            "50 nodes failing disk",
            Box::new(|i, c| i % 100 == 7 && c == "disk"),
        ),
        (
            "every node failing in every category",
            Box::new(|_, _| true),
        ),
    ];
    let since = chrono::Utc::now();
    for (what, failing) in cases {
        let reports = reports(failing);
        let metrics = Metrics::default();
        let record = ms(20, || {
            metrics.results().record(&dbg, &reports, &verdict, since)
        });
        let mut text = String::new();
        let encode = ms(20, || text = metrics.encode());
        let series = text
            .lines()
            .filter(|l| {
                l.starts_with("combo_operator_debugger_") || l.starts_with("combo_operator_node_")
            })
            .count();
        let runs = ms(20, || {
            std::hint::black_box(combo_operator::reports::runs::run_summary(
                reports.values().map(|r| r.as_ref()),
            ));
        });
        println!(
            "{what}: {series} series, /metrics {} bytes; results taken {record:.2} ms, written {encode:.2} ms (the run summary: {runs:.2} ms)",
            text.len()
        );
    }
}
