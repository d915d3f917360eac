//! The first columns of `kubectl get` show trouble: a Pinger with nothing
//! to probe is `READY False`, `NoTargets`, `TARGETS 0`, and the Debugger
//! using it says so in its own `Ready` while its pods run; a target added
//! to the Pinger makes both Ready again, with no change to the Debugger.

use anyhow::Result;
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, install_from_registry, kubectl_ok, namespace, pods_on_every_real_node,
    real_cluster_or_skip, wait_for,
};
use kube::Api;

use crate::helpers::WAIT;

/// The row of `name` in `kubectl get <kind> -n ns`, as (header, cell)
/// pairs; a cell is read from its header's offset to the next one's, so
/// an empty cell stays empty.
fn row(kind: &str, ns: &str, name: &str) -> Result<Vec<(String, String)>> {
    let table = kubectl_ok(&["get", kind, name, "-n", ns])?;
    let mut lines = table.lines();
    let header = lines.next().unwrap_or_default();
    let line = lines.next().unwrap_or_default();
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, ch)| ch != ' ' && (i == 0 || header.as_bytes()[i - 1] == b' '))
        .map(|(i, _)| i)
        .collect();
    Ok(starts
        .iter()
        .enumerate()
        .map(|(k, &from)| {
            let to = starts.get(k + 1).copied().unwrap_or(usize::MAX);
            let text = |s: &str| {
                s.get(from..to.min(s.len()))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            (text(header), text(line))
        })
        .collect())
}

fn cell<'a>(row: &'a [(String, String)], column: &str) -> &'a str {
    row.iter()
        .find(|(h, _)| h == column)
        .map_or("", |(_, v)| v.as_str())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pinger_with_nothing_to_probe_shows_in_the_columns_of_both_and_recovers_by_itself(
) -> Result<()> {
    let test = "a_pinger_with_nothing_to_probe_shows_in_the_columns_of_both_and_recovers_by_itself";
    if !real_cluster_or_skip(test) {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-cols").await;
    let c = client().await;
    let idle = || {
        PingerBuilder::new("idle")
            .rounds(1, 500, 1)
            .ping(&[])
            .peers(false)
            .gateway(false)
    };
    apply_yaml(&ns.name, &idle().yaml())?;
    let dbg = DebuggerBuilder::new("cols")
        .cpu("100m")
        .memory("128Mi")
        .categories(&[Category::Custom])
        .pinger("idle");
    apply_yaml(&ns.name, &dbg.yaml())?;
    pods_on_every_real_node(&c, WAIT, &ns.name, "cols").await?;

    wait_for(
        WAIT,
        "kubectl get pgr: False, NoTargets, TARGETS 0",
        || async {
            let r = row("pgr", &ns.name, "idle")?;
            Ok((cell(&r, "READY"), cell(&r, "REASON"), cell(&r, "TARGETS"))
                == ("False", "NoTargets", "0"))
        },
    )
    .await?;
    wait_for(
        WAIT,
        "kubectl get dbg: False, PingerNotReady, 2/2 pods",
        || async {
            let r = row("dbg", &ns.name, "cols")?;
            Ok(
                (cell(&r, "CONDITION"), cell(&r, "REASON"), cell(&r, "READY"))
                    == ("False", "PingerNotReady", "2/2"),
            )
        },
    )
    .await?;
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);
    let status = dbgs.get("cols").await?.status.unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .find(|k| k.type_ == "Ready")
        .expect("Ready");
    assert!(
        ready
            .message
            .starts_with("pinger \"idle\" is not Ready (NoTargets)"),
        "{}",
        ready.message
    );

    // A target on the Pinger, the Debugger untouched: both Ready again.
    apply_yaml(&ns.name, &idle().ping(&["127.0.0.1"]).peers(true).yaml())?;
    wait_for(
        WAIT,
        "kubectl get pgr: True, TargetsValid, 1+peers",
        || async {
            let r = row("pgr", &ns.name, "idle")?;
            Ok((cell(&r, "READY"), cell(&r, "REASON"), cell(&r, "TARGETS"))
                == ("True", "TargetsValid", "1+peers"))
        },
    )
    .await?;
    wait_for(WAIT, "kubectl get dbg: True, WorkloadReady", || async {
        let r = row("dbg", &ns.name, "cols")?;
        Ok((cell(&r, "CONDITION"), cell(&r, "REASON")) == ("True", "WorkloadReady"))
    })
    .await?;
    Ok(())
}
