//! A runner image from a registry that asks for a password: the kubelets
//! of the real nodes pull it only with the Debugger's `imagePullSecrets`.
//! The harness serves the cluster's images again on
//! [`PRIVATE_REGISTRY`] with basic authentication, its user and password
//! in `<cluster dir>/private-registry.auth`
//! (docs/testing.md, "Real nodes").

use anyhow::{Context as _, Result};
use combo_api::{Category, Debugger};
use combo_e2e::fixtures::DebuggerBuilder;
use combo_e2e::runs::now_rfc3339;
use combo_e2e::{
    apply_yaml, client, cluster_dir, install_from_registry, kubectl_ok, namespace,
    pods_on_every_real_node, real_cluster_or_skip, real_nodes, wait_for, wait_run_within,
};
use combo_testkit::netplan::PRIVATE_REGISTRY;
use combo_testkit::suite::Case;
use kube::Api;

use crate::helpers::WAIT;

const AREA: &str = "private registry";

/// The `Ready` condition of Debugger `name`: status, reason and message.
async fn ready(dbgs: &Api<Debugger>, name: &str) -> Result<(String, String, String)> {
    let d = dbgs.get(name).await?;
    Ok(d.status
        .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Ready"))
        .map(|c| (c.status, c.reason, c.message))
        .unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runner_image_of_a_registry_with_a_password_is_pulled_with_the_debuggers_image_pull_secrets(
) -> Result<()> {
    let test = "a_runner_image_of_a_registry_with_a_password_is_pulled_with_the_debuggers_image_pull_secrets";
    if !real_cluster_or_skip(test) {
        return Ok(());
    }
    let case = Case::new(
        AREA,
        "pull refused without imagePullSecrets and named in the status, a run with them",
        2,
    );
    install_from_registry();
    let auth = std::fs::read_to_string(cluster_dir().join("private-registry.auth")).context(
        "the harness writes the private registry's user:password (cluster.sh up --real)",
    )?;
    let (user, password) = auth
        .trim()
        .split_once(':')
        .context("private-registry.auth holds user:password")?;
    let ns = namespace("real-pull").await;
    let c = client().await;
    let dbgs: Api<Debugger> = Api::namespaced(c.clone(), &ns.name);
    let image = format!("{PRIVATE_REGISTRY}/kube-combo/runner:dev");
    let debugger = |run_at: &str| {
        DebuggerBuilder::new("pull")
            .image(&image)
            .categories(&[Category::Mem])
            .script_timeout(30)
            .run_at(run_at)
    };

    // Without credentials the registry answers 401: the kubelets cannot
    // pull, and the Debugger's condition says so, with the registry's word.
    // (No node has pulled this name before: a node holding the image would
    // start the pod without asking the registry.)
    apply_yaml(&ns.name, &debugger(&now_rfc3339()).yaml())?;
    let refused = |message: &str| {
        (message.contains("ErrImagePull") || message.contains("ImagePullBackOff"))
            && message.to_lowercase().contains("unauthorized")
    };
    wait_for(
        WAIT,
        "Debugger pull WorkloadNotReady naming the failed pull and the registry's 401",
        || async {
            let (status, reason, message) = ready(&dbgs, "pull").await?;
            Ok(status == "False" && reason == "WorkloadNotReady" && refused(&message))
        },
    )
    .await?;
    let (_, _, refused) = ready(&dbgs, "pull").await?;
    println!("{AREA}: without imagePullSecrets: {refused}");
    assert!(
        refused.contains(&image),
        "the message names the image: {refused}"
    );

    // The same Debugger with a Secret holding the password: the pods pull,
    // run, and the run lands in the summary of every real node.
    kubectl_ok(&[
        "create",
        "secret",
        "docker-registry",
        "regcred",
        "-n",
        &ns.name,
        &format!("--docker-server={PRIVATE_REGISTRY}"),
        &format!("--docker-username={user}"),
        &format!("--docker-password={password}"),
    ])?;
    let run_at = now_rfc3339();
    apply_yaml(
        &ns.name,
        &debugger(&run_at).image_pull_secrets(&["regcred"]).yaml(),
    )?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "pull").await?;
    for (node, pod) in &pods {
        let spec = pod.spec.as_ref().context("a pod has a spec")?;
        let runner = spec.containers.iter().find(|k| k.name == "runner");
        assert_eq!(
            runner.and_then(|k| k.image.as_deref()),
            Some(image.as_str()),
            "{node}: the runner's image"
        );
        let secrets: Vec<&str> = spec
            .image_pull_secrets
            .iter()
            .flatten()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(secrets, ["regcred"], "{node}: the pod's imagePullSecrets");
    }
    let summary = wait_run_within(&c, &ns.name, "pull-summary", &run_at, WAIT).await?;
    let nodes = real_nodes();
    assert!(
        nodes.iter().all(|n| summary.contains_key(n)),
        "every real node reported {run_at}: {:?}",
        summary.keys().collect::<Vec<_>>()
    );
    wait_for(WAIT, "Debugger pull Ready=True", || async {
        Ok(ready(&dbgs, "pull").await?.0 == "True")
    })
    .await?;
    case.done(2, 0);
    Ok(())
}
