//! What the operator keeps per Debugger between reconciles stays bounded
//! by the Debuggers that exist
//! (docs/operator.md, "State kept between reconciles"): in-process, against
//! a stand-in API server, with the caches filled by hand as the watches
//! would fill them.

mod support;

use std::sync::Arc;

use combo_api::{Debugger, DebuggerReport, DebuggerReportSpec};
use combo_operator::debugger::error::Error;
use combo_operator::debugger::reconcile::reconcile;
use combo_operator::state::context::Context;
use combo_testkit::fixtures::debugger;
use kube::runtime::watcher::Event;
use support::reconcile::{no_script, requests, stand_in};
use support::{context, Watches};

#[tokio::test]
async fn failure_counts_stay_bounded_by_the_live_debuggers() {
    use combo_operator::debugger::retry::error_policy;
    use combo_operator::state::records::over_bound;
    let (client, _seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let live = debugger("ops", "d").build();
    watches.show(&live);
    let transient = || {
        Error::Status(kube::Error::Api(
            kube::core::Status::failure("etcd is away", "")
                .with_code(500)
                .boxed(),
        ))
    };
    error_policy(Arc::new(live.clone()), &transient(), ctx.clone());
    // 100 Debuggers fail and are deleted while failing: never reconciled
    // again, so no success removes their counts.
    for i in 0..100 {
        let gone = debugger("ops", &format!("gone-{i}")).build();
        error_policy(Arc::new(gone), &transient(), ctx.clone());
        let counted = ctx.records.uids(|r| r.failures > 0).len();
        assert!(counted <= over_bound(1) + 1, "{counted} counts kept");
    }
    assert_eq!(
        ctx.records.failures(&live),
        1,
        "the live one's count is kept"
    );
}

/// Debugger `name` (uid `uid-<name>`) with a report from node-1.
fn reporting(ctx: &Context, watches: &mut Watches, name: &str) -> Debugger {
    let d = debugger("ops", name).build();
    watches.show(&d);
    let mut report = DebuggerReport::new(
        &format!("{name}.node-1"),
        DebuggerReportSpec {
            debugger: name.into(),
            node: "node-1".into(),
            run_at: "2026-11-24T06:00:00Z".into(),
            finished_at: "2026-11-24T06:00:02Z".into(),
            ..Default::default()
        },
    );
    report.metadata.namespace = Some("ops".into());
    ctx.caches.reports.observe(&Event::Apply(report));
    d
}

/// Reconciles each of `dbgs` once, waits out the pause statuses keep after
/// workload writes, and reconciles each again: the second round writes
/// their statuses and records their runs.
async fn reconcile_twice(ctx: &Arc<Context>, dbgs: &[Debugger]) {
    for round in 0..2 {
        if round == 1 {
            tokio::time::sleep(combo_operator::state::pace::QUIET * 2).await;
        }
        for d in dbgs {
            let done = reconcile(Arc::new(d.clone()), ctx.clone()).await;
            assert!(done.is_ok(), "{done:?}");
        }
    }
}

/// The uids whose record holds a written status.
fn written(ctx: &Context) -> Vec<String> {
    ctx.records.uids(|r| r.written.is_some())
}

/// The uids whose record holds a run seen.
fn runs_seen(ctx: &Context) -> Vec<String> {
    ctx.records.uids(|r| r.run_seen.is_some())
}

#[tokio::test]
async fn statuses_and_runs_kept_per_debugger_shrink_to_the_live_debuggers() {
    let (client, seen) = stand_in(no_script());
    let (ctx, mut watches) = context(client);
    let live = reporting(&ctx, &mut watches, "d");
    let mut all = vec![live.clone()];
    for i in 0..40 {
        all.push(reporting(&ctx, &mut watches, &format!("gone-{i}")));
    }
    reconcile_twice(&ctx, &all).await;
    assert_eq!(written(&ctx).len(), 41);
    assert_eq!(runs_seen(&ctx).len(), 41);
    let live_status = ctx.records.written("uid-d").unwrap();

    // 40 of them are deleted.
    for gone in &all[1..] {
        watches
            .debuggers
            .apply_watcher_event(&Event::Delete(gone.clone()));
    }
    // The live one reconciles with nothing to write: no status goes out,
    // yet the runs seen shrink on their own.
    let before = seen.count();
    let again = reconcile(Arc::new(live.clone()), ctx.clone()).await;
    assert!(again.is_ok(), "{again:?}");
    assert_eq!(requests(&seen, before), Vec::<String>::new());
    assert_eq!(runs_seen(&ctx), ["uid-d"]);
    assert_eq!(
        ctx.records.get("uid-d").unwrap().run_seen.unwrap(),
        "2026-11-24T06:00:00Z",
        "the live entry is kept"
    );

    // A new Debugger's status is written: the statuses shrink too.
    let new = reporting(&ctx, &mut watches, "e");
    reconcile_twice(&ctx, std::slice::from_ref(&new)).await;
    assert_eq!(written(&ctx), ["uid-d", "uid-e"]);
    assert_eq!(runs_seen(&ctx), ["uid-d", "uid-e"]);
    assert_eq!(
        ctx.records.written("uid-d").unwrap(),
        live_status,
        "the live entry is kept"
    );
}
