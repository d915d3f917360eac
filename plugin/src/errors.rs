//! How `kubectl combo` fails (docs/reference.md, "Exit statuses"): one
//! exit status for usage errors, one for what it cannot find, one for
//! every other failure, and messages that name what the user wrote.

/// Exit status of a failure: no kubeconfig, an API error, `kubectl exec`
/// failing, a Debugger without a result yet.
pub const EXIT_FAILURE: u8 = 1;
/// Exit status of a usage error: a missing argument, a flag or value that
/// does not parse (`--category foo`, `--run garbage`).
pub const EXIT_USAGE: u8 = combo_api::cli::EXIT_USAGE;
/// Exit status when what the arguments name does not exist: the Debugger
/// (or its namespace), its pod on the node, the errlog of the run, a
/// category it does not run.
pub const EXIT_NOT_FOUND: u8 = 3;
/// Exit status of `run --wait` past its `--timeout`.
pub const EXIT_TIMEOUT: u8 = 4;
/// Exit status of `run --wait` on a Debugger that selects no node
/// (`Ready=False`, `NoNodesSelected`): no node would ever report the run.
pub const EXIT_NO_NODES: u8 = 5;

/// What the arguments name and the cluster does not have.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct NotFound(pub String);

impl NotFound {
    /// No Debugger `name` in namespace `ns`.
    pub fn debugger(ns: &str, name: &str) -> NotFound {
        NotFound(format!(
            "no Debugger {name:?} in namespace {ns} (kubectl combo status -n {ns} lists them)"
        ))
    }

    /// No namespace `ns`.
    pub fn namespace(ns: &str) -> NotFound {
        NotFound(format!(
            "no namespace {ns:?} (kubectl get namespaces lists them)"
        ))
    }
}

/// A failure that ends the command with its own exit status
/// ([`EXIT_FAILURE`] for failed items, [`EXIT_TIMEOUT`], [`EXIT_NO_NODES`])
/// after it printed its answer; `said` is printed on stderr, when not empty.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{said}")]
pub struct Exit {
    /// The exit status.
    pub status: u8,
    /// What to say on stderr, if anything.
    pub said: String,
}

/// The exit status of a failed command.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if let Some(exit) = err.downcast_ref::<Exit>() {
        exit.status
    } else if err.downcast_ref::<NotFound>().is_some() {
        EXIT_NOT_FOUND
    } else {
        EXIT_FAILURE
    }
}

/// The pod of Debugger `ns/name` on `node` among its pods `(pod, node)`;
/// when none runs there, which nodes its pods do run on.
pub fn pod_on_node(
    ns: &str,
    name: &str,
    node: &str,
    pods: &[(String, Option<String>)],
) -> Result<String, NotFound> {
    if let Some((pod, _)) = pods.iter().find(|(_, n)| n.as_deref() == Some(node)) {
        return Ok(pod.clone());
    }
    let mut nodes: Vec<&str> = pods.iter().filter_map(|(_, n)| n.as_deref()).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let where_ = if nodes.is_empty() {
        "it has no pod on any node yet".to_string()
    } else {
        format!("its pods run on {}", nodes.join(", "))
    };
    Err(NotFound(format!(
        "Debugger {ns}/{name} has no pod on node {node:?}; {where_}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_found_exits_three_and_any_other_failure_one() {
        let missing = anyhow::Error::new(NotFound::debugger("ops", "nosuch"));
        assert_eq!(exit_status(&missing), 3);
        assert_eq!(
            missing.to_string(),
            "no Debugger \"nosuch\" in namespace ops (kubectl combo status -n ops lists them)"
        );
        let wrapped = anyhow::Error::new(NotFound("x".into())).context("reading");
        assert_eq!(exit_status(&wrapped), 3, "context keeps the kind");
        assert_eq!(exit_status(&anyhow::anyhow!("the API server refused")), 1);
        assert_eq!(
            (
                EXIT_FAILURE,
                EXIT_USAGE,
                EXIT_NOT_FOUND,
                EXIT_TIMEOUT,
                EXIT_NO_NODES
            ),
            (1, 2, 3, 4, 5)
        );
        let no_nodes = anyhow::Error::new(Exit {
            status: EXIT_NO_NODES,
            said: String::new(),
        });
        assert_eq!(exit_status(&no_nodes), 5);
        assert_eq!(
            NotFound::namespace("nosuch").0,
            "no namespace \"nosuch\" (kubectl get namespaces lists them)"
        );
    }

    #[test]
    fn a_node_without_a_pod_is_named_with_the_nodes_that_have_one() {
        let pods = [
            ("ds-b".to_string(), Some("real-2".to_string())),
            ("ds-a".to_string(), Some("real-1".to_string())),
            ("ds-p".to_string(), None),
        ];
        assert_eq!(pod_on_node("ops", "ds", "real-1", &pods), Ok("ds-a".into()));
        assert_eq!(
            pod_on_node("ops", "ds", "real-9", &pods),
            Err(NotFound(
                "Debugger ops/ds has no pod on node \"real-9\"; its pods run on real-1, real-2"
                    .into()
            ))
        );
        assert_eq!(
            pod_on_node("ops", "ds", "real-1", &[]).unwrap_err().0,
            "Debugger ops/ds has no pod on node \"real-1\"; it has no pod on any node yet"
        );
    }
}
