//! The harness itself: a DaemonSet of a project image lands one Running pod
//! per simulated node, its process runs with the pod's env and ServiceAccount
//! identity in the pod's own network namespace, and deleting the DaemonSet
//! stops the processes.

use std::process::Command;
use std::time::Duration;

use combo_e2e::*;
use combo_testkit::netplan;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

const SCRIPT: &str = r#"
echo "env pod=$POD_NAME node=$NODE_NAME ip=$POD_IP host=$HOST_IP"
echo "eth0 $(ip -4 -o addr show eth0 | awk '{print $4}')"
sa=/var/run/secrets/kubernetes.io/serviceaccount
curl -s --cacert $sa/ca.crt -H "Authorization: Bearer $(cat $sa/token)" \
  "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/kube-system/secrets" | grep '"message"'
echo $$ > /work/pid
exec sleep 3600
"#;

fn daemonset(ns: &str) -> DaemonSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {
                    "terminationGracePeriodSeconds": 2,
                    "volumes": [{"name": "work", "emptyDir": {}}],
                    "containers": [{
                        "name": "probe",
                        "image": "ghcr.io/kube-combo/combo-runner:v0.1.0",
                        "command": ["/bin/sh", "-c", SCRIPT],
                        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
                        "env": [
                            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}
                        ]
                    }]
                }
            }
        }
    }))
    .unwrap()
}

fn ping_from(netns: &str, ip: &str) -> bool {
    Command::new("ip")
        .args(["netns", "exec", netns, "ping", "-c1", "-W2", ip])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[tokio::test]
async fn daemonset_of_a_project_image_runs_one_process_per_node_and_stops_on_delete() {
    let ns = namespace("smoke").await;
    let client = client().await;
    let dss: Api<DaemonSet> = Api::namespaced(client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    dss.create(&PostParams::default(), &daemonset(&ns.name))
        .await
        .unwrap();

    let nodes = nodes();
    wait_for(Duration::from_secs(90), "a Ready pod per node", || async {
        let list = pods.list(&ListParams::default()).await?;
        let ready = list.items.iter().filter(|p| running_and_ready(p)).count();
        Ok(ready == nodes.len())
    })
    .await
    .unwrap();

    let list = pods.list(&ListParams::default()).await.unwrap().items;
    let mut placed: Vec<String> = list
        .iter()
        .map(|p| p.spec.as_ref().unwrap().node_name.clone().unwrap())
        .collect();
    placed.sort();
    assert_eq!(placed, nodes, "one pod on every node");

    let mut pids = Vec::new();
    for p in &list {
        let name = p.metadata.name.clone().unwrap();
        let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
        let index = netplan::node_index(&node).unwrap();
        let ip = p.status.as_ref().unwrap().pod_ip.clone().unwrap();
        assert!(
            ip.starts_with(netplan::node_subnet(index).trim_end_matches("0/24")),
            "{name} on {node} has {ip}"
        );

        let mut log = String::new();
        wait_for(Duration::from_secs(30), "the probe's output", || {
            log = pod_log(&ns.name, &name, "probe");
            let done = log.contains("message");
            async move { Ok(done) }
        })
        .await
        .unwrap();
        assert!(
            log.contains(&format!(
                "env pod={name} node={node} ip={ip} host={}",
                netplan::node_ip(index)
            )),
            "{log}"
        );
        assert!(log.contains(&format!("eth0 {ip}/24")), "{log}");
        assert!(
            log.contains(&format!(
                "User \\\"system:serviceaccount:{}:default\\\" cannot list",
                ns.name
            )),
            "the process calls the API server as its ServiceAccount: {log}"
        );

        let pid_file = cluster_dir()
            .join("pods")
            .join(&ns.name)
            .join(&name)
            .join("volumes/work/pid");
        let mut pid = 0;
        wait_for(Duration::from_secs(10), "the pid file", || {
            pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            async move { Ok(pid > 0) }
        })
        .await
        .unwrap();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        pids.push(pid);

        // Every other pod, on its own node, is reachable from this pod.
        let netns = pod_netns(p.metadata.uid.as_deref().unwrap());
        for other in &list {
            let oip = other.status.as_ref().unwrap().pod_ip.clone().unwrap();
            if oip != ip {
                assert!(ping_from(&netns, &oip), "{name} cannot reach {oip}");
            }
        }
        assert!(
            ping_from(&netns, netplan::HOST_IP),
            "{name} cannot reach the host"
        );
    }

    dss.delete("probe", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_for(Duration::from_secs(90), "the pods to be gone", || async {
        Ok(pods.list(&ListParams::default()).await?.items.is_empty())
    })
    .await
    .unwrap();
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .map(|(_, r)| r.trim_start().chars().next());
        assert!(
            matches!(state, None | Some(Some('Z'))),
            "process {pid} still runs after its pod was deleted"
        );
    }
}
