//! The run reports of one Debugger ("node-check") on many nodes, as the
//! benchmarks that read them (node marks, result metrics) need them.

use std::sync::Arc;

use combo_api::{DebuggerReportSpec, ItemResult};
use combo_operator::reports::aggregate::NodeReport;
use combo_operator::reports::store::NodeReports;

/// The reports of `nodes` nodes (`worker-00000.example.internal`, ...):
/// `ok` passing items in each of `categories` (name, count), plus the
/// failed item `failing(node, category)` names, if any.
pub fn reports(
    nodes: usize,
    categories: &[(&str, usize)],
    failing: impl Fn(usize, &str) -> Option<&'static str>,
) -> NodeReports {
    (0..nodes)
        .map(|i| {
            let node = format!("worker-{i:05}.example.internal");
            let mut spec = DebuggerReportSpec {
                debugger: "node-check".into(),
                node: node.clone(),
                run_at: "2026-01-01T06:00:00Z".into(),
                finished_at: "2026-01-01T06:00:02Z".into(),
                ..DebuggerReportSpec::default()
            };
            for &(cat, ok) in categories {
                let items = spec.categories.entry(cat.into()).or_default();
                for k in 0..ok {
                    items.insert(format!("{cat}-item-{k}"), ItemResult::ok());
                }
                if let Some(bad) = failing(i, cat) {
                    items.insert(bad.into(), ItemResult::err("97% used (above 90%)"));
                    spec.failed_items += 1;
                }
            }
            let report = NodeReport::new(format!("node-check.{node}"), spec);
            (node, Arc::new(report))
        })
        .collect()
}
