use super::*;
use combo_api::ScriptSet;

/// A summary value of `run`, finished at `fin`, with scripts hash `hash`
/// (none when empty).
fn value(run: &str, fin: &str, hash: &str) -> String {
    let scripts = if hash.is_empty() {
        String::new()
    } else {
        format!("scripts: {hash}\n")
    };
    format!("runAt: \"{run}\"\nfinishedAt: \"{fin}\"\n{scripts}disk:\n  sda: {{}}\n")
}

const RUN: &str = "2026-11-22T06:00:00Z";
const FIN: &str = "2026-11-22T06:00:07Z";

#[test]
fn one_script_set_says_nothing_and_several_name_their_nodes() {
    let same: BTreeMap<String, String> = ["n1", "n2", "n3"]
        .map(|n| (n.to_string(), value(RUN, FIN, "aaaaaaaaaaaa")))
        .into();
    assert_eq!(differ_in_summary(&same), None);

    let mut data = same.clone();
    data.insert("n3".into(), value(RUN, FIN, "bbbbbbbbbbbb"));
    assert_eq!(
        differ_in_summary(&data).as_deref(),
        Some("2 script sets among 3 nodes of run 20261122T060000Z: aaaaaaaaaaaa on n1, n2; bbbbbbbbbbbb on n3")
    );
}

#[test]
fn only_the_newest_run_counts_and_a_missing_hash_is_a_set_of_its_own() {
    let data: BTreeMap<String, String> = [
        ("n1", value(RUN, FIN, "aaaaaaaaaaaa")),
        (
            "n2",
            value(
                "2026-11-22T05:00:00Z",
                "2026-11-22T05:00:07Z",
                "bbbbbbbbbbbb",
            ),
        ),
    ]
    .map(|(n, v)| (n.to_string(), v))
    .into();
    assert_eq!(
        differ_in_summary(&data),
        None,
        "n2 did not run the newest run"
    );

    let data: BTreeMap<String, String> = [
        ("n1", value(RUN, FIN, "aaaaaaaaaaaa")),
        ("n2", value(RUN, FIN, "")),
    ]
    .map(|(n, v)| (n.to_string(), v))
    .into();
    assert_eq!(
        differ_in_summary(&data).as_deref(),
        Some("2 script sets among 2 nodes of run 20261122T060000Z: - on n2; aaaaaaaaaaaa on n1")
    );
}

#[test]
fn a_large_set_names_its_first_nodes_and_counts_the_rest() {
    let mut data: BTreeMap<String, String> = (0..5000)
        .map(|i| (format!("node-{i:04}"), value(RUN, FIN, "aaaaaaaaaaaa")))
        .collect();
    data.insert("node-0042".into(), value(RUN, FIN, "bbbbbbbbbbbb"));
    let line = differ_in_summary(&data).unwrap();
    assert_eq!(
        line,
        "2 script sets among 5000 nodes of run 20261122T060000Z: aaaaaaaaaaaa on node-0000, node-0001, node-0002, node-0003, node-0004 and 4994 more; bbbbbbbbbbbb on node-0042"
    );
}

fn status(completed: i32, sets: &[(&str, i32)]) -> DebuggerStatus {
    DebuggerStatus {
        last_run_at: Some(RUN.into()),
        completed_nodes: completed,
        script_sets: sets
            .iter()
            .map(|(h, n)| ScriptSet {
                scripts: h.to_string(),
                nodes: *n,
            })
            .collect(),
        ..DebuggerStatus::default()
    }
}

#[test]
fn the_status_cell_shows_the_one_set_or_how_many() {
    assert_eq!(status_cell(&status(0, &[])), "-");
    assert_eq!(status_cell(&status(3, &[("aaa", 3)])), "aaa");
    assert_eq!(status_cell(&status(3, &[("aaa", 2)])), "aaa (2/3)");
    assert_eq!(status_cell(&status(3, &[("aaa", 2), ("bbb", 1)])), "2 sets");
}

#[test]
fn the_status_line_counts_each_sets_nodes() {
    assert_eq!(
        differ_in_status("ops", "d", &status(3, &[("aaa", 3)])),
        None
    );
    assert_eq!(
        differ_in_status("ops", "d", &status(3, &[("aaa", 2), ("bbb", 1)])).as_deref(),
        Some("ops/d: 2 script sets among 3 nodes of run 20261122T060000Z: aaa on 2 node(s), bbb on 1 node(s) (kubectl combo summary d -n ops --all shows each node's)")
    );
    assert_eq!(
        differ_in_status("ops", "d", &status(9, &[("aaa", 5), ("bbb", 1)])).as_deref(),
        Some("ops/d: 2+ script sets among 9 nodes of run 20261122T060000Z: aaa on 5 node(s), bbb on 1 node(s), 3 node(s) of other sets or without a hash (kubectl combo summary d -n ops --all shows each node's)")
    );
}
