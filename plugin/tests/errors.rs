//! What a user sees when `kubectl-combo` fails: one line on stderr naming
//! the binary, and the documented exit status; and what `kubectl combo run`
//! asks of the API server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use combo_testkit::binary::{assert_one_line, run, NO_CLUSTER};

const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-combo");

#[test]
fn the_plugin_without_a_kubeconfig_is_one_line_and_exit_one() {
    let (code, stdout, stderr) = run(PLUGIN, &["status"], &NO_CLUSTER);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_one_line(&stderr, "kubectl-combo: no usable kubeconfig: ");
}

#[test]
fn a_bad_plugin_flag_value_is_one_line_and_exit_two() {
    let (code, _, stderr) = run(
        PLUGIN,
        &["errlog", "x", "--node", "n", "--category", "cpu"],
        &[],
    );
    assert_eq!(code, 2);
    assert_one_line(
        &stderr,
        "kubectl-combo: invalid value 'cpu' for '--category",
    );
}

#[test]
fn the_plugin_prints_one_line_whatever_rust_backtrace_says_and_more_with_debug() {
    let mut env = NO_CLUSTER.to_vec();
    env.push(("RUST_BACKTRACE", "full"));
    let (code, stdout, stderr) = run(PLUGIN, &["status"], &env);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_one_line(&stderr, "kubectl-combo: no usable kubeconfig: ");
    let (code, _, stderr) = run(PLUGIN, &["status", "--debug"], &env);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Caused by"),
        "--debug shows the chain: {stderr}"
    );
}

#[test]
fn a_missing_plugin_argument_is_named_and_exits_two() {
    let (code, _, stderr) = run(PLUGIN, &["errlog", "ds", "--node", "real-1"], &[]);
    assert_eq!(code, 2);
    assert_one_line(
        &stderr,
        "kubectl-combo: the following required arguments were not provided: --category <CATEGORY>",
    );
}

#[test]
fn a_run_that_is_neither_a_run_id_nor_a_time_is_a_usage_error() {
    for (value, says) in [
        (
            "garbage",
            "\"garbage\" is neither a run id like 20261122T060000Z nor an RFC 3339 time",
        ),
        (
            "2026-13-01T00:00:00Z",
            "is not a valid RFC 3339 time: month 13 is out of range 1-12",
        ),
    ] {
        let (code, _, stderr) = run(
            PLUGIN,
            &[
                "errlog",
                "x",
                "--node",
                "n",
                "--category",
                "disk",
                "--run",
                value,
            ],
            &NO_CLUSTER,
        );
        assert_eq!(code, 2, "{stderr}");
        assert_one_line(
            &stderr,
            &format!("kubectl-combo: invalid value '{value}' for '--run <RUN>': "),
        );
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// An API server on loopback that answers every request with `answer(method,
/// path, body)`: (status code, JSON body), one request per connection. Returns
/// the environment of a kubeconfig that points at it (namespace `ops`).
fn api_server(answer: fn(&str, &str, &str) -> (u16, String)) -> Vec<(&'static str, String)> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut head = Vec::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                head.push(std::mem::take(&mut line));
            }
            let length = head
                .iter()
                .find_map(|h| {
                    h.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0usize);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let first: Vec<&str> = head.first().map_or(vec![], |l| l.split(' ').collect());
            let body = String::from_utf8_lossy(&body);
            let (code, json) = answer(
                first.first().unwrap_or(&""),
                first.get(1).unwrap_or(&""),
                &body,
            );
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                json.len()
            );
        }
    });
    let kubeconfig = std::env::temp_dir().join(format!(
        "kubectl-combo-errors-{}-{port}.yaml",
        std::process::id()
    ));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"http://127.0.0.1:{port}\"}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u, namespace: ops}}}}]\ncurrent-context: x\n"
        ),
    )
    .expect("kubeconfig written");
    vec![
        ("KUBECONFIG", kubeconfig.display().to_string()),
        ("KUBERNETES_SERVICE_HOST", String::new()),
    ]
}

/// The API server's answer for an object that does not exist; namespace
/// `ops` exists.
fn not_found(_method: &str, path: &str, _body: &str) -> (u16, String) {
    if path == "/api/v1/namespaces/ops" {
        return (200, NAMESPACE_OPS.to_string());
    }
    missing(path)
}

const NAMESPACE_OPS: &str = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ops"}}"#;

/// A 404 for what `path` names.
fn missing(path: &str) -> (u16, String) {
    let name = path
        .split('?')
        .next()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    (
        404,
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"\"{name}\" not found","reason":"NotFound","code":404}}"#
        ),
    )
}

/// Debugger `ops/none` as the API server has it: it selects no node.
fn selecting_no_node() -> serde_json::Value {
    serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger",
        "metadata": {"name": "none", "namespace": "ops", "generation": 1},
        "spec": {"runAt": "", "selector": {"no-such-label": "x"}},
        "status": {"observedGeneration": 1, "desiredPods": 0, "readyPods": 0,
            "completedNodes": 0, "failedItems": 0,
            "conditions": [{"type": "Ready", "status": "False", "reason": "NoNodesSelected",
                "message": "the selector, tolerations and affinity match no node: nothing runs",
                "lastTransitionTime": "2026-11-22T06:00:00Z"}]}})
}

#[test]
fn run_wait_on_a_debugger_selecting_no_node_returns_at_once_with_exit_five() {
    let env = api_server(|method, path, _| match (method, path) {
        ("PATCH", p) if p.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggers/none?") => {
            (200, selecting_no_node().to_string())
        }
        (_, p) => missing(p),
    });
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = run(PLUGIN, &["run", "none", "--wait"], &env_of(&env));
    assert_eq!(code, 5, "{stdout}{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "not its timeout"
    );
    assert!(stdout.contains("requested on every node"), "{stdout}");
    assert_one_line(&stderr, "kubectl-combo: run ");
    assert!(
        stderr.contains("selects no node (Ready=False, NoNodesSelected)"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn run_wait_on_a_debugger_deleted_meanwhile_exits_three_naming_it() {
    // The patch finds it waiting for its pods; the next read finds none.
    let env = api_server(|method, path, _| match method {
        "PATCH" => {
            let mut d = selecting_no_node();
            d["metadata"]["name"] = "gone".into();
            d["status"]["conditions"][0]["reason"] = "WorkloadNotReady".into();
            (200, d.to_string())
        }
        _ if path == "/api/v1/namespaces/ops" => (200, NAMESPACE_OPS.to_string()),
        _ => missing(path),
    });
    let (code, stdout, stderr) = run(PLUGIN, &["run", "gone", "--wait"], &env_of(&env));
    assert_eq!(code, 3, "{stdout}{stderr}");
    // The progress line of the first look, then the one-line error.
    assert_eq!(
        stderr.lines().last(),
        Some("kubectl-combo: no Debugger \"gone\" in namespace ops (kubectl combo status -n ops lists them)"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn a_timeout_without_wait_is_a_usage_error() {
    let (code, _, stderr) = run(PLUGIN, &["run", "d", "--timeout", "5"], &NO_CLUSTER);
    assert_eq!(code, 2, "{stderr}");
    assert_one_line(
        &stderr,
        "kubectl-combo: the following required arguments were not provided: --wait",
    );
}

#[test]
fn status_of_a_namespace_that_does_not_exist_exits_three() {
    let env = api_server(|_, path, _| {
        if path.starts_with("/apis/kubecombo.io/v1/namespaces/nosuch/debuggers") {
            (200, r#"{"apiVersion":"kubecombo.io/v1","kind":"DebuggerList","metadata":{},"items":[]}"#.to_string())
        } else {
            missing(path)
        }
    });
    let (code, stdout, stderr) = run(PLUGIN, &["status", "-n", "nosuch"], &env_of(&env));
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert_one_line(
        &stderr,
        "kubectl-combo: no namespace \"nosuch\" (kubectl get namespaces lists them)",
    );
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn status_as_json_is_one_document_with_the_documented_fields() {
    let env = api_server(|_, path, _| {
        if path.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggers") {
            let list = serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerList",
                "metadata": {}, "items": [selecting_no_node()]});
            (200, list.to_string())
        } else {
            missing(path)
        }
    });
    let (code, stdout, stderr) = run(PLUGIN, &["status", "-o", "json"], &env_of(&env));
    assert_eq!(code, 0, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    let d = &doc["debuggers"][0];
    assert_eq!(d["name"], "none");
    assert_eq!(d["namespace"], "ops");
    assert_eq!(d["desiredPods"], 0);
    assert_eq!(d["ready"]["reason"], "NoNodesSelected");
    let (code, yaml, _) = run(PLUGIN, &["status", "-o", "yaml"], &env_of(&env));
    assert_eq!(code, 0);
    assert!(yaml.starts_with("debuggers:\n- namespace: ops\n"), "{yaml}");
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn the_kubeconfig_and_context_flags_choose_the_cluster() {
    let env = api_server(not_found);
    // The kubeconfig given by flag, not by KUBECONFIG; its context by name.
    let (code, _, stderr) = run(
        PLUGIN,
        &[
            "--kubeconfig",
            &env[0].1,
            "--context",
            "x",
            "summary",
            "nosuch",
        ],
        &NO_CLUSTER,
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("in namespace ops"),
        "the context's namespace: {stderr}"
    );
    let (code, _, stderr) = run(
        PLUGIN,
        &["--kubeconfig", &env[0].1, "--context", "nosuch", "status"],
        &NO_CLUSTER,
    );
    assert_eq!(code, 1, "{stderr}");
    assert_one_line(&stderr, "kubectl-combo: no usable kubeconfig");
    assert!(stderr.contains("nosuch"), "{stderr}");
    let _ = std::fs::remove_file(&env[0].1);
}

fn env_of<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn a_debugger_that_does_not_exist_is_named_and_exits_three() {
    let env = api_server(not_found);
    for args in [
        vec!["errlog", "nosuch", "--node", "real-1", "--category", "disk"],
        vec!["summary", "nosuch"],
        vec!["run", "nosuch"],
        vec!["mesh", "nosuch", "--html", "/nonexistent/mesh.html"],
    ] {
        let (code, stdout, stderr) = run(PLUGIN, &args, &env_of(&env));
        assert_eq!(code, 3, "{args:?}: {stdout}{stderr}");
        assert_one_line(
            &stderr,
            "kubectl-combo: no Debugger \"nosuch\" in namespace ops (kubectl combo status -n ops lists them)",
        );
    }
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn a_refused_list_says_what_was_listed_and_exits_one() {
    let env = api_server(|_, _, _| {
        (
            403,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"debuggers.kubecombo.io is forbidden: User \"u\" cannot list resource","reason":"Forbidden","code":403}"#.to_string(),
        )
    });
    let (code, stdout, stderr) = run(PLUGIN, &["status"], &env_of(&env));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_one_line(
        &stderr,
        "kubectl-combo: listing the Debuggers of namespace ops: debuggers.kubecombo.io is forbidden",
    );
    let _ = std::fs::remove_file(&env[0].1);
}

#[test]
fn kubectl_combo_run_writes_only_the_run_now_annotation_as_combo_plugin() {
    // The API server takes the patch only as `kubectl combo run` must send
    // it: a merge patch of the annotation alone, by field manager
    // combo-plugin; anything else is refused with 422.
    let env = api_server(|method, path, body| {
        let patch: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let asked = patch["metadata"]["annotations"]["kubecombo.io/run-now"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let only_the_annotation = patch.as_object().is_some_and(|o| o.len() == 1)
            && patch["metadata"].as_object().is_some_and(|o| o.len() == 1)
            && asked.ends_with('Z')
            && asked.len() == "2026-11-22T06:30:12Z".len();
        if method != "PATCH"
            || !path.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggers/check?")
            || !path.contains("fieldManager=combo-plugin")
            || !only_the_annotation
        {
            return (
                422,
                format!(
                    r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"unexpected {method} {path} {}","code":422}}"#,
                    body.replace('"', "'")
                ),
            );
        }
        let dbg = serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger",
            "metadata": {"name": "check", "namespace": "ops", "annotations": {"kubecombo.io/run-now": asked}},
            "spec": {"runAt": "0 */6 * * *"}});
        (200, dbg.to_string())
    });
    let (code, stdout, stderr) = run(PLUGIN, &["run", "check"], &env_of(&env));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("debugger.kubecombo.io/check: run 2")
            && stdout.contains(" requested on every node (kubecombo.io/run-now=")
            && stdout
                .trim_end()
                .ends_with("runAt \"0 */6 * * *\" is unchanged"),
        "{stdout}"
    );
    let _ = std::fs::remove_file(&env[0].1);
}

/// Debugger `quiet` runs no pinger; Debugger `pinging` names Pinger
/// `nosuch`, which does not exist.
fn mesh_objects(method: &str, path: &str, body: &str) -> (u16, String) {
    let dbg = |name: &str, spec: serde_json::Value| {
        let d = serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "Debugger",
            "metadata": {"name": name, "namespace": "ops"}, "spec": spec});
        (200, d.to_string())
    };
    match path {
        "/apis/kubecombo.io/v1/namespaces/ops/debuggers/quiet" => {
            dbg("quiet", serde_json::json!({"enablePinger": false}))
        }
        "/apis/kubecombo.io/v1/namespaces/ops/debuggers/pinging" => dbg(
            "pinging",
            serde_json::json!({"enablePinger": true, "pinger": "nosuch"}),
        ),
        _ => not_found(method, path, body),
    }
}

#[test]
fn kubectl_combo_mesh_of_a_debugger_without_pinger_exits_one_and_of_a_missing_pinger_three() {
    let env = api_server(mesh_objects);
    let (code, stdout, stderr) = run(PLUGIN, &["mesh", "quiet"], &env_of(&env));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_one_line(
        &stderr,
        "kubectl-combo: Debugger ops/quiet runs no pinger (spec.enablePinger is false or spec.pinger is empty)",
    );
    let (code, stdout, stderr) = run(PLUGIN, &["mesh", "pinging", "--all"], &env_of(&env));
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert_one_line(
        &stderr,
        "kubectl-combo: no Pinger \"nosuch\" in namespace ops, which Debugger pinging names",
    );
    assert!(stdout.is_empty(), "{stdout}");
    let _ = std::fs::remove_file(&env[0].1);
}
