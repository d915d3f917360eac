//! Leader election against a stand-in API server that keeps one Lease the
//! way the real one does (create fails when it exists, a replace with a
//! stale resourceVersion conflicts), with paused time: the requests the
//! elector makes, in order and when, while it acquires, renews, steps down
//! and releases the Lease.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use combo_operator::leader::{Elector, Error, RENEW_DEADLINE};
use combo_testkit::stand_in::{Answer, StandIn};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tokio::time::Instant;

const LEASE: &str = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/combo-operator";
const GET: &str = "GET /apis/coordination.k8s.io/v1/namespaces/ops/leases/combo-operator";
const PUT: &str = "PUT /apis/coordination.k8s.io/v1/namespaces/ops/leases/combo-operator";
const POST: &str = "POST /apis/coordination.k8s.io/v1/namespaces/ops/leases";

/// How the stand-in answers.
enum Mode {
    /// From the Lease it keeps.
    Up,
    /// Every request fails with 500 (etcd away).
    Failing,
    /// No request is ever answered.
    Hanging,
}

/// The stand-in, and how it answers now.
#[derive(Clone)]
struct Server {
    stand_in: StandIn,
    mode: Arc<Mutex<Mode>>,
}

impl Server {
    fn answer(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }
}

fn stand_in(lease: Option<LeaseSpec>) -> (Client, Server) {
    let mode = Arc::new(Mutex::new(Mode::Up));
    let now = mode.clone();
    let (client, stand_in) = StandIn::answering(move |_| match *now.lock().unwrap() {
        Mode::Up => Answer::Store,
        Mode::Failing => Answer::status(500, "InternalError"),
        Mode::Hanging => Answer::Never,
    });
    let server = Server { stand_in, mode };
    if let Some(spec) = lease {
        put_lease(&server, spec);
    }
    (client, server)
}

/// Another replica writes the Lease as `spec`.
fn put_lease(server: &Server, spec: LeaseSpec) {
    let mut lease = Lease {
        spec: Some(spec),
        ..Lease::default()
    };
    lease.metadata.name = Some("combo-operator".into());
    lease.metadata.namespace = Some("ops".into());
    server
        .stand_in
        .put(LEASE, serde_json::to_value(lease).unwrap());
}

/// A Lease `holder` renewed just now.
fn held_by(holder: &str) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(holder.into()),
        lease_duration_seconds: Some(15),
        renew_time: Some(MicroTime(Timestamp::now())),
        lease_transitions: Some(1),
        ..LeaseSpec::default()
    }
}

/// The (seconds, "method path") of the requests from the `from`th on.
fn requests(server: &Server, from: usize) -> Vec<(u64, &'static str)> {
    let known = [GET, PUT, POST];
    server.stand_in.requests()[from..]
        .iter()
        .map(|r| {
            let line = r.line();
            let known = known.into_iter().find(|k| *k == line);
            (r.at.as_secs(), known.unwrap_or("unexpected request"))
        })
        .collect()
}

fn seen(server: &Server) -> usize {
    server.stand_in.count()
}

/// The Lease as stored now.
fn stored(server: &Server) -> LeaseSpec {
    let lease = server.stand_in.stored(LEASE).expect("a Lease");
    let lease: Lease = serde_json::from_value(lease).unwrap();
    lease.spec.unwrap()
}

fn elector(client: Client) -> Elector {
    Elector::new(client, "ops", "combo-operator", "me")
}

#[tokio::test(start_paused = true)]
async fn an_unheld_lease_is_created_and_then_renewed_every_five_seconds() {
    let (client, server) = stand_in(None);
    let e = elector(client);
    e.acquire().await.unwrap();
    assert_eq!(requests(&server, 0), [(0, GET), (0, POST)]);
    let lease = stored(&server);
    assert_eq!(lease.holder_identity.as_deref(), Some("me"));
    assert_eq!(lease.lease_duration_seconds, Some(15));
    assert_eq!(lease.lease_transitions, Some(1));

    let held = tokio::time::timeout(Duration::from_secs(16), e.hold()).await;
    assert!(held.is_err(), "still leading: {held:?}");
    assert_eq!(
        requests(&server, 2),
        [
            (5, GET),
            (5, PUT),
            (10, GET),
            (10, PUT),
            (15, GET),
            (15, PUT)
        ]
    );
    let renewed = stored(&server);
    assert_eq!(renewed.holder_identity.as_deref(), Some("me"));
    assert_eq!(
        renewed.lease_transitions,
        Some(1),
        "a renewal is no transition"
    );
}

#[tokio::test(start_paused = true)]
async fn a_standby_waits_while_another_replica_holds_the_lease_and_takes_it_once_released() {
    let (client, server) = stand_in(Some(held_by("other")));
    let e = elector(client);
    let other = server.clone();
    let release = async move {
        tokio::time::sleep(Duration::from_secs(7)).await;
        let mut spec = stored(&other);
        spec.holder_identity = None;
        put_lease(&other, spec);
    };
    let (acquired, ()) = tokio::join!(e.acquire(), release);
    acquired.unwrap();
    // Reads only while the Lease is the other's; the write once it is free.
    assert_eq!(
        requests(&server, 0),
        [(0, GET), (5, GET), (10, GET), (10, PUT)]
    );
    let lease = stored(&server);
    assert_eq!(lease.holder_identity.as_deref(), Some("me"));
    assert_eq!(lease.lease_transitions, Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_lease_is_taken_steps_down_and_stands_by() {
    let (client, server) = stand_in(None);
    let e = elector(client);
    e.acquire().await.unwrap();
    let thief = server.clone();
    let take = async move {
        tokio::time::sleep(Duration::from_secs(7)).await;
        put_lease(&thief, held_by("other"));
    };
    let (lost, ()) = tokio::join!(e.hold(), take);
    assert!(
        matches!(&lost, Error::Lost { holder, .. } if holder == "other"),
        "{lost:?}"
    );
    // Renewed at 5 s; at 10 s it reads the other holder and writes nothing.
    assert_eq!(requests(&server, 2), [(5, GET), (5, PUT), (10, GET)]);

    // Standing by: it reads the Lease every 5 s and never writes it.
    let from = seen(&server);
    let standby = tokio::time::timeout(Duration::from_secs(11), e.acquire()).await;
    assert!(standby.is_err(), "acquired a held lease");
    assert_eq!(requests(&server, from), [(10, GET), (15, GET), (20, GET)]);
    assert_eq!(stored(&server).holder_identity.as_deref(), Some("other"));
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_fail_steps_down_before_the_deadline() {
    let (client, server) = stand_in(None);
    let e = elector(client);
    e.acquire().await.unwrap();
    server.answer(Mode::Failing);
    let started = Instant::now();
    let lost = e.hold().await;
    assert!(matches!(lost, Error::Kube { .. }), "{lost:?}");
    // Retried every 2 s, and given up while a retry would pass the
    // deadline: before the Lease can expire for the standbys.
    assert_eq!(requests(&server, 2), [(5, GET), (7, GET), (9, GET)]);
    assert_eq!(started.elapsed(), Duration::from_secs(9));
    assert!(started.elapsed() < RENEW_DEADLINE);

    // Standing by; nobody took the Lease, so once the API server is back
    // it is taken back at the next check.
    server.answer(Mode::Up);
    let from = seen(&server);
    e.acquire().await.unwrap();
    assert_eq!(requests(&server, from), [(9, GET), (9, PUT)]);
}

#[tokio::test(start_paused = true)]
async fn a_renewal_the_api_server_never_answers_is_given_up_at_the_deadline() {
    let (client, server) = stand_in(None);
    let e = elector(client);
    e.acquire().await.unwrap();
    server.answer(Mode::Hanging);
    let started = Instant::now();
    let lost = e.hold().await;
    assert!(matches!(lost, Error::Timeout { .. }), "{lost:?}");
    assert_eq!(requests(&server, 2), [(5, GET)]);
    assert_eq!(started.elapsed(), RENEW_DEADLINE);
}

#[tokio::test(start_paused = true)]
async fn release_clears_the_holder_only_of_a_lease_this_replica_holds() {
    let (client, server) = stand_in(None);
    let e = elector(client);
    e.acquire().await.unwrap();
    e.release().await;
    assert_eq!(requests(&server, 2), [(0, GET), (0, PUT)]);
    assert_eq!(stored(&server).holder_identity, None);

    put_lease(&server, held_by("other"));
    e.release().await;
    assert_eq!(requests(&server, 4), [(0, GET)], "another's lease stays");
    assert_eq!(stored(&server).holder_identity.as_deref(), Some("other"));
}
