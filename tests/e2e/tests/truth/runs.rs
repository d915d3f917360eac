//! A run's results hide nothing: a script that reports an error and then
//! hangs leaves both, and a report cut for size keeps a lone timeout.

use std::collections::BTreeMap;

use anyhow::{ensure, Result};
use combo_api::{Category, DebuggerReport, ItemResult, NodeSummary};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::TestNamespace;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::helpers::{run_scripts_now, setup, WAIT};

/// In a fresh namespace `prefix`-…, ConfigMap `scripts` of `entries` and
/// `debugger` running them now; every node's summary of that run.
async fn run_once(
    prefix: &str,
    scripts: &str,
    entries: &[(&str, &str)],
    debugger: DebuggerBuilder,
) -> Result<(TestNamespace, Client, BTreeMap<String, NodeSummary>)> {
    let (ns, c) = setup(prefix).await;
    let summary = format!("{}-summary", debugger.build().name_any());
    let now = run_scripts_now(&ns.name, scripts, entries, debugger)?;
    let nodes = combo_e2e::wait_run_within(&c, &ns.name, &summary, &now, WAIT).await?;
    Ok((ns, c, nodes))
}

/// Whether one of `items` is the timeout of a 2 s script timeout.
fn has_timeout(items: &BTreeMap<String, ItemResult>) -> bool {
    items
        .values()
        .any(|i| i.err.as_deref() == Some("timeout after 2s"))
}

#[tokio::test]
async fn a_script_that_reports_an_error_then_hangs_still_gets_its_timeout_item() -> Result<()> {
    let (_ns, _, nodes) = run_once(
        "truth-hang",
        "hang",
        &[(
            "disk.stuck.sh",
            "#!/bin/sh\necho \"err early boom\"\nexec sleep 60",
        )],
        DebuggerBuilder::new("hang")
            .categories(&[Category::Disk])
            .script_timeout(2),
    )
    .await?;
    ensure!(!nodes.is_empty(), "no node ran");
    for (node, summary) in nodes {
        let disk = summary.categories.get("disk").cloned().unwrap_or_default();
        let err = |item: &str| disk.get(item).and_then(|i| i.err.clone());
        ensure!(
            err("stuck/early").as_deref() == Some("boom"),
            "{node}: {disk:?}"
        );
        ensure!(
            has_timeout(&disk),
            "{node}: the timeout is hidden: {disk:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_cut_report_keeps_a_lone_timeout_before_repeats_of_another_script() -> Result<()> {
    let (ns, c, _) = run_once(
        "truth-cut",
        "noisy",
        &[
            (
                "disk.many.sh",
                "#!/bin/sh\ni=0\nwhile [ $i -lt 140 ]; do echo \"err part-$i the same failure again and again\"; i=$((i+1)); done",
            ),
            ("mem.stuck.sh", "#!/bin/sh\nexec sleep 60"),
        ],
        DebuggerBuilder::new("cut")
            .categories(&[Category::Disk, Category::Mem])
            .script_timeout(2)
            .tolerate_all(),
    )
    .await?;
    let reports = Api::<DebuggerReport>::namespaced(c.clone(), &ns.name)
        .list(&ListParams::default())
        .await?
        .items;
    ensure!(!reports.is_empty(), "no report");
    for r in reports {
        let mem = r.spec.categories.get("mem").cloned().unwrap_or_default();
        ensure!(
            has_timeout(&mem),
            "{}: the lone timeout was cut: mem {mem:?}",
            r.spec.node
        );
        ensure!(
            r.spec.failed_items >= 141,
            "{}: {}",
            r.spec.node,
            r.spec.failed_items
        );
    }
    Ok(())
}
