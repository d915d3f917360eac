//! What applying a workload did: the outcome the apply step hands to the
//! Events and the status.

/// What applying the workload did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Already as rendered; nothing written.
    Unchanged,
    /// The workload did not exist and was created.
    Created,
    /// The DaemonSet was updated in place.
    Updated,
    /// The Pod's spec changed: the old Pod was deleted; a new one follows
    /// once it is gone.
    Replacing,
    /// An old Pod is still terminating.
    Waiting,
}
