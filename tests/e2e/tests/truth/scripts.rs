//! Which scripts ran: after an edit of a Debugger's scripts ConfigMap,
//! runs asked for until every node's newest run shows one new scripts hash
//! (as a user waits for the kubelet's sync), and the summary, the status
//! and the plugin show it (docs/runner.md, "Which scripts a run used").

use std::time::Duration;

use anyhow::{ensure, Result};
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::{apply_yaml, kubectl_combo, summaries, wait_for};
use kube::{Api, Client};

use crate::helpers::{config_map, run_scripts_now, setup, WAIT};

/// The kubelet's ConfigMap sync (up to 1–2 min on real nodes) and a run.
const SYNC: Duration = Duration::from_secs(240);

/// The one scripts hash every node of Debugger `ver` shows in its summary
/// once every pod reported `run_at` (the status's `lastRunAt` when
/// `None`); `None` until then, an error when the nodes of that run differ.
async fn one_hash(c: &Client, ns: &str, run_at: Option<&str>) -> Result<Option<String>> {
    let dbg = Api::<Debugger>::namespaced(c.clone(), ns)
        .get("ver")
        .await?;
    let Some(status) = dbg.status else {
        return Ok(None);
    };
    let Some(run_at) = run_at.or(status.last_run_at.as_deref()) else {
        return Ok(None);
    };
    let summary = summaries(c, ns, "ver-summary").await?;
    let done = status.desired_pods > 0
        && summary.len() == status.desired_pods as usize
        && summary
            .values()
            .all(|v| v.run_at == run_at && !v.scripts.is_empty());
    if !done {
        return Ok(None);
    }
    let mut hashes: Vec<&str> = summary.values().map(|v| v.scripts.as_str()).collect();
    hashes.sort();
    hashes.dedup();
    ensure!(
        hashes.len() == 1,
        "the nodes ran different scripts with one ConfigMap: {summary:?}"
    );
    Ok(Some(hashes[0].to_string()))
}

#[tokio::test]
async fn a_scripts_edit_shows_as_a_new_hash_on_every_node() -> Result<()> {
    let (ns, c) = setup("truth-scripts").await;
    let ns = ns.name.as_str();
    let first = run_scripts_now(
        ns,
        "ver-scripts",
        &[("hello.sh", "#!/bin/sh\necho ok v1")],
        DebuggerBuilder::new("ver").categories(&[Category::Custom]),
    )?;
    let seen = std::sync::Mutex::new(None);
    wait_for(WAIT, "every node reports the first run", || async {
        let h = one_hash(&c, ns, Some(&first)).await?;
        let found = h.is_some();
        *seen.lock().expect("not poisoned") = h;
        Ok(found)
    })
    .await?;
    let old = seen
        .lock()
        .expect("not poisoned")
        .take()
        .unwrap_or_default();

    // The edit: new content, a new key. Wait until the kubelet put it in
    // every pod, so the next run is the first that must use it everywhere.
    apply_yaml(
        ns,
        &config_map(
            "ver-scripts",
            &[
                ("hello.sh", "#!/bin/sh\necho ok v2"),
                ("bye.sh", "#!/bin/sh\necho ok bye"),
            ],
        ),
    )?;
    // As a user waits for it (docs/runner.md, "Which scripts a run used"):
    // a run now, until every node's newest run shows one new hash. The
    // kubelet brings the edit to each pod within its sync period.
    wait_for(SYNC, "every node's summary shows a new hash", || async {
        let out = kubectl_combo(&["run", "ver", "-n", ns, "--wait", "--timeout", "120"]);
        ensure!(
            out.status.success(),
            "run --wait: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let h = one_hash(&c, ns, None).await?;
        let found = h.as_ref().is_some_and(|h| *h != old);
        *seen.lock().expect("not poisoned") = h;
        Ok(found)
    })
    .await?;
    let new = seen
        .lock()
        .expect("not poisoned")
        .take()
        .unwrap_or_default();
    ensure!(new.len() == 12, "a 12-digit hash: {new:?}");

    // The status lists the one set of the newest run with all its nodes.
    let status = Api::<Debugger>::namespaced(c.clone(), ns)
        .get("ver")
        .await?
        .status
        .unwrap_or_default();
    ensure!(
        status.script_sets.len() == 1
            && status.script_sets[0].scripts == new
            && status.script_sets[0].nodes == status.completed_nodes,
        "status: {:?} of {} nodes",
        status.script_sets,
        status.completed_nodes
    );

    // The plugin shows it on every node's rows, and no difference.
    let all = kubectl_combo(&["summary", "ver", "-n", ns, "--all"]);
    let (table, err) = (
        String::from_utf8_lossy(&all.stdout),
        String::from_utf8_lossy(&all.stderr),
    );
    let rows: Vec<&str> = table.lines().skip(1).collect();
    ensure!(
        table.lines().next().is_some_and(|h| h.contains("SCRIPTS"))
            && rows.len() >= status.completed_nodes as usize
            && rows
                .iter()
                .all(|r| r.split_whitespace().nth(2) == Some(new.as_str())),
        "summary --all: {table}{err}"
    );
    ensure!(!err.contains("script sets"), "{err}");
    let st = kubectl_combo(&["status", "-n", ns]);
    let (table, err) = (
        String::from_utf8_lossy(&st.stdout),
        String::from_utf8_lossy(&st.stderr),
    );
    ensure!(
        table
            .lines()
            .any(|l| l.contains(" ver ") && l.contains(&new)),
        "status: {table}{err}"
    );
    ensure!(!err.contains("script sets"), "{err}");
    Ok(())
}
