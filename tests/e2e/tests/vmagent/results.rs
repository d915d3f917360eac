//! A failing item where operators act, end to end: a script fails on one
//! node for two runs, then heals. Its item's series
//! `combo_operator_node_problem` is read through vmagent from the
//! operator's endpoint; a Node Event (one, counted) is seen by `kubectl
//! describe node` and its recovery Event follows; `kubectl combo history`
//! shows the run where the failure started and the one where it cleared;
//! and with `failureThreshold: 2` the node's condition turns True only at
//! the second failed run (docs/operator.md, "Events on the Node" and
//! "Debounce").

use anyhow::{Context as _, Result};
use combo_api::keys::node_mark_name;
use combo_api::Category;
use combo_e2e::fixtures::{documents, DebuggerBuilder};
use combo_e2e::runs::{flag_scripts, run_failing_on, wait_pods};
use combo_e2e::{
    apply_yaml, client, kubectl_combo, kubectl_ok, namespace, summaries, wait_for, workload_nodes,
};
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{Api, ListParams};
use kube::Client;

use combo_e2e::victoria::Victoria;

use crate::{stack, wait_discovered, ScraperRbac, WAIT};

const NAME: &str = "acted";
const SCRIPTS: &str = "acted-flags";

/// The node's condition of the Debugger's `custom` category, as (status,
/// reason, message).
async fn condition(c: &Client, node: &str, ty: &str) -> Result<Option<(String, String, String)>> {
    let n = Api::<Node>::all(c.clone()).get(node).await?;
    Ok(n.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .find(|k| k.type_ == ty)
        .map(|k| {
            (
                k.status.clone(),
                k.reason.clone().unwrap_or_default(),
                k.message.clone().unwrap_or_default(),
            )
        }))
}

/// The dashboard's "Failing items" table, its query run as Grafana runs it
/// for namespace `ns`: one row, the item on `node`, failing since a moment
/// no later than now and within the test's run.
fn failing_since_on_the_dashboard(vm: &Victoria, ns: &str, node: &str) -> Result<()> {
    let path = combo_e2e::repo_root().join("deploy/grafana/kube-combo-pinger.json");
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let panel = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["title"] == "Failing items")
        .context("the dashboard's Failing items panel")?;
    let expr = panel["targets"][0]["expr"].as_str().context("its query")?;
    let rows = vm.vector(&expr.replace("$namespace", ns))?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as f64;
    anyhow::ensure!(rows.len() == 1, "one failing item: {rows:?}");
    let (labels, since_ms) = &rows[0];
    anyhow::ensure!(
        labels.get("node").map(String::as_str) == Some(node)
            && labels.get("item").map(String::as_str) == Some("flag"),
        "{labels:?}"
    );
    let age_s = (now_ms - since_ms) / 1000.0;
    anyhow::ensure!(
        (0.0..WAIT.as_secs_f64() * 4.0).contains(&age_s),
        "failing since {age_s:.0} s ago"
    );
    Ok(())
}

/// Events on Node `node` of reason `reason` that name this Debugger.
async fn node_events(c: &Client, ns: &str, node: &str, reason: &str) -> Result<Vec<Event>> {
    let api: Api<Event> = Api::all(c.clone());
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=Node,involvedObject.name={node},reason={reason}"
    ));
    Ok(api
        .list(&lp)
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with(&format!("{ns}/{NAME}: ")))
        })
        .collect())
}

/// The `runAt` of node `node`'s latest run in the summary.
async fn last_run(c: &Client, ns: &str, node: &str) -> Result<String> {
    let s = summaries(c, ns, &format!("{NAME}-summary")).await?;
    Ok(s.get(node)
        .context("the node's summary value")?
        .run_at
        .clone())
}

/// The history's line of run `run` for node `node` and item `flag`.
fn history_line(ns: &str, node: &str, run: &str) -> Result<String> {
    let out = kubectl_combo(&["history", NAME, "-n", ns, "--node", node, "--item", "flag"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    anyhow::ensure!(
        out.status.success(),
        "kubectl combo history: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find(|l| l.contains(run))
        .map(str::to_string)
        .with_context(|| format!("no line of run {run} in:\n{text}"))
}

#[tokio::test]
async fn a_failing_item_reaches_its_series_a_node_event_the_history_and_a_condition_after_its_threshold(
) -> Result<()> {
    combo_e2e::install_for_cluster();
    let nodes = workload_nodes();
    let node = nodes.first().context("a workload node")?.clone();
    let ns = namespace("acted").await;
    let c = client().await;
    let _rbac = ScraperRbac::apply()?;
    let vm = stack(&c).await?;
    wait_discovered(&c, &vm).await?;
    apply_yaml(
        &ns.name,
        &documents(&[
            flag_scripts(SCRIPTS, &[]),
            DebuggerBuilder::new(NAME)
                .scripts(SCRIPTS)
                .categories(&[Category::Custom])
                .script_timeout(5)
                .node_conditions(true)
                .failure_threshold(2)
                .yaml(),
        ]),
    )?;
    wait_pods(&c, &ns.name, NAME).await?;
    let ty = node_mark_name(&ns.name, NAME, Category::Custom);
    run_failing_on(&c, &ns.name, NAME, SCRIPTS, &[]).await?;

    // The first failed run: a series for the item, a Node Event, and the
    // condition still False, below its threshold.
    run_failing_on(&c, &ns.name, NAME, SCRIPTS, &[&node]).await?;
    let started = last_run(&c, &ns.name, &node).await?;
    let series = format!(
        r#"combo_operator_node_problem{{namespace="{}",debugger="{NAME}",node="{node}",category="custom",item="flag"}}"#,
        ns.name
    );
    wait_for(WAIT, "the item's series through vmagent", || async {
        Ok(vm.scalar(&series)? == Some(1.0))
    })
    .await?;
    failing_since_on_the_dashboard(&vm, &ns.name, &node)?;
    let (status, reason, message) = condition(&c, &node, &ty).await?.context("the condition")?;
    assert_eq!(
        status, "False",
        "below failureThreshold: {reason}: {message}"
    );
    assert_eq!(reason, "BelowFailureThreshold", "{message}");
    wait_for(WAIT, "a CustomProblem Event on the Node", || async {
        Ok(!node_events(&c, &ns.name, &node, "CustomProblem")
            .await?
            .is_empty())
    })
    .await?;
    let described = kubectl_ok(&["describe", "node", &node])?;
    assert!(
        described.contains("CustomProblem") && described.contains("custom/flag"),
        "kubectl describe node shows the Event:\n{described}"
    );

    // The second: the condition turns True, the same Event counts 2.
    run_failing_on(&c, &ns.name, NAME, SCRIPTS, &[&node]).await?;
    wait_for(
        WAIT,
        "the condition True at the second failed run",
        || async {
            Ok(condition(&c, &node, &ty)
                .await?
                .is_some_and(|(s, _, m)| s == "True" && m.contains("failed 2 runs")))
        },
    )
    .await?;
    wait_for(WAIT, "one Event, counted twice", || async {
        let events = node_events(&c, &ns.name, &node, "CustomProblem").await?;
        Ok(events.len() == 1 && events[0].count == Some(2))
    })
    .await?;

    // Healed: the series goes, a recovery Event, the condition False, and
    // the history shows where the failure started and cleared.
    run_failing_on(&c, &ns.name, NAME, SCRIPTS, &[]).await?;
    let cleared = last_run(&c, &ns.name, &node).await?;
    wait_for(WAIT, "the item's series gone", || async {
        Ok(vm.scalar(&series)?.is_none())
    })
    .await?;
    wait_for(WAIT, "a CustomRecovered Event on the Node", || async {
        Ok(!node_events(&c, &ns.name, &node, "CustomRecovered")
            .await?
            .is_empty())
    })
    .await?;
    wait_for(WAIT, "the condition False again", || async {
        Ok(condition(&c, &node, &ty)
            .await?
            .is_some_and(|(s, r, _)| s == "False" && r == "NoFailures"))
    })
    .await?;
    let transitions = format!(
        r#"sum(combo_operator_node_problem_transitions_total{{namespace="{}",debugger="{NAME}",category="custom"}})"#,
        ns.name
    );
    let counted = vm.scalar(&transitions)?.unwrap_or(0.0);
    assert!(counted >= 1.0, "transitions to failing counted: {counted}");
    let start_line = history_line(&ns.name, &node, &started)?;
    assert!(start_line.contains("started failing"), "{start_line}");
    let clear_line = history_line(&ns.name, &node, &cleared)?;
    assert!(clear_line.contains("cleared"), "{clear_line}");
    println!("results where operators act: {node}: series, Event, threshold 2, history {started} .. {cleared}");
    Ok(())
}
