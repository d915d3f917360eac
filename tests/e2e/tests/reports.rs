//! End-to-end tests of per-node DebuggerReports on the real control plane:
//! the runners write one report each, the operator alone writes the
//! summary ConfigMap and status from them, removes what nodes that left
//! reported, and takes over a summary written by runners of an earlier
//! version; the workload account can write reports but no ConfigMap; and
//! the plugin reads a report's history of runs.

use std::collections::BTreeSet;

use anyhow::Result;
use combo_api::history::History;
use combo_api::report::{node_label_value, report_name, MAX_REPORT_RESULT_BYTES};
use combo_api::summary::MAX_SUMMARY_BYTES;
use combo_api::NodeSummary;
use combo_api::{keys, Category, Debugger, DebuggerReport, DebuggerReportSpec, ItemResult};
use combo_e2e::{
    apply_yaml, client, install_operator, kubectl, kubectl_combo, namespace, nodes, wait_for,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};

use combo_e2e::fixtures::{ConfigMapBuilder, DebuggerBuilder};
use combo_e2e::runs::*;
use combo_e2e::{set_run_at, summaries};

/// Names of the reports in `ns`.
async fn report_names(c: &Client, ns: &str) -> Result<BTreeSet<String>> {
    let api: Api<DebuggerReport> = Api::namespaced(c.clone(), ns);
    Ok(api
        .list(&ListParams::default())
        .await?
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect())
}

#[tokio::test]
async fn a_node_that_left_loses_its_report_and_key_at_the_next_run() -> Result<()> {
    let ns = namespace("reports-left").await;
    let c = client().await;
    setup(&c, &ns.name, "left").await?;
    let first = now_rfc3339();
    set_run_at(&c, &ns.name, "left", &first).await?;
    wait_run(&c, &ns.name, "left-summary", &first).await?;
    let all = nodes();
    let gone = all.last().unwrap().clone();
    assert!(report_names(&c, &ns.name)
        .await?
        .contains(&report_name("left", &gone)));

    // The Debugger stops selecting the last node: its pod goes away.
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);
    let affinity = serde_json::json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": [gone]}]}]}}});
    dbgs.patch(
        "left",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"affinity": affinity}})),
    )
    .await?;
    let stay: BTreeSet<String> = all[..all.len() - 1].iter().cloned().collect();
    wait_for(WAIT, "pods on the remaining nodes only", || async {
        let pods = pods_by_node(&c, &ns.name, "left").await?;
        Ok(pods.keys().cloned().collect::<BTreeSet<_>>() == stay)
    })
    .await?;

    // Its report and key stay until the next run, then go.
    assert!(summaries(&c, &ns.name, "left-summary")
        .await?
        .contains_key(&gone));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let second = now_rfc3339();
    set_run_at(&c, &ns.name, "left", &second).await?;
    let want_reports: BTreeSet<String> = stay.iter().map(|n| report_name("left", n)).collect();
    wait_for(
        WAIT,
        "the departed node's report and key removed",
        || async {
            let keys: BTreeSet<String> = summaries(&c, &ns.name, "left-summary")
                .await?
                .into_keys()
                .collect();
            Ok(keys == stay && report_names(&c, &ns.name).await? == want_reports)
        },
    )
    .await?;
    wait_for(WAIT, "the status counts the remaining nodes", || async {
        let st = dbgs.get("left").await?.status.unwrap_or_default();
        Ok(st.last_run_at.as_deref() == Some(second.as_str())
            && st.completed_nodes == stay.len() as i32)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_oversized_result_is_cut_with_a_marker_and_every_failure_counted() -> Result<()> {
    let ns = namespace("reports-big").await;
    let c = client().await;
    install_operator();
    // 1000 failed items (the most a script's lines give) with long
    // messages, far over what a report holds (MAX_REPORT_RESULT_BYTES), and
    // nothing else: only the custom category runs.
    let many = r#"#!/bin/sh
i=0
while [ $i -lt 1000 ]; do
  echo "err part$i this item failed with a long explanation of what went wrong on $NODE_NAME, number $i"
  i=$((i + 1))
done
"#;
    apply_yaml(
        &ns.name,
        &ConfigMapBuilder::new("big-scripts")
            .entry("many.sh", many)
            .yaml(),
    )?;
    apply_yaml(
        &ns.name,
        &scripts_debugger("big", "big-scripts", "")
            .categories(&[Category::Custom])
            .yaml(),
    )?;
    wait_pods(&c, &ns.name, "big").await?;
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "big", &run_at).await?;
    let values = wait_run(&c, &ns.name, "big-summary", &run_at).await?;
    let reports: Api<DebuggerReport> = Api::namespaced(c.clone(), &ns.name);
    for node in nodes() {
        let r = reports.get(&report_name("big", &node)).await?;
        assert_eq!(r.spec.failed_items, 1000, "{node}: every failure counted");
        let listed = r.spec.summary();
        assert!(listed.to_yaml().len() <= MAX_REPORT_RESULT_BYTES);
        assert!(
            listed.categories["custom"]
                .keys()
                .any(|k| k.ends_with("failed items omitted)")),
            "{node}: the cut is marked: {:?}",
            listed.categories["custom"]
                .keys()
                .take(3)
                .collect::<Vec<_>>()
        );
        let mut stored = r.clone();
        stored.metadata.managed_fields = None;
        let size = serde_json::to_vec(&stored)?.len();
        assert!(size < 32 * 1024, "{node}: report is {size} bytes");
        // The summary value, in the same format, is bounded on its own and
        // names the report that lists more, every failure counted.
        let value = &values[&node];
        assert!(value.to_yaml().len() <= MAX_SUMMARY_BYTES, "{node}: value");
        assert_eq!(value.failed_count(), 1000, "{node}: the value's count");
        assert_eq!(
            value.report.as_deref(),
            Some(report_name("big", &node).as_str())
        );
    }
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);
    let total = 1000 * nodes().len() as i32;
    wait_for(WAIT, "the status counts every failure", || async {
        let st = dbgs.get("big").await?.status.unwrap_or_default();
        Ok(st.last_run_at.as_deref() == Some(run_at.as_str()) && st.failed_items == total)
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn the_workload_account_may_apply_reports_but_not_touch_configmaps() -> Result<()> {
    let ns = namespace("reports-rbac").await;
    let c = client().await;
    setup(&c, &ns.name, "acct").await?;
    let who = format!("system:serviceaccount:{}:kube-combo-workload.acct", ns.name);
    let can = |verb: &str, resource: &str| {
        let out = kubectl(&[
            "auth", "can-i", verb, resource, "-n", &ns.name, "--as", &who,
        ]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for (verb, resource, want) in [
        ("get", "debuggerreports.kubecombo.io", "yes"),
        ("create", "debuggerreports.kubecombo.io", "yes"),
        ("patch", "debuggerreports.kubecombo.io", "yes"),
        ("delete", "debuggerreports.kubecombo.io", "no"),
        ("get", "configmaps", "no"),
        ("patch", "configmaps", "no"),
        ("create", "configmaps", "no"),
        ("patch", "debuggers.kubecombo.io", "no"),
    ] {
        assert_eq!(can(verb, resource), want, "{verb} {resource}");
    }
    Ok(())
}

#[tokio::test]
async fn a_summary_written_by_runners_of_an_earlier_version_is_taken_over() -> Result<()> {
    let ns = namespace("reports-upgrade").await;
    let c = client().await;
    install_operator();
    apply_yaml(&ns.name, &scripts_configmap("old-scripts", "v1").yaml())?;
    apply_yaml(
        &ns.name,
        &scripts_debugger("old", "old-scripts", "")
            .summary("old-summary")
            .yaml(),
    )?;
    // The operator makes the summary (an earlier version did too); then,
    // as runners of an earlier version left it: one key per node, each
    // owned by that node's field manager, and one of a node long gone.
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), &ns.name);
    wait_for(WAIT, "old-summary made by the operator", || async {
        Ok(cms.get_opt("old-summary").await?.is_some())
    })
    .await?;
    for node in nodes().iter().chain(["gone-node".to_string()].iter()) {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "old-summary"},
            "data": {node.as_str(): "runAt: \"2026-01-01T00:00:00Z\"\n"}});
        cms.patch(
            "old-summary",
            &PatchParams::apply(&format!("combo-runner/{node}")).force(),
            &Patch::Apply(&body),
        )
        .await?;
    }
    wait_pods(&c, &ns.name, "old").await?;
    let run_at = now_rfc3339();
    set_run_at(&c, &ns.name, "old", &run_at).await?;
    wait_run(&c, &ns.name, "old-summary", &run_at).await?;
    let want: BTreeSet<String> = nodes().into_iter().collect();
    wait_for(WAIT, "only the operator's keys left", || async {
        let cm = cms.get("old-summary").await?;
        let keys: BTreeSet<String> = cm.data.unwrap_or_default().into_keys().collect();
        let managers: Vec<String> = cm
            .metadata
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.manager)
            .collect();
        Ok(keys == want && managers == ["combo-operator"])
    })
    .await?;
    Ok(())
}

/// `runAt` of run `i` of the history test.
fn hist_run(i: usize) -> String {
    format!("2026-04-01T{:02}:00:00Z", 6 + i)
}

/// Writes the report of `node` for Debugger `dbg` as its runner would
/// after five runs in which disk item `sdb1` had the verdicts of
/// `verdicts` (`o` healthy, `x` failed), the history carried from run to
/// run; the report is that of the last run.
async fn report_with_history(
    c: &Client,
    ns: &str,
    dbg: &str,
    node: &str,
    verdicts: &str,
) -> Result<()> {
    let mut history = History::default();
    let mut result = NodeSummary::default();
    for (i, v) in verdicts.chars().enumerate() {
        result = NodeSummary {
            run_at: hist_run(i),
            finished_at: hist_run(i),
            ..NodeSummary::default()
        };
        let disk = result.categories.entry("disk".into()).or_default();
        disk.insert("sda".into(), ItemResult::ok());
        let sdb1 = match v {
            'x' => ItemResult::err("disk full (97% used)"),
            _ => ItemResult::ok(),
        };
        disk.insert("sdb1".into(), sdb1);
        history = history.next(&result);
    }
    let name = report_name(dbg, node);
    let spec = DebuggerReportSpec::of(dbg, node, &result).with_history(history);
    let mut r = DebuggerReport::new(&name, spec);
    r.metadata.labels = Some(
        [
            (keys::LABEL_DEBUGGER.to_string(), dbg.to_string()),
            (keys::LABEL_NODE.to_string(), node_label_value(node)),
        ]
        .into(),
    );
    Api::<DebuggerReport>::namespaced(c.clone(), ns)
        .create(&PostParams::default(), &r)
        .await?;
    Ok(())
}

/// `kubectl combo ARGS`: exit code, stdout, stderr.
fn combo(args: &[&str]) -> (Option<i32>, String, String) {
    let out = kubectl_combo(args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn kubectl_combo_history_shows_where_a_failure_started_and_cleared_and_summary_counts_its_runs(
) -> Result<()> {
    let ns = namespace("reports-history").await;
    let (c, ns) = (client().await, ns.name.as_str());
    install_operator();
    // Only the reports written here: their nodes are names, and the
    // Debugger's pods could not start anyway (its scripts ConfigMap does
    // not exist). Both are of the same last run, so neither is taken for
    // a node that left.
    apply_yaml(ns, &DebuggerBuilder::new("hist").scripts("absent").yaml())?;
    let (a, b) = ("history-node-a", "history-node-b");
    report_with_history(&c, ns, "hist", a, "oxxxo").await?;
    report_with_history(&c, ns, "hist", b, "ooxxx").await?;
    let last = hist_run(4);
    wait_for(WAIT, "the summary holds both nodes' last run", || async {
        let s = combo_e2e::summaries(&c, ns, "hist-summary").await?;
        Ok([a, b]
            .iter()
            .all(|n| s.get(*n).is_some_and(|v| v.run_at == last)))
    })
    .await?;

    // The timeline: a row per node and item that failed in the window.
    let (code, out, err) = combo(&["history", "hist", "-n", ns]);
    assert_eq!(code, Some(0), "{out}{err}");
    let cells = |node: &str| -> Vec<&str> {
        out.lines()
            .find(|l| l.starts_with(node) && l.contains("disk/sdb1"))
            .map(|l| l.split_whitespace().collect())
            .unwrap_or_default()
    };
    assert!(
        cells(a).starts_with(&[a, "disk/sdb1", "oxxxo", "no"]),
        "{out}"
    );
    assert!(
        cells(b).starts_with(&[b, "disk/sdb1", "ooxxx", "for"]),
        "{out}"
    );
    assert!(
        out.contains(&format!("for 3 runs since {}", hist_run(2))),
        "{out}"
    );

    // One item on one node, run by run: where it started and cleared.
    let (code, out, err) = combo(&["history", "hist", "-n", ns, "--node", a, "--item", "sdb1"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let at = |run: usize| {
        out.lines()
            .find(|l| l.contains(&hist_run(run)))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        at(1).contains("failed") && at(1).ends_with("started failing"),
        "{out}"
    );
    assert!(
        at(2).contains("failed") && !at(2).contains("started"),
        "{out}"
    );
    assert!(
        at(4).contains("healthy") && at(4).ends_with("cleared"),
        "{out}"
    );
    assert!(!out.contains(b), "--node {a} only: {out}");

    // The summary: the failed item of node b says for how many runs.
    let (code, out, err) = combo(&["summary", "hist", "-n", ns]);
    assert_eq!(code, Some(0), "{out}{err}");
    let line = out.lines().find(|l| l.starts_with(b)).unwrap_or_default();
    assert!(
        line.contains("disk full (97% used)") && line.ends_with("failing for 3 runs"),
        "{out}"
    );
    assert!(!out.contains(a), "node a's item is healthy now: {out}");
    let (_, out, _) = combo(&["summary", "hist", "-n", ns, "-o", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&out)?;
    let node_b = doc["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["node"] == b))
        .cloned()
        .unwrap_or_default();
    assert_eq!(node_b["items"][0]["failingRuns"], 3, "{doc}");

    // As data, and what it cannot find.
    let (code, out, _) = combo(&["history", "hist", "-n", ns, "-o", "json"]);
    assert_eq!(code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&out)?;
    assert_eq!(
        doc["nodes"][b]["items"]["disk/sdb1"]["failingSince"],
        hist_run(2),
        "{doc}"
    );
    assert_eq!(doc["nodes"][a]["runs"].as_array().map(Vec::len), Some(5));
    let (code, _, err) = combo(&["history", "hist", "-n", ns, "--node", "nosuch"]);
    assert!(
        code == Some(3) && err.contains(a) && err.contains(b),
        "{err}"
    );
    let (code, _, err) = combo(&["history", "hist", "-n", ns, "--item", "sdz"]);
    assert!(code == Some(3) && err.contains("disk/sdb1"), "{err}");
    let (code, _, err) = combo(&["history", "nosuch", "-n", ns]);
    assert!(
        code == Some(3) && err.contains("no Debugger \"nosuch\""),
        "{err}"
    );
    Ok(())
}
