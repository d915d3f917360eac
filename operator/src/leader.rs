//! Leader election on a `coordination.k8s.io/v1` Lease (`--leader-elect`):
//! only the holder runs the controller; a replica that loses the Lease stops
//! its controller and stands by for the Lease again. The loop is tested
//! against a stand-in API server in `operator/tests/leader.rs`.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};

/// How long a Lease is valid without renewal.
pub const LEASE_SECONDS: i32 = 15;
/// How often the holder renews.
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
/// How long the holder keeps leading while renewals fail: well inside
/// [`LEASE_SECONDS`], so it has stopped before another replica may take
/// the Lease.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How soon a failed renewal is retried.
pub const RETRY_EVERY: Duration = Duration::from_secs(2);

/// Errors of this module.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Lease could not be read or written.
    #[error("lease {name}")]
    Kube {
        /// Lease name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The Lease changed between reading and writing it.
    #[error("lease {name} was written by another replica meanwhile")]
    Conflict {
        /// Lease name.
        name: String,
    },
    /// A renewal did not finish before [`RENEW_DEADLINE`].
    #[error("renewing lease {name} timed out")]
    Timeout {
        /// Lease name.
        name: String,
    },
    /// Another replica took the Lease.
    #[error("lost the lease {name} to {holder}")]
    Lost {
        /// Lease name.
        name: String,
        /// Its new holder.
        holder: String,
    },
}

/// What to do with a Lease as found. Pure.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it, or the holder let it expire: take it.
    Acquire,
    /// We hold it: renew it.
    Renew,
    /// Someone else holds it and it is valid.
    Wait {
        /// The current holder.
        holder: String,
    },
}

/// Decides from the Lease `spec` (None: no Lease yet) for `me` at `now`.
pub fn decide(spec: Option<&LeaseSpec>, me: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Acquire;
    };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == me {
        return Decision::Renew;
    }
    let seconds = i64::from(spec.lease_duration_seconds.unwrap_or(LEASE_SECONDS));
    let expired = match &spec.renew_time {
        Some(MicroTime(t)) => now.as_second() > t.as_second() + seconds,
        None => true,
    };
    if holder.is_empty() || expired {
        Decision::Acquire
    } else {
        Decision::Wait { holder }
    }
}

/// Whether a holder whose last renewal succeeded `since_renewal` ago has
/// to stop leading instead of retrying: the retry would come after
/// [`RENEW_DEADLINE`]. Pure.
pub fn give_up(since_renewal: Duration) -> bool {
    since_renewal + RETRY_EVERY > RENEW_DEADLINE
}

/// How long a renewal started `since_renewal` after the last successful
/// one may take: until [`RENEW_DEADLINE`]. A busy API server answering in
/// a few seconds is waited for, as long as leading still stops before the
/// Lease can expire for the other replicas. Pure.
pub fn attempt_budget(since_renewal: Duration) -> Duration {
    RENEW_DEADLINE.saturating_sub(since_renewal)
}

/// The Lease `spec` as `me` leaves it on a clean shutdown: no holder, so
/// that a standby takes it at its next check instead of waiting for it to
/// expire. `None` when `me` does not hold it. Pure.
pub fn released(spec: &LeaseSpec, me: &str) -> Option<LeaseSpec> {
    (spec.holder_identity.as_deref() == Some(me)).then(|| LeaseSpec {
        holder_identity: None,
        ..spec.clone()
    })
}

/// A Lease to compete for.
#[derive(Clone, Debug)]
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
}

impl Elector {
    /// An elector for Lease `name` in `namespace`, as `identity`.
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
        }
    }

    /// Waits until this replica holds the Lease. Failed reads and writes
    /// (the API server down) are retried.
    pub async fn acquire(&self) -> Result<(), Error> {
        loop {
            let decision = match self.try_once().await {
                Ok(d) => d,
                Err(Error::Conflict { .. }) => Decision::Wait {
                    holder: "another replica".into(),
                },
                Err(e) => {
                    tracing::warn!(lease = %self.name, error = %e, source = ?std::error::Error::source(&e),
                        "reading the lease failed; retrying");
                    tokio::time::sleep(RETRY_EVERY).await;
                    continue;
                }
            };
            match decision {
                Decision::Acquire | Decision::Renew => {
                    tracing::info!(lease = %self.name, identity = %self.identity, "acquired leadership");
                    return Ok(());
                }
                Decision::Wait { holder } => {
                    tracing::info!(lease = %self.name, %holder, "waiting for leadership");
                    tokio::time::sleep(RENEW_EVERY).await;
                }
            }
        }
    }

    /// Renews the Lease until another replica holds it or renewals have
    /// failed for [`RENEW_DEADLINE`]; returns why. A failed renewal (the
    /// API server restarting, a conflicting write) is retried every
    /// [`RETRY_EVERY`] meanwhile.
    pub async fn hold(&self) -> Error {
        let mut renewed = tokio::time::Instant::now();
        let mut wait = RENEW_EVERY;
        loop {
            tokio::time::sleep(wait).await;
            let budget = attempt_budget(renewed.elapsed());
            let attempt = tokio::time::timeout(budget, self.try_once())
                .await
                .unwrap_or_else(|_| {
                    Err(Error::Timeout {
                        name: self.name.clone(),
                    })
                });
            match attempt {
                Ok(Decision::Renew | Decision::Acquire) => {
                    renewed = tokio::time::Instant::now();
                    wait = RENEW_EVERY;
                }
                Ok(Decision::Wait { holder }) => {
                    return Error::Lost {
                        name: self.name.clone(),
                        holder,
                    }
                }
                Err(e) if give_up(renewed.elapsed()) => return e,
                Err(e) => {
                    tracing::warn!(lease = %self.name, error = %e, source = ?std::error::Error::source(&e),
                        "renewing the lease failed; retrying");
                    wait = RETRY_EVERY;
                }
            }
        }
    }

    /// Gives the Lease up if this replica holds it (after the controller
    /// stopped). A failure is only logged: the Lease then expires.
    pub async fn release(&self) {
        let result = async {
            let Some(mut lease) = self.api.get_opt(&self.name).await? else {
                return Ok(false);
            };
            let Some(spec) = lease
                .spec
                .as_ref()
                .and_then(|s| released(s, &self.identity))
            else {
                return Ok(false);
            };
            lease.spec = Some(spec);
            // With the read resourceVersion: a Lease taken meanwhile stays.
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map(|_| true)
        }
        .await;
        match result {
            Ok(true) => tracing::info!(lease = %self.name, "released leadership"),
            Ok(false) => {}
            Err(e) => tracing::warn!(lease = %self.name, error = %e, "releasing the lease failed"),
        }
    }

    /// One read and, unless someone else holds the Lease, one write.
    async fn try_once(&self) -> Result<Decision, Error> {
        let err = |source| Error::Kube {
            name: self.name.clone(),
            source,
        };
        let now = Timestamp::now();
        let existing = self.api.get_opt(&self.name).await.map_err(err)?;
        let decision = decide(
            existing.as_ref().and_then(|l| l.spec.as_ref()),
            &self.identity,
            now,
        );
        if matches!(decision, Decision::Wait { .. }) {
            return Ok(decision);
        }
        let mut spec = existing
            .as_ref()
            .and_then(|l| l.spec.clone())
            .unwrap_or_default();
        if decision == Decision::Acquire {
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.identity.clone());
        spec.lease_duration_seconds = Some(LEASE_SECONDS);
        spec.renew_time = Some(MicroTime(now));
        // Create or replace with the read resourceVersion: a concurrent
        // writer makes this fail instead of both believing they lead.
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                resource_version: existing
                    .as_ref()
                    .and_then(|l| l.metadata.resource_version.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        let pp = PostParams::default();
        let written = match existing {
            Some(_) => self.api.replace(&self.name, &pp, &lease).await,
            None => self.api.create(&pp, &lease).await,
        };
        match written {
            Ok(_) => Ok(decision),
            Err(kube::Error::Api(s)) if s.code == 409 => Err(Error::Conflict {
                name: self.name.clone(),
            }),
            Err(e) => Err(err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(Timestamp::from_second(renewed).unwrap())),
            ..LeaseSpec::default()
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap()
    }

    #[test]
    fn a_released_lease_is_acquired_at_once() {
        let mine = lease("me", 100);
        let free = released(&mine, "me").unwrap();
        assert_eq!(free.renew_time, mine.renew_time);
        assert_eq!(decide(Some(&free), "other", at(101)), Decision::Acquire);
        assert_eq!(released(&lease("other", 100), "me"), None, "not ours");
    }

    #[test]
    fn failed_renewals_are_retried_only_while_the_lease_is_safely_ours() {
        assert!(!give_up(Duration::ZERO));
        assert!(!give_up(RENEW_EVERY + RETRY_EVERY));
        assert!(give_up(
            RENEW_DEADLINE - RETRY_EVERY + Duration::from_millis(1)
        ));
        // Leading stops at RENEW_DEADLINE at the latest, before the Lease
        // can expire for the other replicas.
        assert!(RENEW_DEADLINE < Duration::from_secs(LEASE_SECONDS as u64));
    }

    #[test]
    fn a_slow_renewal_may_take_until_the_renew_deadline() {
        // Started on schedule, a renewal may take what is left of the
        // deadline, not only the retry period (a busy API server answers
        // in seconds).
        assert_eq!(attempt_budget(RENEW_EVERY), RENEW_DEADLINE - RENEW_EVERY);
        assert!(attempt_budget(RENEW_EVERY) > RETRY_EVERY);
        assert_eq!(attempt_budget(RENEW_DEADLINE), Duration::ZERO);
        assert_eq!(attempt_budget(RENEW_DEADLINE * 2), Duration::ZERO);
    }

    #[test]
    fn a_missing_lease_is_acquired() {
        assert_eq!(decide(None, "me", at(100)), Decision::Acquire);
    }

    #[test]
    fn our_own_lease_is_renewed() {
        assert_eq!(
            decide(Some(&lease("me", 0)), "me", at(100)),
            Decision::Renew
        );
    }

    #[test]
    fn a_valid_foreign_lease_makes_us_wait_until_it_expires() {
        let l = lease("other", 100);
        assert_eq!(
            decide(Some(&l), "me", at(110)),
            Decision::Wait {
                holder: "other".into()
            }
        );
        assert_eq!(decide(Some(&l), "me", at(116)), Decision::Acquire);
    }
}
