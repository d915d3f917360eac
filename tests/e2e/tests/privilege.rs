//! What the operator's and the workload's ServiceAccounts may do, as the API
//! server answers `kubectl auth can-i --list`, against the tables of
//! docs/security.md, verb by verb: the documented minimum and nothing more.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result};
use combo_e2e::{
    apply_yaml, install_operator, kubectl_ok, namespace, record, repo_root, wait_for,
    OPERATOR_NAMESPACE,
};

/// Rights every authenticated user has (`system:basic-user`), not granted
/// by kube-combo.
const EVERYONE: [&str; 2] = [
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
];

/// `resource[.group][/subresource] verb` for every cell combination of the
/// first table under the heading that starts with `heading`. Pure.
fn documented(doc: &str, heading: &str) -> BTreeSet<String> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("docs/security.md has no section {heading:?}"));
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|s| {
                if s == "\"\"" {
                    String::new()
                } else {
                    s.to_string()
                }
            })
            .collect()
    };
    let mut rights = BTreeSet::new();
    for line in section
        .lines()
        .skip_while(|l| !l.starts_with("| API group |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        for group in ticked(cells[1]) {
            for resource in ticked(cells[2]) {
                let (res, sub) = match resource.split_once('/') {
                    Some((r, s)) => (r.to_string(), format!("/{s}")),
                    None => (resource.clone(), String::new()),
                };
                let dotted = if group.is_empty() {
                    res
                } else {
                    format!("{res}.{group}")
                };
                for verb in cells[3].split(',').map(str::trim) {
                    rights.insert(format!("{dotted}{sub} {verb}"));
                }
            }
        }
    }
    assert!(!rights.is_empty(), "no table under {heading:?}");
    rights
}

/// The resource rights of `kubectl auth can-i --list` output, without
/// those every user has. Pure.
fn granted(can_i: &str) -> BTreeSet<String> {
    let mut rights = BTreeSet::new();
    for line in can_i.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        // Resource rows: name, [] (no URLs), [names], [verbs...].
        if cols.len() < 4 || cols[0].starts_with('[') || EVERYONE.contains(&cols[0]) {
            continue;
        }
        assert_eq!(cols[2], "[]", "no right is limited to names: {line}");
        let verbs = cols[3..].join(" ");
        for verb in verbs.trim_matches(['[', ']']).split_whitespace() {
            rights.insert(format!("{} {verb}", cols[0]));
        }
    }
    rights
}

fn compare(who: &str, doc: &BTreeSet<String>, api: &BTreeSet<String>) -> Vec<String> {
    let mut wrong: Vec<String> = api
        .difference(doc)
        .map(|r| format!("{who} may {r}, which docs/security.md does not list"))
        .collect();
    wrong.extend(
        doc.difference(api)
            .map(|r| format!("{who} may not {r}, which docs/security.md lists")),
    );
    wrong
}

#[tokio::test(flavor = "multi_thread")]
async fn the_service_accounts_may_do_exactly_what_the_security_page_lists() -> Result<()> {
    install_operator();
    let doc = std::fs::read_to_string(repo_root().join("docs/security.md"))?;
    let ns = namespace("privilege").await;
    apply_yaml(
        &ns.name,
        "apiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata:\n  name: d\nspec:\n  selector:\n    kubecombo.io/privilege-test: none\n",
    )?;
    let workload = format!("system:serviceaccount:{}:kube-combo-workload", ns.name);
    wait_for(
        std::time::Duration::from_secs(120),
        "the workload RoleBinding",
        || async {
            Ok(kubectl_ok(&["get", "rolebinding", "kube-combo-workload", "-n", &ns.name]).is_ok())
        },
    )
    .await?;

    let operator = format!("system:serviceaccount:{OPERATOR_NAMESPACE}:combo-operator");
    let cases = [
        (
            "the operator",
            operator,
            OPERATOR_NAMESPACE.to_string(),
            "The operator",
        ),
        (
            "the workload",
            workload,
            ns.name.clone(),
            "The workload pods",
        ),
    ];
    let mut wrong = Vec::new();
    let mut tried = 0;
    for (who, account, namespace, heading) in cases {
        let out = kubectl_ok(&[
            "auth", "can-i", "--list", "--as", &account, "-n", &namespace,
        ])
        .with_context(|| format!("can-i --list for {who}"))?;
        let doc_rights = documented(&doc, heading);
        tried += doc_rights.len() as u64;
        wrong.extend(compare(who, &doc_rights, &granted(&out)));
    }
    record(
        "least privilege",
        "the service accounts' rights equal docs/security.md, verb by verb",
        tried,
        tried.saturating_sub(wrong.len() as u64),
        0,
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

#[test]
fn the_security_tables_are_read_verb_by_verb() {
    let doc = "# Page\n\n## The x\n\n| API group | resources | verbs | why |\n|---|---|---|---|\n| `\"\"`, `events.k8s.io` | `events` | create, patch | e |\n| `kubecombo.io` | `debuggers/status` | patch | s |\n\nafter\n";
    let rights = documented(doc, "The x");
    let want: BTreeSet<String> = [
        "events create",
        "events patch",
        "events.events.k8s.io create",
        "events.events.k8s.io patch",
        "debuggers.kubecombo.io/status patch",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(rights, want);
    let can_i = "Resources   Non-Resource URLs   Resource Names   Verbs\nevents   []   []   [create patch]\nselfsubjectrulesreviews.authorization.k8s.io   []   []   [create]\n   [/api]   []   [get]\n";
    let got = granted(can_i);
    assert_eq!(
        got,
        ["events create", "events patch"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    assert_eq!(compare("x", &rights, &got).len(), 3);
}
