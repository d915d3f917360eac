//! Pod status as a kubelet reports it, computed from container states.

use serde_json::{json, Value};

/// The state of one container.
#[derive(Debug, Clone, PartialEq)]
pub enum CtrState {
    /// Not started (yet); reason like `ContainerCreating` or `CrashLoopBackOff`.
    Waiting {
        /// Short reason.
        reason: String,
        /// Details.
        message: String,
    },
    /// Running since `started_at` (RFC 3339).
    Running {
        /// Start time.
        started_at: String,
    },
    /// Ended.
    Terminated {
        /// Exit code.
        exit_code: i32,
        /// Start time.
        started_at: String,
        /// End time.
        finished_at: String,
    },
}

/// What the status needs to know about a container.
#[derive(Debug, Clone, PartialEq)]
pub struct CtrView {
    /// Container name.
    pub name: String,
    /// Image as in the spec.
    pub image: String,
    /// Current state.
    pub state: CtrState,
    /// Restarts so far.
    pub restart_count: i32,
}

/// The pod's phase from its containers and restart policy.
pub fn phase(containers: &[CtrView], restart_policy: &str) -> &'static str {
    let all_terminated = containers
        .iter()
        .all(|c| matches!(c.state, CtrState::Terminated { .. }));
    let any_running = containers
        .iter()
        .any(|c| matches!(c.state, CtrState::Running { .. }));
    let ever_started = containers
        .iter()
        .any(|c| !matches!(c.state, CtrState::Waiting { .. }) || c.restart_count > 0);
    if !containers.is_empty() && all_terminated && restart_policy != "Always" {
        let all_ok = containers
            .iter()
            .all(|c| matches!(c.state, CtrState::Terminated { exit_code: 0, .. }));
        if all_ok {
            return "Succeeded";
        }
        if restart_policy == "Never" {
            return "Failed";
        }
    }
    if any_running || ever_started {
        "Running"
    } else {
        "Pending"
    }
}

/// The `status` object to merge into the pod.
pub fn pod_status(
    containers: &[CtrView],
    restart_policy: &str,
    pod_ip: &str,
    host_ip: &str,
    start_time: &str,
) -> Value {
    let phase = phase(containers, restart_policy);
    let ready = phase == "Running"
        && containers
            .iter()
            .all(|c| matches!(c.state, CtrState::Running { .. }));
    let cond = |t: &str, ok: bool| {
        json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null,
               "lastTransitionTime": start_time})
    };
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let state = match &c.state {
                CtrState::Waiting { reason, message } => {
                    json!({"waiting": {"reason": reason, "message": message}})
                }
                CtrState::Running { started_at } => json!({"running": {"startedAt": started_at}}),
                CtrState::Terminated {
                    exit_code,
                    started_at,
                    finished_at,
                } => json!({"terminated": {
                    "exitCode": exit_code,
                    "reason": if *exit_code == 0 { "Completed" } else { "Error" },
                    "startedAt": started_at, "finishedAt": finished_at}}),
            };
            json!({
                "name": c.name,
                "image": c.image,
                "imageID": format!("sim://{}", c.image),
                "containerID": format!("sim://{}", c.name),
                "ready": matches!(c.state, CtrState::Running { .. }),
                "started": matches!(c.state, CtrState::Running { .. }),
                "restartCount": c.restart_count,
                "state": state,
            })
        })
        .collect();
    json!({
        "phase": phase,
        "conditions": [
            cond("Initialized", true),
            cond("Ready", ready),
            cond("ContainersReady", ready),
            cond("PodScheduled", true),
        ],
        "hostIP": host_ip,
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start_time,
        "containerStatuses": statuses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctr(state: CtrState, restarts: i32) -> CtrView {
        CtrView {
            name: "runner".into(),
            image: "combo-runner".into(),
            state,
            restart_count: restarts,
        }
    }
    fn running() -> CtrState {
        CtrState::Running {
            started_at: "t".into(),
        }
    }
    fn exited(code: i32) -> CtrState {
        CtrState::Terminated {
            exit_code: code,
            started_at: "t".into(),
            finished_at: "u".into(),
        }
    }
    fn waiting() -> CtrState {
        CtrState::Waiting {
            reason: "ContainerCreating".into(),
            message: String::new(),
        }
    }

    #[test]
    fn phases_follow_container_states_and_restart_policy() {
        assert_eq!(phase(&[ctr(waiting(), 0)], "Always"), "Pending");
        assert_eq!(phase(&[ctr(running(), 0)], "Always"), "Running");
        assert_eq!(phase(&[ctr(exited(0), 0)], "Never"), "Succeeded");
        assert_eq!(phase(&[ctr(exited(1), 0)], "Never"), "Failed");
        assert_eq!(phase(&[ctr(exited(1), 0)], "OnFailure"), "Running");
        assert_eq!(phase(&[ctr(exited(1), 0)], "Always"), "Running");
        assert_eq!(
            phase(&[ctr(running(), 0), ctr(exited(0), 0)], "Never"),
            "Running"
        );
    }

    #[test]
    fn ready_needs_every_container_running() {
        let s = pod_status(
            &[ctr(running(), 2)],
            "Always",
            "172.30.1.2",
            "172.31.0.11",
            "t0",
        );
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["conditions"][1]["type"], "Ready");
        assert_eq!(s["conditions"][1]["status"], "True");
        assert_eq!(s["podIP"], "172.30.1.2");
        assert_eq!(s["containerStatuses"][0]["restartCount"], 2);
        let s = pod_status(
            &[ctr(running(), 0), ctr(waiting(), 0)],
            "Always",
            "172.30.1.2",
            "172.31.0.11",
            "t0",
        );
        assert_eq!(s["conditions"][1]["status"], "False");
        assert_eq!(
            s["containerStatuses"][1]["state"]["waiting"]["reason"],
            "ContainerCreating"
        );
    }
}
