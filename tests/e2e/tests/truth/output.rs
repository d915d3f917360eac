//! Every line a script prints is accounted for on the cluster
//! (docs/runner.md, "Scripts"): item lines past the limit are counted in
//! one item and in `failedItems`, an overlong line is cut and its item
//! kept, a script printing only other lines fails with them quoted, and
//! the failures beside a large script keep their whole messages.

use std::collections::BTreeMap;

use anyhow::{ensure, Context as _, Result};
use combo_api::summary::CUT_MARKER;
use combo_api::{Category, DebuggerReport, ItemResult, NodeSummary};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::TestNamespace;
use kube::api::ListParams;
use kube::{Api, Client, ResourceExt};

use crate::helpers::{run_scripts_now, setup, WAIT};

/// In a fresh namespace `prefix`-…, ConfigMap `scripts` of `entries` and
/// `debugger` running them now; every node's summary of that run and the
/// Debugger's reports.
async fn run_once(
    prefix: &str,
    scripts: &str,
    entries: &[(&str, &str)],
    debugger: DebuggerBuilder,
) -> Result<(
    TestNamespace,
    BTreeMap<String, NodeSummary>,
    Vec<DebuggerReport>,
)> {
    let (ns, c): (TestNamespace, Client) = setup(prefix).await;
    let summary = format!("{}-summary", debugger.build().name_any());
    let now = run_scripts_now(&ns.name, scripts, entries, debugger)?;
    let nodes = combo_e2e::wait_run_within(&c, &ns.name, &summary, &now, WAIT).await?;
    ensure!(!nodes.is_empty(), "no node ran");
    let reports = Api::<DebuggerReport>::namespaced(c, &ns.name)
        .list(&ListParams::default())
        .await?
        .items;
    ensure!(
        reports.len() == nodes.len(),
        "{} reports for {} nodes",
        reports.len(),
        nodes.len()
    );
    Ok((ns, nodes, reports))
}

/// A script printing `n` lines `<kind> <tag>-<i> ...`, then running `last`.
fn flood(kind: &str, tag: &str, n: u32, last: &str) -> String {
    format!(
        "#!/bin/sh\ni=1\nwhile [ $i -le {n} ]; do echo \"{kind} {tag}-$i checked on $NODE_NAME\"; i=$((i+1)); done\n{last}"
    )
}

/// The item `item` of `category` in `items`.
fn item<'a>(
    items: &'a BTreeMap<String, BTreeMap<String, ItemResult>>,
    category: &str,
    item: &str,
) -> Result<&'a ItemResult> {
    items
        .get(category)
        .and_then(|c| c.get(item))
        .with_context(|| {
            format!(
                "no {category}/{item} among {:?}",
                items
                    .get(category)
                    .map(|c| c.keys().take(5).collect::<Vec<_>>())
            )
        })
}

#[tokio::test]
async fn lines_past_the_item_limit_are_counted_and_their_failures_each_count() -> Result<()> {
    let (_ns, nodes, reports) = run_once(
        "truth-lines",
        "flood",
        &[
            (
                "late.sh",
                &flood("ok", "late", 19_999, "echo 'err late-20000 disk on fire'"),
            ),
            ("errs.sh", &flood("err", "errs", 20_000, "")),
        ],
        // 40,000 lines printed by shell loops: on a real node the default
        // 100m CPU limit would make the flood itself outlast the wait.
        DebuggerBuilder::new("lines")
            .categories(&[Category::Custom])
            .script_timeout(120)
            .cpu("1")
            .tolerate_all(),
    )
    .await?;
    for (node, s) in &nodes {
        let late = item(&s.categories, "custom", "late/output")?;
        ensure!(
            late.err
                .as_deref()
                .is_some_and(|e| e.starts_with("1 err, ")),
            "{node}: the 20,000th line is not counted as a failure: {late:?}"
        );
        let errs = item(&s.categories, "custom", "errs/output")?;
        ensure!(
            errs.err
                .as_deref()
                .is_some_and(|e| e.starts_with("19000 err")),
            "{node}: {errs:?}"
        );
    }
    for r in reports {
        ensure!(
            r.spec.failed_items == 20_001,
            "{}: failedItems {} (want 20,000 err lines and the one late err)",
            r.spec.node,
            r.spec.failed_items
        );
        // 1000 failures of errs.sh crowd the report: messages are cut to
        // the shortest, which still says the count first.
        let late = item(&r.spec.categories, "custom", "late/output")?;
        ensure!(
            late.err
                .as_deref()
                .is_some_and(|e| e.starts_with("1 err, 0 skip and 18999")),
            "{}: {late:?}",
            r.spec.node
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_long_line_is_cut_other_lines_are_quoted_and_messages_take_the_folded_room() -> Result<()>
{
    let message = "something broke on real-node-1: /dev/sdb1 is 97% full, 1.2 GiB left of 40 GiB";
    let long = format!("#!/bin/sh\necho \"err huge {}\"", "x".repeat(10_000));
    let fail = format!("#!/bin/sh\necho 'err full {message}'");
    let (_ns, nodes, reports) = run_once(
        "truth-output",
        "output",
        &[
            // 2,000 healthy items, more than a report holds whole.
            ("big.sh", &flood("ok", "big", 1_500, "")),
            ("more.sh", &flood("ok", "more", 1_000, "")),
            ("long.sh", &long),
            ("fail.sh", &fail),
            (
                "broken.sh",
                "#!/bin/sh\necho 'ERROR: disk on fire'\necho 'still burning'",
            ),
        ],
        DebuggerBuilder::new("output")
            .categories(&[Category::Custom])
            .tolerate_all(),
    )
    .await?;
    for (node, s) in &nodes {
        let broken = item(&s.categories, "custom", "broken/output")?;
        ensure!(
            broken.err.as_deref()
                == Some(
                    "output not in the script format: 2 lines, the first: \"ERROR: disk on fire\""
                ),
            "{node}: {broken:?}"
        );
        let huge = item(&s.categories, "custom", "huge")?;
        ensure!(
            huge.err
                .as_deref()
                .is_some_and(|e| e.starts_with("xxxx") && e.ends_with(CUT_MARKER)),
            "{node}: the 10,000-character line lost its item"
        );
    }
    for r in reports {
        let node = &r.spec.node;
        let cats = &r.spec.categories;
        ensure!(
            cats.get("custom")
                .is_some_and(|d| d.contains_key("(2000 healthy items omitted)")),
            "{node}: the healthy items were not folded: {:?}",
            cats.get("custom").map(|d| d.len())
        );
        let full = item(cats, "custom", "full")?;
        ensure!(
            full.err.as_deref() == Some(message),
            "{node}: the message was cut though the folded healthy items left room: {full:?}"
        );
        let huge = item(cats, "custom", "huge")?;
        ensure!(
            huge.err.as_deref() == Some(format!("{}{CUT_MARKER}", "x".repeat(512)).as_str()),
            "{node}: the long message is not cut to 512 bytes: {:?}",
            huge.err.as_deref().map(str::len)
        );
        let big = item(cats, "custom", "big/output")?;
        ensure!(
            big.skip.as_deref()
                == Some("0 err, 0 skip and 500 ok lines past the limit of 1000 item lines were not taken"),
            "{node}: {big:?}"
        );
        ensure!(
            r.spec.failed_items == 3,
            "{node}: failedItems {}",
            r.spec.failed_items
        );
    }
    Ok(())
}
