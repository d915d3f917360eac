//! `kubectl combo run` (docs/runner.md, "Run now"): the request it writes
//! on the Debugger and what it says. Pure.

use chrono::{DateTime, Utc};
use combo_api::{keys, RunId};

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

#[cfg(test)]
mod tests {
    use super::*;

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
