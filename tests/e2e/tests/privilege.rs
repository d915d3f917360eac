//! What the operator's and the workload's ServiceAccounts may do, as the API
//! server answers `kubectl auth can-i --list`, against the tables of
//! docs/security.md, verb by verb: the documented minimum and nothing more.

use std::collections::BTreeSet;

use anyhow::{Context as _, Result};
use combo_api::{Debugger, DebuggerReport, Pinger};
use combo_e2e::fixtures::{documents, DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, install_operator, kubectl_ok, namespace, record, repo_root, wait_for,
    OPERATOR_NAMESPACE,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};

const WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// A Pinger `pinger` and a Debugger `name` that uses it, selecting no node.
fn debugger_with_pinger(name: &str, pinger: &str) -> String {
    documents(&[
        PingerBuilder::new(pinger).ping(&["127.0.0.1"]).yaml(),
        DebuggerBuilder::new(name)
            .selector("kubecombo.io/privilege-test", "none")
            .pinger(pinger)
            .yaml(),
    ])
}

/// Rights every authenticated user has (`system:basic-user`), not granted
/// by kube-combo.
const EVERYONE: [&str; 2] = [
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
];

/// `resource[.group][/subresource][names] verb` for every cell combination
/// of the first table under the heading that starts with `heading`. A
/// `names` column, where the table has one, names the objects a rule is
/// limited to, as `names` maps its words ("all": none). Pure.
fn documented(doc: &str, heading: &str, names: &[(&str, &str)]) -> BTreeSet<String> {
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
    let mut rows = section
        .lines()
        .skip_while(|l| !l.starts_with("| API group |"))
        .take_while(|l| l.starts_with('|'));
    let header: Vec<&str> = rows
        .next()
        .unwrap_or_else(|| panic!("no table under {heading:?}"))
        .split('|')
        .map(str::trim)
        .collect();
    let column = |name: &str| header.iter().position(|h| *h == name);
    let (resources, verbs) = (
        column("resources").expect("a resources column"),
        column("verbs").expect("a verbs column"),
    );
    let mut rights = BTreeSet::new();
    for line in rows.skip(1) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let limited = match column("names").map(|i| cells[i]) {
            None | Some("all") => String::new(),
            Some(word) => {
                let (_, name) = names
                    .iter()
                    .find(|(w, _)| *w == word)
                    .unwrap_or_else(|| panic!("no name for {word:?}"));
                format!("[{name}]")
            }
        };
        for group in ticked(cells[1]) {
            for resource in ticked(cells[resources]) {
                let (res, sub) = match resource.split_once('/') {
                    Some((r, s)) => (r.to_string(), format!("/{s}")),
                    None => (resource.clone(), String::new()),
                };
                let dotted = if group.is_empty() {
                    res
                } else {
                    format!("{res}.{group}")
                };
                for verb in cells[verbs].split(',').map(str::trim) {
                    rights.insert(format!("{dotted}{sub}{limited} {verb}"));
                }
            }
        }
    }
    assert!(!rights.is_empty(), "no table under {heading:?}");
    rights
}

/// The resource rights of `kubectl auth can-i --list` output, without
/// those every user has, written as [`documented`] writes them. Pure.
fn granted(can_i: &str) -> BTreeSet<String> {
    let mut rights = BTreeSet::new();
    for line in can_i.lines().skip(1) {
        // Resource rows: name, [] (no URLs), [names], [verbs...].
        let Some((resource, rest)) = line.trim().split_once(char::is_whitespace) else {
            continue;
        };
        if resource.starts_with('[') || EVERYONE.contains(&resource) {
            continue;
        }
        let lists: Vec<&str> = rest
            .split(']')
            .map(|l| l.trim().trim_start_matches('['))
            .collect();
        let [_urls, names, verbs, ..] = lists[..] else {
            continue;
        };
        let limited = if names.is_empty() {
            String::new()
        } else {
            format!("[{names}]")
        };
        for verb in verbs.split_whitespace() {
            rights.insert(format!("{resource}{limited} {verb}"));
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
    apply_yaml(&ns.name, &debugger_with_pinger("d", "p"))?;
    let workload = format!("system:serviceaccount:{}:kube-combo-workload.d", ns.name);
    wait_for(WAIT, "the workload RoleBinding", || async {
        Ok(kubectl_ok(&[
            "get",
            "rolebinding",
            "kube-combo-workload.d",
            "-n",
            &ns.name,
        ])
        .is_ok())
    })
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
        let doc_rights = documented(&doc, heading, &[("its Debugger", "d"), ("its Pinger", "p")]);
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

/// A client that authenticates with the token of ServiceAccount `account`
/// in `ns` (from its token Secret), and nothing else.
async fn client_as(admin: &Client, ns: &str, account: &str) -> Result<Client> {
    let deadline = std::time::Instant::now() + WAIT;
    let token = loop {
        if let Some(t) = token_of(admin, ns, account).await? {
            break t;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no token for {account} within {WAIT:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    };
    let kc = kube::config::Kubeconfig::read_from(combo_e2e::kubeconfig())?;
    let mut cfg =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    cfg.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..Default::default()
    };
    Ok(Client::try_from(cfg)?)
}

/// The token in the token Secret of ServiceAccount `account`, once there.
async fn token_of(admin: &Client, ns: &str, account: &str) -> Result<Option<String>> {
    let sa = Api::<ServiceAccount>::namespaced(admin.clone(), ns)
        .get_opt(account)
        .await?;
    let Some(secret) = sa
        .and_then(|sa| sa.secrets)
        .and_then(|s| s.into_iter().next())
        .and_then(|r| r.name)
    else {
        return Ok(None);
    };
    let secret = Api::<Secret>::namespaced(admin.clone(), ns)
        .get_opt(&secret)
        .await?;
    Ok(secret
        .and_then(|s| s.data)
        .and_then(|mut d| d.remove("token"))
        .map(|t| String::from_utf8_lossy(&t.0).into_owned()))
}

/// The API server's answer to a request: its HTTP status.
fn code<T>(r: &kube::Result<T>) -> u16 {
    match r {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(e) => panic!("no answer from the API server: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_debuggers_pods_cannot_read_another_debuggers_objects() -> Result<()> {
    install_operator();
    let admin = client().await;
    let ns = namespace("per-dbg").await;
    apply_yaml(&ns.name, &debugger_with_pinger("d", "p"))?;
    apply_yaml(&ns.name, &debugger_with_pinger("e", "q"))?;
    for summary in ["d-summary", "e-summary"] {
        wait_for(WAIT, "the summaries", || async {
            Ok(Api::<ConfigMap>::namespaced(admin.clone(), &ns.name)
                .get_opt(summary)
                .await?
                .is_some())
        })
        .await?;
    }
    let d = client_as(&admin, &ns.name, "kube-combo-workload.d").await?;
    let debuggers = Api::<Debugger>::namespaced(d.clone(), &ns.name);
    let pingers = Api::<Pinger>::namespaced(d.clone(), &ns.name);
    let summaries = Api::<ConfigMap>::namespaced(d.clone(), &ns.name);
    let reports = Api::<DebuggerReport>::namespaced(d.clone(), &ns.name);
    let own = ListParams::default().fields("metadata.name=d");
    let cases = [
        ("get its Debugger", code(&debuggers.get("d").await), 200),
        (
            "list its Debugger by name",
            code(&debuggers.list(&own).await),
            200,
        ),
        ("get its Pinger", code(&pingers.get("p").await), 200),
        ("get another Debugger", code(&debuggers.get("e").await), 403),
        (
            "list every Debugger",
            code(&debuggers.list(&ListParams::default()).await),
            403,
        ),
        (
            "list another Debugger by name",
            code(
                &debuggers
                    .list(&ListParams::default().fields("metadata.name=e"))
                    .await,
            ),
            403,
        ),
        (
            "get a Pinger it does not use",
            code(&pingers.get("q").await),
            403,
        ),
        (
            "list every Pinger",
            code(&pingers.list(&ListParams::default()).await),
            403,
        ),
        (
            "get its summary",
            code(&summaries.get("d-summary").await),
            403,
        ),
        (
            "get another Debugger's summary",
            code(&summaries.get("e-summary").await),
            403,
        ),
        (
            "list the reports",
            code(&reports.list(&ListParams::default()).await),
            403,
        ),
        (
            "delete a report",
            code(&reports.delete("e.node-1", &DeleteParams::default()).await),
            403,
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(_, got, want)| got != want)
        .map(|(what, got, want)| format!("{what}: {got}, expected {want}"))
        .collect();
    record(
        "least privilege",
        "one Debugger's token against another Debugger's objects",
        cases.len() as u64,
        (cases.len() - wrong.len()) as u64,
        0,
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

#[test]
fn the_security_tables_are_read_verb_by_verb() {
    let doc = "# Page\n\n## The x\n\n| API group | resources | verbs | why |\n|---|---|---|---|\n| `\"\"`, `events.k8s.io` | `events` | create, patch | e |\n| `kubecombo.io` | `debuggers/status` | patch | s |\n\nafter\n";
    let rights = documented(doc, "The x", &[]);
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

    let doc = "# Page\n\n## The y\n\n| API group | resources | names | verbs | why |\n|---|---|---|---|---|\n| `kubecombo.io` | `debuggers` | its Debugger | get | r |\n| `\"\"` | `pods` | all | list | p |\n";
    let rights = documented(doc, "The y", &[("its Debugger", "d")]);
    let can_i = "Resources   Non-Resource URLs   Resource Names   Verbs\ndebuggers.kubecombo.io   []   [d]   [get]\npods   []   []   [list]\n";
    assert_eq!(rights, granted(can_i));
    assert_eq!(
        rights.into_iter().collect::<Vec<_>>(),
        ["debuggers.kubecombo.io[d] get", "pods list"]
    );
}
