//! A pod of a Debugger's DaemonSet as the API server stores and sends it:
//! the operator's own pod template, with what the DaemonSet controller,
//! the API server's defaults and admission, and the kubelet add, and the
//! managed fields of the two writers (Kubernetes 1.30; no fields of alpha
//! or later beta features).

use combo_operator::cli::{DEFAULT_PINGER_IMAGE, DEFAULT_RUNNER_IMAGE};
use combo_operator::core::images::Images;
use combo_operator::core::validate::Valid;
use combo_operator::workload::render::{workload, Workload};
use combo_testkit::fixtures::{debugger, pinger};
use serde_json::{json, Map, Value};

const TIME: &str = "2026-01-01T06:00:00Z";

/// The pod template of Debugger `node-check` (namespace `ops`) with the
/// pinger on and every pod followed (`maxPeers: 0`), as the operator
/// renders it: `{metadata, spec}`.
pub fn template() -> Value {
    let dbg = debugger("ops", "node-check")
        .uid("5f0c3a4e-8d1b-4c2a-9e7f-1b2c3d4e5f60")
        .pinger("mesh")
        .build();
    let pinger = pinger("ops", "mesh").peers(true).max_peers(0).build();
    let images = Images {
        runner: DEFAULT_RUNNER_IMAGE.into(),
        pinger: DEFAULT_PINGER_IMAGE.into(),
        pull_secrets: Vec::new(),
    };
    let account = Some("0d4f6a2b-3c5e-4f70-8a9b-c1d2e3f40516");
    let run_at = combo_api::RunAt::parse(&dbg.spec.run_at).expect("a valid runAt");
    let valid = Valid::of(&dbg, run_at, Some(&pinger), &images);
    let Workload::DaemonSet(ds) = workload(&dbg, &valid, account) else {
        panic!("a Debugger's default workload is a DaemonSet");
    };
    serde_json::to_value(ds.spec.expect("rendered with a spec").template).expect("serialises")
}

/// The pod of `template` on node `worker-{i:05}.example.internal` with
/// addresses `ips` (the node has the same families).
pub fn pod(template: &Value, i: usize, ips: &[&str]) -> Value {
    let node = format!("worker-{i:05}.example.internal");
    let mut meta = template["metadata"].clone();
    meta["generateName"] = json!("node-check-");
    meta["labels"]["controller-revision-hash"] = json!("7c9d5b8f64");
    meta["labels"]["pod-template-generation"] = json!("1");
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet",
        "name": "node-check", "uid": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
        "controller": true, "blockOwnerDeletion": true}]);
    let mut spec = template["spec"].clone();
    defaults(&mut spec);
    // The DaemonSet controller pins the pod to its node and tolerates the
    // node conditions a DaemonSet pod survives.
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    let tolerations = spec["tolerations"].as_array_mut().map(std::mem::take);
    let mut tolerations = tolerations.unwrap_or_default();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
    }
    spec["tolerations"] = json!(tolerations);
    let controller = json!({"metadata": meta.clone(), "spec": spec.clone()});
    service_account_token(&mut spec, i);
    spec["nodeName"] = json!(node);
    let status = status(&spec, ips);
    meta["name"] = json!(format!("node-check-{}", suffix(i)));
    meta["namespace"] = json!("ops");
    meta["uid"] = json!(format!("3e2d1c0b-a987-4654-8321-{i:012x}"));
    meta["resourceVersion"] = json!("48213977");
    meta["creationTimestamp"] = json!(TIME);
    meta["managedFields"] = json!([
        managed("kube-controller-manager", &controller, None),
        managed(
            "kubelet",
            &json!({"status": status.clone()}),
            Some("status")
        ),
    ]);
    json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status})
}

/// The five characters a generated name ends with.
fn suffix(i: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|k| ALPHABET[(i * 7 + k * 13) % ALPHABET.len()] as char)
        .collect()
}

/// The API server's defaults for what the template leaves out.
fn defaults(spec: &mut Value) {
    let pod = spec.as_object_mut().expect("a pod spec");
    for (k, v) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("securityContext", json!({})),
        ("terminationGracePeriodSeconds", json!(30)),
        ("enableServiceLinks", json!(true)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
        ("priority", json!(0)),
    ] {
        pod.entry(k).or_insert(v);
    }
    pod.insert("serviceAccount".into(), pod["serviceAccountName"].clone());
    for c in pod["containers"].as_array_mut().into_iter().flatten() {
        let c = c.as_object_mut().expect("a container");
        let latest = c["image"].as_str().is_some_and(|i| i.ends_with(":latest"));
        let pull = if latest { "Always" } else { "IfNotPresent" };
        c.entry("imagePullPolicy").or_insert(json!(pull));
        c.entry("terminationMessagePath")
            .or_insert(json!("/dev/termination-log"));
        c.entry("terminationMessagePolicy").or_insert(json!("File"));
        for p in c
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            p.as_object_mut()
                .map(|p| p.entry("protocol").or_insert(json!("TCP")));
        }
        for e in c
            .get_mut("env")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(r) = e
                .pointer_mut("/valueFrom/fieldRef")
                .and_then(Value::as_object_mut)
            {
                r.entry("apiVersion").or_insert(json!("v1"));
            }
        }
    }
}

/// The ServiceAccount admission's projected token volume, mounted in
/// every container.
fn service_account_token(spec: &mut Value, i: usize) {
    let name = format!("kube-api-access-{}", suffix(i + 1));
    let volume = json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}});
    let mount = json!({"name": name, "readOnly": true,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"});
    push(spec, "volumes", volume);
    for c in spec["containers"].as_array_mut().into_iter().flatten() {
        push(c, "volumeMounts", mount.clone());
    }
}

fn push(v: &mut Value, list: &str, item: Value) {
    match v.get_mut(list).and_then(Value::as_array_mut) {
        Some(l) => l.push(item),
        None => v[list] = json!([item]),
    }
}

/// What the kubelet reports for a running, ready pod of `spec`.
fn status(spec: &Value, ips: &[&str]) -> Value {
    let conditions: Vec<Value> = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    .iter()
    .map(
        |t| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME}),
    )
    .collect();
    let containers: Vec<Value> = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(k, c)| {
            let image = c["image"].as_str().unwrap_or_default();
            let repo = image.rsplit_once(':').map_or(image, |(r, _)| r);
            json!({"name": c["name"], "image": image,
                "imageID": format!("{repo}@sha256:{:064x}", k + 1),
                "containerID": format!("containerd://{:064x}", 0xabc0 + k),
                "state": {"running": {"startedAt": TIME}}, "lastState": {},
                "ready": true, "restartCount": 0, "started": true})
        })
        .collect();
    let node_ips = ["10.0.17.23", "fd00:10:0:11::17"];
    let listed = |a: &[&str]| a.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
    let guaranteed = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|c| {
            let r = &c["resources"];
            r["limits"].is_object() && r["limits"] == r["requests"]
        });
    json!({"phase": "Running", "conditions": conditions,
        "hostIP": node_ips[0], "hostIPs": listed(&node_ips[..ips.len()]),
        "podIP": ips[0], "podIPs": listed(ips), "startTime": TIME,
        "containerStatuses": containers,
        "qosClass": if guaranteed { "Guaranteed" } else { "Burstable" }})
}

/// A managedFields entry of `manager` for the fields of `wrote`.
fn managed(manager: &str, wrote: &Value, subresource: Option<&str>) -> Value {
    let top: Map<String, Value> = wrote
        .as_object()
        .expect("an object")
        .iter()
        .map(|(k, v)| (format!("f:{k}"), fields(v, false)))
        .collect();
    let mut entry = json!({"manager": manager, "operation": "Update", "apiVersion": "v1",
        "time": TIME, "fieldsType": "FieldsV1", "fieldsV1": top});
    if let Some(s) = subresource {
        entry["subresource"] = json!(s);
    }
    entry
}

/// The field set (FieldsV1) of `v`: a map's members as `f:` keys, the
/// items of a list with a merge key as `k:` keys, other lists whole.
/// `own` marks a map the writer set itself (`"."`).
fn fields(v: &Value, own: bool) -> Value {
    let Value::Object(m) = v else {
        return json!({});
    };
    let mut set = Map::new();
    if own && !m.is_empty() {
        set.insert(".".into(), json!({}));
    }
    for (k, x) in m {
        let member = match (x, merge_key(k)) {
            (Value::Array(items), Some(key)) => items
                .iter()
                .map(|item| (item_key(item, key), fields(item, true)))
                .collect::<Map<_, _>>()
                .into(),
            _ => fields(x, true),
        };
        set.insert(format!("f:{k}"), member);
    }
    set.into()
}

/// The merge key of the list field `name` of a Pod, if it has one.
fn merge_key(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "containers" | "initContainers" | "env" | "volumes" | "imagePullSecrets" => &["name"],
        "volumeMounts" => &["mountPath"],
        "ports" => &["containerPort", "protocol"],
        "conditions" => &["type"],
        "podIPs" | "hostIPs" => &["ip"],
        "ownerReferences" => &["uid"],
        _ => return None,
    })
}

/// `k:{"name":"runner"}`.
fn item_key(item: &Value, key: &[&str]) -> String {
    let k: Map<String, Value> = key
        .iter()
        .map(|f| (f.to_string(), item[*f].clone()))
        .collect();
    format!("k:{}", Value::Object(k))
}
