//! docs/own-check.md as written: the sample ConfigMap and Debugger, a run
//! asked for with `kubectl combo run --wait`, and the script's items in
//! `kubectl combo summary --all`, on every node.

use anyhow::{ensure, Result};
use combo_e2e::{kubectl_combo, workload_nodes};

use crate::helpers::{apply_file, setup};

#[tokio::test]
async fn the_own_check_sample_runs_on_every_node_and_its_items_are_in_the_summary() -> Result<()> {
    let (ns, _c) = setup("op-own").await;
    apply_file(&ns.name, "config/samples/own_check.yaml")?;
    let run = kubectl_combo(&[
        "run",
        "own-check",
        "-n",
        &ns.name,
        "--wait",
        "--timeout",
        "180",
    ]);
    let out = String::from_utf8_lossy(&run.stdout);
    let err = String::from_utf8_lossy(&run.stderr);
    ensure!(
        run.status.success(),
        "kubectl combo run --wait: {:?}\n{out}\n{err}",
        run.status
    );
    let nodes = workload_nodes();
    ensure!(
        out.contains(&format!(
            "finished on {} node(s): 0 failed items",
            nodes.len()
        )),
        "{out}"
    );
    let summary = kubectl_combo(&["summary", "own-check", "-n", &ns.name, "--all"]);
    let table = String::from_utf8_lossy(&summary.stdout);
    ensure!(summary.status.success(), "{table}");
    for node in &nodes {
        for item in ["tmp-space", "resolv-conf"] {
            ensure!(
                table.lines().any(|l| {
                    let cells: Vec<&str> = l.split_whitespace().collect();
                    // NODE, RUN, SCRIPTS, CATEGORY, ITEM, ERROR (`-`: healthy).
                    cells.first() == Some(&node.as_str())
                        && cells.windows(3).any(|w| w == ["custom", item, "-"])
                }),
                "no healthy row of {item} on {node}:\n{table}"
            );
        }
    }
    Ok(())
}
