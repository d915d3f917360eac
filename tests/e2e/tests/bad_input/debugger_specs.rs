//! Generated Debugger specs (docs/testing.md, "Bad input"): every field is
//! mostly plausible and sometimes hostile; whatever a spec asks for, it
//! selects no node.

use proptest::prelude::*;
use serde_json::{json, Value};

/// Created by a generated Debugger string if it ever reached a shell.
pub const PWNED: &str = "/tmp/kube-combo-pwned";

/// Strings that have broken tools before: empty, shell metacharacters,
/// newlines, long (300 characters, 4 KB), non-ASCII, and plain names.
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z][a-z0-9-]{0,15}",
        Just(format!("$(touch {PWNED})")),
        Just("`id`; rm -rf / #".to_string()),
        Just("a\nb\r\nc\u{0}".to_string()),
        Just("x".repeat(300)),
        Just("y".repeat(4096)),
        Just("-n".to_string()),
        "\\PC{0,24}",
    ]
}

/// Mostly a plain name, sometimes [`nasty`].
fn name() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-z][a-z0-9-]{0,15}", 1 => nasty()]
}

fn run_at() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("@daily".to_string()),
        Just("*/5 * * * *".to_string()),
        Just("61 * * * *".to_string()),
        Just("0 0 30 2 *".to_string()),
        Just("2024-02-29T12:00:00Z".to_string()),
        Just("2023-02-29T12:00:00Z".to_string()),
        Just("1970-01-01T00:00:00Z".to_string()),
        Just("9999-12-31T23:59:59Z".to_string()),
        Just("2026-13-01T00:00:00Z".to_string()),
        nasty(),
    ]
}

fn quantity() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop_oneof![Just(json!("100m")), Just(json!("128Mi"))],
        1 => Just(json!("-1")),
        1 => Just(json!(0)),
        1 => Just(json!(1.5)),
        1 => nasty().prop_map(Value::from),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        12 => (1i64..100).prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(json!(0)),
        1 => Just(json!("60")),
        1 => Just(json!(2.5)),
    ]
}

/// One generated spec. Whatever it asks for, it selects no node (no pod
/// runs): the selector always carries a label no node has, and a Pod
/// Debugger's nodeName, when it is a name at all, names no node.
pub fn spec() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            4 => prop_oneof![Just(json!("daemonset")), Just(json!("pod"))],
            1 => nasty().prop_map(Value::from)
        ],
        run_at(),
        name(),
        (any::<bool>(), name()),
        (any::<bool>(), name()),
        proptest::collection::vec(
            prop_oneof![
                4 => prop_oneof![Just(json!("disk")), Just(json!("custom"))],
                1 => nasty().prop_map(Value::from)
            ],
            0..4,
        ),
        (quantity(), quantity()),
        (number(), number()),
        prop_oneof![3 => Just(String::new()), 1 => name()],
        (any::<bool>(), name()),
    )
        .prop_map(
            |(kind, run_at, node, (pinger_on, pinger), (cm_on, cm), cats, (cpu, mem), (timeout, keep), summary, (sys, label))| {
                json!({
                    "workloadType": kind,
                    "runAt": run_at,
                    "nodeName": if node.is_empty() { "nowhere".to_string() } else { format!("nowhere-{node}") },
                    "enablePinger": pinger_on,
                    "pinger": pinger,
                    "enableConfigMap": cm_on,
                    "configMap": cm,
                    "categories": cats,
                    "cpu": cpu,
                    "memory": mem,
                    "scriptTimeoutSeconds": timeout,
                    "errlogRetention": keep,
                    "summaryConfigMap": summary,
                    "enableSys": sys,
                    "selector": {"kubecombo.io/bad-input": "none", "kubecombo.io/x": label},
                })
            },
        )
}
