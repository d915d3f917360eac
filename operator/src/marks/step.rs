//! The node marks step of a Debugger's reconcile: the runs its nodes
//! missed, the conditions and taints its reports ask for, written to the
//! nodes, and the finalizer that takes them off again. The decisions are
//! pure ([`missed`], [`plan`], [`crate::marks::taints`]); [`decide`] reads
//! the node watch and returns the writes, which the reconcile's write stage
//! makes with [`write()`]
//! (docs/operator.md#node-conditions-taints-and-missed-runs).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use combo_api::{Debugger, RunAt};
use tracing::info;

use crate::core::node_marks::NodeMarks;
use crate::core::node_marks::Wanted;
use crate::core::status::PodCounts;
use crate::core::validate::Verdict;
use crate::marks::plan::{self, Inputs, MarksPlan};
use crate::marks::status::DebuggerMarks;
use crate::reports::store::NodeReports;
use crate::state::context::Context;
use crate::state::observed::Observed;
use crate::{marks::finalizer, marks::write, reports::missed};

/// Errors of the node marks step.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A node write failed.
    #[error(transparent)]
    Write(#[from] write::Error),
    /// Adding or removing the finalizer failed.
    #[error("writing the finalizer")]
    Finalizer(#[source] kube::Error),
    /// The Node watch has not listed (its error is logged and fails
    /// `/readyz`); tried again with backoff rather than waiting for it.
    #[error("the Node watch has not listed within {0:?}")]
    NodesNotListed(Duration),
}

/// How long a reconcile waits for the Node watch to list: 5,000 Nodes come
/// in a few seconds; a watch that cannot list (no RBAC for Nodes) must not
/// hold the reconcile for ever.
pub const NODES_LISTED_WITHIN: Duration = Duration::from_secs(30);

/// The node marks' writes one reconcile decided, made by the write stage
/// in this order: the finalizer first, so that no mark is ever on a node
/// without it; then the nodes; then the finalizer off when no mark is
/// wanted any more.
#[derive(Debug)]
pub struct MarksWrites {
    /// Add the finalizer.
    pub add_finalizer: bool,
    /// The writes to the nodes, or why they could not be decided.
    pub plan: Result<MarksPlan, Error>,
    /// Take the finalizer off once the nodes are written.
    pub remove_finalizer: bool,
}

/// What the node marks tell the status, and the writes they need. An
/// invalid Debugger's nodes are left as they are. Reads the node watch
/// (waiting for it to list); sends nothing.
pub async fn decide(
    ctx: &Context,
    dbg: &Debugger,
    verdict: &Verdict,
    observed: &Observed,
    counts: Option<PodCounts>,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> (DebuggerMarks, Option<MarksWrites>) {
    let wanted = Wanted::of(dbg, ctx.taints_allowed);
    let mut out = DebuggerMarks {
        taints_disabled: wanted.taints_disabled,
        ..DebuggerMarks::default()
    };
    let Ok(valid) = verdict else {
        return (out, None);
    };
    let grace = missed::grace(dbg.spec.script_timeout_seconds);
    let check = missed::check(&valid.run_at, since, grace, now);
    let missed = check
        .run
        .map(|r| missed::missed_by(&observed.reports, r))
        .unwrap_or_default();
    if valid.run_at != RunAt::Empty {
        out.runs_missed = Some(missed::condition(check.run, &missed));
    }
    out.recheck_at = check.recheck_at;
    let holds = finalizer::holds(dbg);
    if !wanted.any() && !holds {
        return (out, None);
    }
    let nodes = counts.map_or(0, |c| c.desired.max(0) as usize);
    let reports = &observed.reports;
    let plan = plan_for(
        ctx,
        &wanted,
        reports,
        &missed,
        nodes.max(reports.len()),
        now,
    )
    .await;
    if let Ok(p) = &plan {
        out.limit = p.limit;
    }
    let writes = MarksWrites {
        add_finalizer: wanted.any() && !holds,
        plan,
        remove_finalizer: !wanted.any(),
    };
    (out, Some(writes))
}

/// Makes the node marks' writes of `dbg`; stops at the first that fails.
pub async fn write(ctx: &Context, dbg: &Debugger, writes: MarksWrites) -> Result<(), Error> {
    if writes.add_finalizer {
        finalizer::add(ctx, dbg).await.map_err(Error::Finalizer)?;
    }
    write::apply(ctx, &writes.plan?).await?;
    if writes.remove_finalizer {
        info!("node conditions and taints turned off and taken off the nodes");
        finalizer::remove(ctx, dbg)
            .await
            .map_err(Error::Finalizer)?;
    }
    Ok(())
}

/// A Debugger being deleted: the writes that take every mark of it off
/// the nodes, then its finalizer, so that it goes.
pub async fn decide_removal(ctx: &Context, dbg: &Debugger) -> MarksWrites {
    let wanted = Wanted::nothing(dbg, ctx.taints_allowed);
    let none = NodeReports::new();
    let plan = plan_for(ctx, &wanted, &none, &BTreeSet::new(), 0, Utc::now()).await;
    if let Ok(p) = &plan {
        info!(
            nodes = p.writes(),
            "the Debugger is deleted: taking its node conditions and taints off"
        );
    }
    MarksWrites {
        add_finalizer: false,
        plan,
        remove_finalizer: true,
    }
}

/// The marks plan, from what the node watch shows (started and listed
/// first) for the nodes with a report and those with a mark of `wanted`.
async fn plan_for(
    ctx: &Context,
    wanted: &Wanted,
    reports: &NodeReports,
    missed: &BTreeSet<String>,
    node_count: usize,
    now: DateTime<Utc>,
) -> Result<MarksPlan, Error> {
    tokio::time::timeout(NODES_LISTED_WITHIN, ctx.nodes.ready())
        .await
        .map_err(|_| Error::NodesNotListed(NODES_LISTED_WITHIN))?;
    let mut nodes: BTreeMap<String, NodeMarks> = ctx.nodes.owned_by(wanted);
    for node in reports.keys() {
        if !nodes.contains_key(node) {
            let marks = ctx.nodes.marks(node);
            if !marks.is_empty() {
                nodes.insert(node.clone(), marks);
            }
        }
    }
    Ok(plan::for_nodes(&Inputs {
        wanted,
        reports,
        missed,
        nodes: &nodes,
        node_count,
        now,
    }))
}
