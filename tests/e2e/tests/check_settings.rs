//! `checkSettings` at `kubectl apply` (docs/reference.md, "Debugger"): the
//! API server takes every setting at every edge of its kind and refuses a
//! value past one, naming the setting; kubectl refuses an unknown name; a
//! client that skips validation has the unknown name dropped. `kubectl
//! explain` opens with the kinds' own descriptions.

use anyhow::Result;
use combo_api::settings::SETTINGS;
use combo_e2e::{install_operator, kubectl, kubectl_ok, namespace};

/// A Debugger `name` (idle: no runAt) with these settings.
fn debugger(name: &str, settings: &[(&str, &str)]) -> String {
    let mut yaml = format!(
        "apiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata:\n  name: {name}\nspec:\n  \
         workloadType: daemonset\n  categories: [disk]\n  checkSettings:\n"
    );
    for (k, v) in settings {
        yaml.push_str(&format!("    {k}: {}\n", quoted(v)));
    }
    yaml
}

/// `v` as a YAML double-quoted string, control characters escaped (YAML
/// allows none of them raw, so kubectl would refuse the file instead of
/// the API server refusing the value).
fn quoted(v: &str) -> String {
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `kubectl apply` of `yaml` in `ns` with `extra` arguments: success, and stderr.
fn apply(ns: &str, yaml: &str, extra: &[&str]) -> (bool, String) {
    let path = std::env::temp_dir().join(format!("kc-settings-{ns}-{}.yaml", yaml.len()));
    std::fs::write(&path, yaml).unwrap();
    let mut args = vec!["apply", "-n", ns, "-f", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = kubectl(&args);
    let _ = std::fs::remove_file(&path);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn every_setting_at_every_edge_of_its_kind_is_accepted_at_apply() -> Result<()> {
    install_operator();
    let ns = namespace("settings-edges").await;
    let rounds = SETTINGS.iter().map(|s| s.kind.edges().len()).max().unwrap();
    for i in 0..rounds {
        let settings: Vec<(&str, &str)> = SETTINGS
            .iter()
            .map(|s| (s.name, s.kind.edges()[i % s.kind.edges().len()]))
            .collect();
        let (ok, err) = apply(
            &ns.name,
            &debugger("edges", &settings),
            &["--dry-run=server"],
        );
        assert!(ok, "round {i}: {err}");
    }
    Ok(())
}

#[tokio::test]
async fn a_value_past_an_edge_of_its_kind_is_refused_at_apply_naming_the_setting() -> Result<()> {
    install_operator();
    let ns = namespace("settings-past").await;
    let rounds = SETTINGS
        .iter()
        .map(|s| s.kind.past_edges().len())
        .max()
        .unwrap();
    for i in 0..rounds {
        let settings: Vec<(&str, &str)> = SETTINGS
            .iter()
            .map(|s| {
                let past = s.kind.past_edges();
                (s.name, past[i % past.len()])
            })
            .collect();
        let (ok, err) = apply(&ns.name, &debugger("past", &settings), &[]);
        assert!(!ok, "round {i} was accepted");
        for (name, value) in &settings {
            assert!(
                err.contains(&format!("spec.checkSettings.{name}")),
                "round {i}: {name}={value:?} not named: {err}"
            );
        }
    }
    // The value of the report: refused before any pod runs it.
    let (ok, err) = apply(
        &ns.name,
        &debugger("octal", &[("MEM_AVAILABLE_MIN_PERCENT", "08")]),
        &[],
    );
    assert!(!ok);
    assert!(
        err.contains("spec.checkSettings.MEM_AVAILABLE_MIN_PERCENT") && err.contains("08"),
        "{err}"
    );
    let got = kubectl(&["get", "debugger", "-n", &ns.name, "octal"]);
    assert!(!got.status.success(), "the refused Debugger exists");
    Ok(())
}

#[tokio::test]
async fn an_unknown_setting_is_refused_by_kubectl_and_dropped_without_validation() -> Result<()> {
    install_operator();
    let ns = namespace("settings-unknown").await;
    let yaml = debugger(
        "unknown",
        &[("DISK_USAGE_MAX", "85"), ("DISK_USAGE_MAX_PERCENT", "85")],
    );
    let (ok, err) = apply(&ns.name, &yaml, &[]);
    assert!(!ok, "an unknown setting was accepted");
    assert!(
        err.contains("unknown field") && err.contains("DISK_USAGE_MAX"),
        "{err}"
    );
    // Without validation the API server drops the unknown name, as any
    // unknown field, and keeps the known one.
    let (ok, err) = apply(&ns.name, &yaml, &["--validate=false"]);
    assert!(ok, "{err}");
    let stored = kubectl_ok(&[
        "get",
        "debugger",
        "-n",
        &ns.name,
        "unknown",
        "-o",
        "jsonpath={.spec.checkSettings}",
    ])?;
    let stored: serde_json::Value = serde_json::from_str(&stored)?;
    assert_eq!(stored, serde_json::json!({"DISK_USAGE_MAX_PERCENT": "85"}));
    Ok(())
}

#[tokio::test]
async fn kubectl_explain_opens_with_the_kinds_own_descriptions() -> Result<()> {
    install_operator();
    for (kind, words) in [
        ("debugger", "A Debugger inspects nodes"),
        ("pinger", "A Pinger describes probe loops"),
        ("debuggerreport", "A DebuggerReport is one node's result"),
    ] {
        let text = kubectl_ok(&["explain", kind])?;
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains(words) && !text.contains("Auto-generated"),
            "{kind}: {text}"
        );
    }
    let settings = kubectl_ok(&["explain", "debugger.spec.checkSettings"])?;
    for s in SETTINGS {
        assert!(
            settings.contains(s.name),
            "{} not in explain: {settings}",
            s.name
        );
    }
    Ok(())
}
