//! `kubectl combo run` (docs/runner.md, "Run now"): the request it writes
//! on the Debugger, what it says and how far the run is, pure; [`run`]
//! writes the request and, with `--wait`, follows the Debugger's status.

use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::{DateTime, Utc};
use combo_api::{keys, Debugger, DebuggerStatus, RunId};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use crate::cluster::{api_error, debugger_not_found};
use crate::errors::{Exit, NotFound, EXIT_FAILURE, EXIT_NO_NODES, EXIT_TIMEOUT};

/// Where a run asked for stands, as the Debugger's status tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Not every node has reported it (or a later run) yet.
    Waiting {
        /// Nodes whose report holds the newest run.
        completed: i32,
        /// Pods of the workload (0 while it has none yet).
        desired: i32,
    },
    /// Every pod's node reported it (or a later run).
    Done {
        /// Nodes that reported.
        nodes: i32,
        /// Failed items of the run.
        failed: i32,
    },
}

/// Reason of the Ready condition of a Debugger that selects no node.
pub const REASON_NO_NODES_SELECTED: &str = "NoNodesSelected";

/// Whether Debugger `dbg` selects no node, as its status (current with
/// its spec) says: `Ready=False` with reason `NoNodesSelected`. Then no
/// node reports a run until the spec or the nodes change. Pure.
pub fn selects_no_node(dbg: &Debugger) -> bool {
    let Some(s) = dbg.status.as_ref() else {
        return false;
    };
    let current = dbg
        .metadata
        .generation
        .is_none_or(|generation| s.observed_generation >= generation);
    current
        && s.conditions.iter().any(|c| {
            c.type_ == "Ready" && c.status == "False" && c.reason == REASON_NO_NODES_SELECTED
        })
}

/// The line `run --wait` prints once every node reported `run`: how many
/// items failed and, when some did, where to read them.
pub fn finished(name: &str, ns: &str, run: RunId, nodes: i32, failed: i32) -> String {
    if failed == 0 {
        format!("run {run} finished on {nodes} node(s): 0 failed items")
    } else {
        format!("run {run} finished on {nodes} node(s): {failed} failed item(s); kubectl combo summary {name} -n {ns} shows them")
    }
}

/// Whether `run` is done on every node of a Debugger whose status is
/// `status`: its newest run (`lastRunAt`) is `run` or later and every
/// desired pod's node reported it. Pure.
pub fn progress(status: Option<&DebuggerStatus>, run: RunId) -> Progress {
    let Some(s) = status else {
        return Progress::Waiting {
            completed: 0,
            desired: 0,
        };
    };
    let newest = s.last_run_at.as_deref().and_then(RunId::from_rfc3339);
    let done = newest.is_some_and(|n| n >= run) && s.desired_pods > 0;
    if done && s.completed_nodes >= s.desired_pods {
        Progress::Done {
            nodes: s.completed_nodes,
            failed: s.failed_items,
        }
    } else {
        Progress::Waiting {
            completed: if done { s.completed_nodes } else { 0 },
            desired: s.desired_pods,
        }
    }
}

/// The run asked for at `now` and the merge patch that asks for it: the
/// annotation [`keys::ANNOTATION_RUN_NOW`], nothing of the spec.
pub fn request(now: DateTime<Utc>) -> (RunId, serde_json::Value) {
    let run = RunId::at(now);
    let patch = serde_json::json!({
        "metadata": {"annotations": {keys::ANNOTATION_RUN_NOW: run.rfc3339()}}
    });
    (run, patch)
}

/// The line printed once Debugger `name`, whose `runAt` is `run_at`, took
/// the request for `run`.
pub fn said(name: &str, run: RunId, run_at: &str) -> String {
    let schedule = if run_at.trim().is_empty() {
        "runAt is empty and stays so".to_string()
    } else {
        format!("runAt {run_at:?} is unchanged")
    };
    format!(
        "debugger.kubecombo.io/{name}: run {run} requested on every node ({}={}); {schedule}",
        keys::ANNOTATION_RUN_NOW,
        run.rfc3339()
    )
}

/// Asks every node of Debugger `ns/name` for one run now, keeping its
/// runAt (docs/runner.md, "Run now"); with `wait`, waits at most that many
/// seconds for every node to report it.
pub async fn run(client: Client, ns: &str, name: &str, wait: Option<u64>) -> Result<()> {
    let (run, patch) = request(Utc::now());
    let api = Api::<Debugger>::namespaced(client, ns);
    let pp = PatchParams {
        field_manager: Some(keys::FIELD_MANAGER_PLUGIN.into()),
        ..PatchParams::default()
    };
    let dbg = match api.patch(name, &pp, &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(debugger_not_found(&client_of(&api), ns, name).await)
        }
        r => r.map_err(|e| api_error(e, &format!("annotating Debugger {ns}/{name}")))?,
    };
    println!("{}", said(name, run, &dbg.spec.run_at));
    match wait {
        Some(timeout) => wait_for(&api, ns, name, run, timeout, dbg).await,
        None => Ok(()),
    }
}

fn client_of(api: &Api<Debugger>) -> Client {
    api.clone().into_client()
}

/// Follows Debugger `ns/name` (`first` as the request's patch returned
/// it), reading it every 2 s, until every node reported `run`: then says
/// how many items failed (exit status 1 when some did). Returns at once,
/// exit status 5, when it selects no node; exit status 3 when it is
/// deleted; exit status 4 after `timeout` seconds.
async fn wait_for(
    api: &Api<Debugger>,
    ns: &str,
    name: &str,
    run: RunId,
    timeout: u64,
    first: Debugger,
) -> Result<()> {
    let until = Instant::now() + Duration::from_secs(timeout);
    let mut last = None;
    let mut dbg = first;
    loop {
        if dbg.metadata.deletion_timestamp.is_some() {
            return Err(NotFound(format!(
                "Debugger {name:?} in namespace {ns} is being deleted: no node will report run {run}"
            ))
            .into());
        }
        if selects_no_node(&dbg) {
            return Err(Exit {
                status: EXIT_NO_NODES,
                said: format!("run {run}: Debugger {ns}/{name} selects no node (Ready=False, NoNodesSelected): no node will report it; kubectl describe dbg {name} -n {ns} shows its selector"),
            }
            .into());
        }
        let now = progress(dbg.status.as_ref(), run);
        match now {
            Progress::Done { nodes, failed } => {
                println!("{}", finished(name, ns, run, nodes, failed));
                if failed > 0 {
                    return Err(Exit {
                        status: EXIT_FAILURE,
                        said: String::new(),
                    }
                    .into());
                }
                return Ok(());
            }
            Progress::Waiting { completed, desired } => {
                if last != Some(now) {
                    eprintln!("waiting for run {run}: {completed} of {desired} node(s) reported");
                    last = Some(now);
                }
                if Instant::now() >= until {
                    return Err(Exit {
                        status: EXIT_TIMEOUT,
                        said: format!("run {run}: {completed} of {desired} node(s) reported within {timeout} s; kubectl combo summary {name} -n {ns} shows what is there"),
                    }
                    .into());
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        dbg = match api
            .get_opt(name)
            .await
            .map_err(|e| api_error(e, &format!("reading Debugger {ns}/{name}")))?
        {
            Some(d) => d,
            None => return Err(NotFound::debugger(ns, name).into()),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_done_once_every_desired_pods_node_reported_it_or_a_later_one() {
        let run: RunId = "20261122T063012Z".parse().unwrap();
        assert_eq!(
            progress(None, run),
            Progress::Waiting {
                completed: 0,
                desired: 0
            }
        );
        let status = |last: Option<&str>, completed, desired| DebuggerStatus {
            last_run_at: last.map(String::from),
            completed_nodes: completed,
            desired_pods: desired,
            failed_items: 3,
            ..DebuggerStatus::default()
        };
        // The run before: its nodes count for nothing.
        let before = status(Some("2026-11-22T06:00:00Z"), 2, 2);
        assert_eq!(
            progress(Some(&before), run),
            Progress::Waiting {
                completed: 0,
                desired: 2
            }
        );
        let half = status(Some("2026-11-22T06:30:12Z"), 1, 2);
        assert_eq!(
            progress(Some(&half), run),
            Progress::Waiting {
                completed: 1,
                desired: 2
            }
        );
        let all = status(Some("2026-11-22T06:30:12Z"), 2, 2);
        assert_eq!(
            progress(Some(&all), run),
            Progress::Done {
                nodes: 2,
                failed: 3
            }
        );
        let later = status(Some("2026-11-22T07:00:00Z"), 2, 2);
        assert!(matches!(progress(Some(&later), run), Progress::Done { .. }));
        // No pod yet (a Debugger just applied): never done.
        let none = status(Some("2026-11-22T06:30:12Z"), 0, 0);
        assert!(matches!(
            progress(Some(&none), run),
            Progress::Waiting { .. }
        ));
    }

    fn with_ready(reason: &str, generation: i64, observed: i64) -> Debugger {
        let mut d = Debugger::new("d", combo_api::DebuggerSpec::default());
        d.metadata.generation = Some(generation);
        d.status = Some(DebuggerStatus {
            observed_generation: observed,
            conditions: vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: "Ready".into(),
                status: "False".into(),
                reason: reason.into(),
                message: "the selector, tolerations and affinity match no node".into(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now(),
                ),
                observed_generation: None,
            }],
            ..DebuggerStatus::default()
        });
        d
    }

    #[test]
    fn a_debugger_selecting_no_node_is_told_only_from_a_current_status() {
        assert!(selects_no_node(&with_ready("NoNodesSelected", 2, 2)));
        assert!(
            !selects_no_node(&with_ready("NoNodesSelected", 3, 2)),
            "a new spec may select nodes: wait for the operator's look"
        );
        assert!(!selects_no_node(&with_ready("WorkloadNotReady", 2, 2)));
        let fresh = Debugger::new("d", combo_api::DebuggerSpec::default());
        assert!(!selects_no_node(&fresh), "just applied: no status yet");
    }

    #[test]
    fn nothing_failed_says_so_and_failures_say_where_to_read_them() {
        let run: RunId = "20261122T063012Z".parse().unwrap();
        assert_eq!(
            finished("d", "ops", run, 3, 0),
            "run 20261122T063012Z finished on 3 node(s): 0 failed items"
        );
        assert_eq!(
            finished("d", "ops", run, 3, 2),
            "run 20261122T063012Z finished on 3 node(s): 2 failed item(s); kubectl combo summary d -n ops shows them"
        );
    }

    #[test]
    fn the_request_is_an_annotation_with_the_time_to_the_second_and_no_spec() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T06:30:12.7Z")
            .unwrap()
            .to_utc();
        let (run, patch) = request(now);
        assert_eq!(run.to_string(), "20261122T063012Z");
        assert_eq!(
            patch,
            serde_json::json!({"metadata": {"annotations": {"kubecombo.io/run-now": "2026-11-22T06:30:12Z"}}})
        );
        assert!(patch.get("spec").is_none(), "runAt is left alone");
        assert_eq!(
            combo_api::runat::parse_run_now(&run.rfc3339()),
            Ok(run),
            "the runner reads the value as this run"
        );
    }

    #[test]
    fn the_answer_names_the_run_and_the_schedule_it_keeps() {
        let run: RunId = "20261122T063012Z".parse().unwrap();
        assert_eq!(
            said("node-check", run, "0 */6 * * *"),
            "debugger.kubecombo.io/node-check: run 20261122T063012Z requested on every node (kubecombo.io/run-now=2026-11-22T06:30:12Z); runAt \"0 */6 * * *\" is unchanged"
        );
        assert!(said("d", run, "").ends_with("runAt is empty and stays so"));
    }

    #[test]
    fn the_plugin_writes_as_a_manager_flux_does_not_take_over() {
        // kustomize-controller takes over the managers whose name starts
        // with "kubectl" (docs/runner.md, "GitOps (Argo CD, Flux)").
        assert!(!keys::FIELD_MANAGER_PLUGIN.starts_with("kubectl"));
        assert!(!keys::FIELD_MANAGER_PLUGIN.starts_with("before-first-apply"));
    }
}
