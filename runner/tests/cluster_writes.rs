//! Many runners writing one summary ConfigMap at once through the writer a
//! runner uses (spread offset, retries with backoff), against the test
//! control plane. Run with `COMBO_E2E_DIR=DIR cargo test -p combo-runner
//! --test cluster_writes -- --ignored` after `tests/e2e/cluster.sh up DIR`.

#[path = "support/cluster.rs"]
mod cluster;

use std::time::Duration;

use combo_api::{ItemResult, NodeSummary};
use combo_runner::publish::{spawn_writer, Pending, Publisher};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

const WRITERS: usize = 200;

fn summary(node: usize, run_at: &str) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: run_at.into(),
        finished_at: run_at.into(),
        ..Default::default()
    };
    s.categories.entry("disk".into()).or_default().insert(
        format!("item-of-{node}"),
        ItemResult::err(format!("node {node}")),
    );
    s
}

#[tokio::test]
#[ignore = "needs a control plane: COMBO_E2E_DIR"]
async fn two_hundred_runners_apply_their_keys_at_once_and_nothing_is_lost() {
    let client = cluster::admin_client().await;
    let ns = cluster::Ns::new(&client, "runner-writers").await;
    cluster::operator_creates_summary(&client, &ns.name, "many-summary").await;

    // Each runner hands its result to the background writer it runs in a
    // pod (spread offset, then retries with backoff), all at the same
    // moment, as at the end of a timestamp run on 200 nodes.
    let started = std::time::Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let tx = spawn_writer(Publisher::new(
                client.clone(),
                ns.name.clone(),
                format!("node-{i}"),
                "none".into(),
            ));
            tx.send(Pending {
                configmap: "many-summary".into(),
                summary: summary(i, "2026-11-22T06:00:00Z"),
                nodes: WRITERS as u32,
            })
            .expect("writer runs");
            tx
        })
        .collect();
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns.name);
    let mut keys = 0;
    while keys < WRITERS {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "{keys} of {WRITERS} keys after 180 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        keys = api
            .get("many-summary")
            .await
            .unwrap()
            .data
            .unwrap_or_default()
            .len();
    }
    eprintln!("{WRITERS} keys written in {:.1?}", started.elapsed());
    drop(writers);

    // A node writing again, and the operator applying its own fields again,
    // leave every other key alone: each manager owns only its fields.
    let again = Publisher::new(
        client.clone(),
        ns.name.clone(),
        "node-0".into(),
        "none".into(),
    );
    again
        .apply("many-summary", &summary(0, "2026-11-22T07:00:00Z"))
        .await
        .unwrap();
    cluster::operator_creates_summary(&client, &ns.name, "many-summary").await;

    let cm = api.get("many-summary").await.unwrap();
    let data = cm.data.unwrap_or_default();
    assert_eq!(data.len(), WRITERS, "every key is there");
    for i in 0..WRITERS {
        let s = NodeSummary::from_yaml(&data[&format!("node-{i}")]).unwrap();
        let want = if i == 0 {
            "2026-11-22T07:00:00Z"
        } else {
            "2026-11-22T06:00:00Z"
        };
        assert_eq!(s.run_at, want, "node-{i}");
        assert_eq!(s.failed().next().unwrap().2, format!("node {i}"));
    }
    let managers: Vec<String> = cm
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.iter().any(|m| m == "combo-runner/node-199"),
        "{managers:?}"
    );
    assert!(
        managers.iter().any(|m| m == "combo-operator"),
        "{managers:?}"
    );
    ns.delete_and_wait().await;
}
