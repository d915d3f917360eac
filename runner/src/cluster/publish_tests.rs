use super::*;
use crate::cluster::writer::{write, Written};
use combo_api::{DebuggerReport, DebuggerReportSpec, ItemResult};
use combo_testkit::stand_in::{Answer, Request, StandIn};

fn owner() -> Owner {
    Owner {
        name: "dbg".into(),
        uid: "uid-1".into(),
    }
}

/// The apply body of node-1's report in `ops`, owned by [`owner`].
fn node_1_body(result: &NodeSummary, sources: &Sources, kept: &Kept) -> serde_json::Value {
    apply_body("ops", "node-1", &owner(), result, sources, kept)
}

#[test]
fn the_apply_body_is_this_nodes_report_owned_by_its_debugger() {
    let mut result = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        finished_at: "2026-11-22T06:00:01Z".into(),
        ..Default::default()
    };
    result
        .categories
        .entry("disk".into())
        .or_default()
        .insert("sda".into(), ItemResult::err("full"));
    let b = node_1_body(&result, &Sources::default(), &Kept::default());
    assert_eq!(b["apiVersion"], "kubecombo.io/v1");
    assert_eq!(b["kind"], "DebuggerReport");
    assert_eq!(b["metadata"]["name"], "dbg.node-1");
    assert_eq!(b["metadata"]["namespace"], "ops");
    assert_eq!(b["metadata"]["labels"]["kubecombo.io/debugger"], "dbg");
    assert_eq!(b["metadata"]["labels"]["kubecombo.io/node"], "node-1");
    let o = &b["metadata"]["ownerReferences"][0];
    assert_eq!(
        (o["kind"].as_str(), o["uid"].as_str()),
        (Some("Debugger"), Some("uid-1"))
    );
    assert_eq!(o["controller"], true);
    assert_eq!(b["spec"]["node"], "node-1");
    assert_eq!(b["spec"]["failedItems"], 1);
    assert_eq!(b["spec"]["categories"]["disk"]["sda"]["err"], "full");
    assert_eq!(b.as_object().unwrap().len(), 4, "nothing else: {b}");
}

/// A result of run `run_at` with these items of `disk`, failed with an err.
fn disk_run(run_at: &str, items: &[(&str, Option<&str>)]) -> NodeSummary {
    let mut result = NodeSummary {
        run_at: run_at.into(),
        ..Default::default()
    };
    let disk = result.categories.entry("disk".into()).or_default();
    for (item, err) in items {
        let r = err.map_or_else(ItemResult::ok, ItemResult::err);
        disk.insert(item.to_string(), r);
    }
    result
}

#[test]
fn the_apply_body_carries_the_verdicts_of_each_item_that_failed_in_spec_history() {
    let first = disk_run("2026-11-22T06:00:00Z", &[("sda", None), ("sdb", None)]);
    let second = disk_run(
        "2026-11-22T07:00:00Z",
        &[("sda", Some("full")), ("sdb", None)],
    );
    let verdicts = Verdicts::default().next(&first).next(&second);
    let kept = Kept {
        verdicts,
        ..Kept::default()
    };
    let b = node_1_body(&second, &Sources::default(), &kept);
    let h = &b["spec"]["history"];
    assert_eq!(
        h["runs"],
        serde_json::json!(["2026-11-22T06:00:00Z", "2026-11-22T07:00:00Z"])
    );
    assert_eq!(
        h["items"],
        serde_json::json!({"disk/sda": {"verdicts": "ox", "failingSince": "2026-11-22T07:00:00Z"}}),
        "only the item that failed, oldest run first"
    );
    assert!(h.get("omitted").is_none(), "nothing left out: {h}");
    fits_the_crd(&b["spec"]);
    // Read back, the report keeps the same verdicts for the next run.
    let back: DebuggerReport = serde_json::from_value(b).unwrap();
    assert_eq!(Kept::of(back).verdicts, kept.verdicts);
}

#[test]
fn a_history_of_healthy_runs_is_written_and_one_of_no_run_is_left_out() {
    let healthy = disk_run("2026-11-22T06:00:00Z", &[("sda", None)]);
    let kept = Kept {
        verdicts: Verdicts::default().next(&healthy),
        ..Kept::default()
    };
    let b = node_1_body(&healthy, &Sources::default(), &kept);
    assert_eq!(
        b["spec"]["history"],
        serde_json::json!({"runs": ["2026-11-22T06:00:00Z"], "items": {}})
    );
    fits_the_crd(&b["spec"]);
    let none = node_1_body(&healthy, &Sources::default(), &Kept::default());
    assert!(none["spec"].get("history").is_none(), "{none}");
    fits_the_crd(&none["spec"]);
}

/// Asserts that `value` has the shape `schema` (an OpenAPI schema of a
/// CRD) asks for: types, known properties, required ones, minimums.
fn fits(schema: &serde_yaml::Value, value: &serde_json::Value, at: &str) {
    let str_of = |k: &str| schema.get(k).and_then(|v| v.as_str());
    match (str_of("type"), value) {
        (Some("object"), serde_json::Value::Object(fields)) => {
            for required in schema
                .get("required")
                .and_then(|r| r.as_sequence())
                .into_iter()
                .flatten()
            {
                let name = required.as_str().unwrap();
                assert!(fields.contains_key(name), "{at}.{name} is required");
            }
            for (name, v) in fields {
                let sub = schema
                    .get("properties")
                    .and_then(|p| p.get(name.as_str()))
                    .or_else(|| schema.get("additionalProperties"))
                    .unwrap_or_else(|| panic!("{at}.{name} is not in the CRD"));
                fits(sub, v, &format!("{at}.{name}"));
            }
        }
        (Some("array"), serde_json::Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                fits(&schema["items"], v, &format!("{at}[{i}]"));
            }
        }
        (Some("string"), serde_json::Value::String(_)) => {}
        (Some("integer"), serde_json::Value::Number(n)) => {
            let min = schema.get("minimum").and_then(|m| m.as_f64());
            assert!(n.is_u64() || min.is_none(), "{at} is below its minimum");
        }
        (None, _) => {}
        (t, v) => panic!("{at} is {v}, the CRD asks for {t:?}"),
    }
}

/// Asserts that `spec`'s history fits the DebuggerReport CRD's schema.
fn fits_the_crd(spec: &serde_json::Value) {
    let crd: serde_yaml::Value = serde_yaml::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../config/crd/kubecombo.io_debuggerreports.yaml"
    )))
    .unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        schema["properties"]["history"]["type"].as_str(),
        Some("object")
    );
    if let Some(history) = spec.get("history") {
        fits(&schema["properties"]["history"], history, "spec.history");
    }
}

/// A run of `script` in `category` with these failed items.
fn failing(
    category: combo_api::Category,
    script: &str,
    items: Vec<(String, &str)>,
) -> crate::run::ScriptRun {
    let items = items
        .into_iter()
        .map(|(i, e)| (i, ItemResult::err(e)))
        .collect();
    script_run(category, script, items)
}

/// A run of `script` in `category` that reported `items`.
fn script_run(
    category: combo_api::Category,
    script: &str,
    items: Vec<(String, ItemResult)>,
) -> crate::run::ScriptRun {
    use crate::run::exec::{Capture, Exit, Outcome};
    crate::run::ScriptRun {
        script: crate::run::discover::Script {
            category,
            path: format!("/scripts/{category}/{script}.sh").into(),
            name: script.into(),
            item_prefix: String::new(),
        },
        outcome: Outcome {
            exit: Exit::Timeout(60),
            duration: Duration::from_secs(60),
            lines: vec![],
            untaken: Default::default(),
            stdout: Capture::default(),
            stderr: Capture::default(),
            last_stderr_line: String::new(),
        },
        items: items.into_iter().collect(),
    }
}

#[test]
fn the_report_of_a_busy_node_lists_every_item_and_its_kernel_lines() {
    use combo_api::Category;
    let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
        .unwrap()
        .to_utc();
    let line = |i: usize| {
        format!(
            "[1832{i:03}.551203] blk_update_request: I/O error, dev nvme{i}n1, sector 1953525168 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0 (and the rest of the kernel's line)"
        )
    };
    // 15 scripts of 10 items with names of about 40 bytes: 150 items,
    // 30 of them failed with kernel lines of 160 bytes or more.
    let categories = [Category::Disk, Category::Net, Category::Mem, Category::Svc];
    let scripts: Vec<_> = (0..15)
        .map(|s| {
            let items = (0..10)
                .map(|i| {
                    let item = format!("check-{s:02}/a-longer-item-name-number-{i:03}");
                    let r = match i {
                        0 | 1 => ItemResult::err(line(10 * s + i)),
                        _ => ItemResult::ok(),
                    };
                    (item, r)
                })
                .collect();
            script_run(categories[s % 4], &format!("check-{s:02}"), items)
        })
        .collect();
    let report = crate::run::Report {
        run_id: RunId::at(t),
        started_at: t,
        finished_at: t,
        scripts_hash: String::new(),
        scripts,
    };
    let summary = crate::run::report::summary(&report);
    let b = node_1_body(&summary, &Sources::of(&report), &Kept::default());
    let spec: DebuggerReportSpec = serde_json::from_value(b["spec"].clone()).unwrap();
    assert_eq!(
        spec.categories, summary.categories,
        "every item, every message whole"
    );
    assert_eq!(spec.failed_items, 30);
    assert_eq!(spec.healthy_items(), 120);
    let listed: usize = spec.categories.values().map(|items| items.len()).sum();
    assert_eq!(listed, 150);
    let msg = spec.categories["disk"]["check-00/a-longer-item-name-number-000"]
        .err
        .as_deref()
        .unwrap();
    assert!(msg.contains("I/O error, dev nvme0n1, sector"), "{msg}");
}

#[test]
fn a_cut_report_keeps_a_lone_failure_of_one_script_beside_many_of_another() {
    use combo_api::Category;
    let t = chrono::DateTime::parse_from_rfc3339("2026-11-22T06:00:00Z")
        .unwrap()
        .to_utc();
    let many = |category, script: &str| {
        failing(
            category,
            script,
            (0..400)
                .map(|i| (format!("counters:veth{i:03}"), "rx+tx errors 1234 over 100"))
                .collect(),
        )
    };
    let lone = |category, item: &str| {
        failing(
            category,
            item,
            vec![(item.to_string(), "timeout after 60s")],
        )
    };
    // The lone failure in another category, and in the same category
    // under a name that sorts after the many.
    for (category, lone_item) in [(Category::Svc, "systemd"), (Category::Net, "zz-route")] {
        let report = crate::run::Report {
            run_id: RunId::at(t),
            started_at: t,
            finished_at: t,
            scripts_hash: String::new(),
            scripts: vec![many(Category::Net, "counters"), lone(category, lone_item)],
        };
        let summary = crate::run::report::summary(&report);
        let b = node_1_body(&summary, &Sources::of(&report), &Kept::default());
        let cat = category.as_str();
        assert_eq!(
            b["spec"]["categories"][cat][lone_item]["err"], "timeout after 60s",
            "{b}"
        );
        assert_eq!(b["spec"]["failedItems"], 401);
        let net = b["spec"]["categories"]["net"].as_object().unwrap();
        let kept = net.keys().filter(|k| k.starts_with("counters:")).count();
        assert!(kept > 0);
        assert!(
            net.contains_key(&format!("({} failed items omitted)", 400 - kept)),
            "{:?}",
            net.keys().collect::<Vec<_>>()
        );
    }
}

#[test]
fn what_the_node_ran_is_read_from_its_report() {
    let mut r = DebuggerReport::new(
        "dbg.node-1",
        DebuggerReportSpec {
            run_at: "2026-11-22T06:00:00Z".into(),
            ..Default::default()
        },
    );
    let id = |s: &str| RunId::from_rfc3339(s);
    // A report without annotations (an earlier runner's): its run.
    assert_eq!(
        history_of(&r),
        History {
            completed: id("2026-11-22T06:00:00Z"),
            ..History::default()
        }
    );
    r.spec.run_at = "not a time".into();
    assert_eq!(history_of(&r), History::default());
    // After a run-now run: the report's run is the request, the last run
    // of runAt is in its annotation.
    r.spec.run_at = "2026-11-22T07:10:00Z".into();
    r.metadata.annotations = Some(
        [
            (keys::ANNOTATION_SCHEDULED_RUN, "2026-11-20T00:00:00Z"),
            (keys::ANNOTATION_RUN_NOW_DONE, "2026-11-22T07:10:00Z"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    assert_eq!(
        history_of(&r),
        History {
            completed: id("2026-11-20T00:00:00Z"),
            run_now: id("2026-11-22T07:10:00Z"),
            ran_since_start: false,
        }
    );
}

#[test]
fn the_report_records_what_the_node_ran_in_its_annotations_and_reads_it_back() {
    let history = History {
        completed: RunId::from_rfc3339("2026-11-20T00:00:00Z"),
        run_now: RunId::from_rfc3339("2026-11-22T07:10:00Z"),
        ran_since_start: true,
    };
    let result = NodeSummary {
        run_at: "2026-11-22T07:10:00Z".into(),
        ..Default::default()
    };
    let kept = Kept {
        ran: history,
        ..Kept::default()
    };
    let b = node_1_body(&result, &Sources::default(), &kept);
    let a = &b["metadata"]["annotations"];
    assert_eq!(a["kubecombo.io/scheduled-run"], "2026-11-20T00:00:00Z");
    assert_eq!(a["kubecombo.io/run-now-done"], "2026-11-22T07:10:00Z");
    let back: DebuggerReport = serde_json::from_value(b).unwrap();
    assert_eq!(
        history_of(&back),
        History {
            ran_since_start: false,
            ..history
        }
    );
    let none = node_1_body(&result, &Sources::default(), &Kept::default());
    assert_eq!(none["metadata"]["annotations"], serde_json::json!({}));
}

#[test]
fn the_spread_window_grows_with_the_node_count_between_a_floor_and_a_ceiling() {
    assert_eq!(spread_window(0), SPREAD_MIN);
    assert_eq!(spread_window(3), SPREAD_MIN);
    assert_eq!(spread_window(1000), Duration::from_secs(2));
    assert_eq!(spread_window(5000), SPREAD_MAX);
    assert_eq!(spread_window(u32::MAX), SPREAD_MAX);
}

#[test]
fn spread_delays_are_stable_within_the_window_and_differ_between_nodes() {
    let w = Duration::from_secs(2);
    assert_eq!(spread_delay("node-1", w), spread_delay("node-1", w));
    let delays: std::collections::BTreeSet<Duration> = (0..200)
        .map(|i| spread_delay(&format!("node-{i}"), w))
        .collect();
    assert!(delays.iter().all(|d| *d < w));
    assert!(delays.len() > 150, "only {} distinct offsets", delays.len());
    let early = delays.iter().filter(|d| **d < w / 2).count();
    assert!(
        (60..=140).contains(&early),
        "{early} of 200 in the first half"
    );
}

#[test]
fn the_spread_offset_is_the_fnv1a_hash_of_the_node_name() {
    // FNV-1a 64 of "node-1" and "kc-node-0", modulo 5000.
    let w = Duration::from_secs(5);
    assert_eq!(spread_delay("node-1", w), Duration::from_millis(643));
    assert_eq!(spread_delay("kc-node-0", w), Duration::from_millis(2667));
}

#[test]
fn retry_pauses_double_to_the_cap_and_differ_between_nodes() {
    let run = "2026-11-22T06:00:00Z";
    for node in ["node-1", "node-2", "a-much-longer-node-name.example"] {
        for attempt in 1..=40 {
            let full = (BACKOFF.0 * 2u32.pow(attempt.min(16) - 1)).min(BACKOFF.1);
            let p = retry_pause(node, run, attempt);
            assert!(
                p > full / 2 && p <= full,
                "{node} attempt {attempt}: {p:?} not in ({:?}, {full:?}]",
                full / 2
            );
        }
    }
    assert_eq!(retry_pause("node-1", run, 3), retry_pause("node-1", run, 3));
    // 200 nodes failing together come back at many different moments.
    for attempt in [1, 4, 12] {
        let pauses: std::collections::BTreeSet<Duration> = (0..200)
            .map(|i| retry_pause(&format!("node-{i}"), run, attempt))
            .collect();
        assert!(
            pauses.len() > 40,
            "attempt {attempt}: {} distinct",
            pauses.len()
        );
    }
    // And not in the same order at the next run.
    let order = |run: &str| {
        let mut v: Vec<usize> = (0..50).collect();
        v.sort_by_key(|i| retry_pause(&format!("node-{i}"), run, 5));
        v
    };
    assert_ne!(order(run), order("2026-11-22T07:00:00Z"));
}

fn report_json() -> serde_json::Value {
    serde_json::json!({"apiVersion": "kubecombo.io/v1", "kind": "DebuggerReport",
            "metadata": {"name": "dbg.node-1", "namespace": "ops"},
            "spec": {"debugger": "dbg", "node": "node-1", "runAt": "x"}})
}

fn pending(at: &str) -> Pending {
    Pending {
        owner: owner(),
        summary: NodeSummary {
            run_at: at.into(),
            ..Default::default()
        },
        sources: Sources::default(),
        nodes: 3,
        history: Kept::default(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_attempt_without_answer_is_abandoned_and_the_newest_result_written() {
    let (client, stand_in) = StandIn::answering(|r| match r.n {
        0 => Answer::Never,
        _ => Answer::Json(200, report_json()),
    });
    let publisher = Publisher::new(client, "ops".into(), "node-1".into(), "runner-x".into());
    let mut asked = 0;
    let start = tokio::time::Instant::now();
    let written = write(&publisher, pending("2026-11-22T06:00:00Z"), || {
        asked += 1;
        // A newer result arrives while the first attempt hangs.
        (asked == 2).then(|| pending("2026-11-22T07:00:00Z"))
    })
    .await;

    assert_eq!(written, Written::Landed(2));
    assert!(stand_in.abandoned() > 0, "the hung attempt was dropped");
    let waited = spread_delay("node-1", SPREAD_MIN)
        + attempt_timeout(1)
        + retry_pause("node-1", "2026-11-22T06:00:00Z", 1);
    assert_eq!(start.elapsed().as_millis(), waited.as_millis());
    let requests = stand_in.requests();
    assert_eq!(requests.len(), 2);
    for Request { method, uri, .. } in requests.iter() {
        assert_eq!(method, "PATCH");
        assert!(
            uri.starts_with("/apis/kubecombo.io/v1/namespaces/ops/debuggerreports/dbg.node-1?")
                && uri.contains("fieldManager=combo-runner%2Fnode-1")
                && uri.contains("force=true"),
            "{uri}"
        );
    }
    assert!(
        requests[0].body.contains("06:00:00Z"),
        "{}",
        requests[0].body
    );
    assert!(
        requests[1].body.contains("07:00:00Z"),
        "{}",
        requests[1].body
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_report_is_reported_once_and_not_retried_while_throttling_is() {
    let refusal = |code: u16, message: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
                "message": message, "reason": "", "code": code})
    };
    let (client, stand_in) = StandIn::answering(move |r| {
        if r.uri.contains("/events") {
            Answer::Json(
                201,
                serde_json::json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                    "metadata": {"name": "e", "namespace": "ops"}, "eventTime": null}),
            )
        } else if r.uri.contains("/pods/") {
            Answer::Json(404, refusal(404, "pods \"runner-x\" not found"))
        } else if r.n == 0 {
            Answer::Json(429, refusal(429, "too many requests"))
        } else {
            Answer::Json(
                422,
                refusal(422, "DebuggerReport is invalid: spec.node: Invalid value"),
            )
        }
    });
    let publisher = Publisher::new(client, "ops".into(), "node-1".into(), "runner-x".into());
    let written = write(&publisher, pending("2026-11-22T06:00:00Z"), || None).await;
    assert_eq!(written, Written::Rejected(2), "429 retried, 422 not");
    let requests = stand_in.requests();
    let kinds: Vec<(&str, bool)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.uri.contains("debuggerreports")))
        .collect();
    assert_eq!(
        kinds,
        [
            ("PATCH", true),
            ("PATCH", true),
            ("GET", false),
            ("POST", false)
        ],
        "two attempts, then the pod is looked up and one Event recorded"
    );
    let event = &requests[3].body;
    assert!(event.contains(REASON_REPORT_REJECTED), "{event}");
    assert!(event.contains("spec.node: Invalid value"), "{event}");
}

#[test]
fn attempts_get_more_time_each_up_to_a_minute() {
    let limits: Vec<u64> = (1..=8).map(|a| attempt_timeout(a).as_secs()).collect();
    assert_eq!(limits, [2, 4, 8, 16, 32, 60, 60, 60]);
    assert_eq!(attempt_timeout(u32::MAX), Duration::from_secs(60));
}

#[test]
fn the_event_names_the_count_and_the_first_failed_items() {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    assert_eq!(event_note(&s), None);
    let disk = s.categories.entry("disk".into()).or_default();
    for i in 0..7 {
        disk.insert(format!("sd{i}"), ItemResult::err("full"));
    }
    disk.insert("ok1".into(), ItemResult::ok());
    let note = event_note(&s).unwrap();
    assert!(note.starts_with("run 2026-11-22T06:00:00Z: 7 failed item(s): disk/sd0: full; "));
    assert!(note.ends_with("disk/sd4: full; and 2 more"), "{note}");
}

#[test]
fn the_event_counts_each_err_line_past_a_scripts_limit() {
    let mut s = NodeSummary {
        run_at: "2026-11-22T06:00:00Z".into(),
        ..Default::default()
    };
    s.categories.entry("disk".into()).or_default().insert(
        "flood/output".into(),
        ItemResult::err(combo_api::summary::untaken_message(19_000, 0, 0, 1000)),
    );
    let note = event_note(&s).unwrap();
    assert!(
        note.starts_with(
            "run 2026-11-22T06:00:00Z: 19000 failed item(s): disk/flood/output: 19000 err, "
        ),
        "{note}"
    );
    assert!(note.ends_with("; and 18999 more"), "{note}");
}
