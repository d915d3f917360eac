//! Many runners writing one summary ConfigMap at once, against the test
//! control plane. Run with `COMBO_E2E_DIR=DIR cargo test -p combo-runner
//! --test cluster_writes -- --ignored` after `tests/e2e/cluster.sh up DIR`.

#[path = "support/cluster.rs"]
mod cluster;

use combo_api::{ItemResult, NodeSummary};
use combo_runner::publish::Publisher;
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

    let writes = (0..WRITERS).map(|i| {
        let p = Publisher::new(
            client.clone(),
            ns.name.clone(),
            format!("node-{i}"),
            "none".into(),
        );
        async move {
            p.apply("many-summary", &summary(i, "2026-11-22T06:00:00Z"))
                .await
                .map_err(|e| format!("node-{i}: {e}"))
        }
    });
    let results = futures::future::join_all(writes).await;
    let failures: Vec<_> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{failures:?}");

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

    let cm = Api::<ConfigMap>::namespaced(client.clone(), &ns.name)
        .get("many-summary")
        .await
        .unwrap();
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
}
