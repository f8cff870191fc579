//! Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it:
//! the holder renews every retry period; a standby takes the lease once its record has not
//! changed for the lease duration (measured on the standby's own clock, from when it saw
//! the record change); a holder that has not renewed within the renew deadline steps down.
//!
//! Leading is a deadline, not a flag ([`Leadership`]): each renewal sent at `t` makes this
//! replica the leader until `t + renew deadline`, which is before any standby can take
//! over (`lease duration` after it saw that renewal). The scheduling thread and the binder
//! check it before they act, so a replica that was paused (SIGSTOP, a long GC-like stall, a
//! suspended VM) past its lease binds nothing on its stale cache when it resumes, even
//! before its election loop has run again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::Input;

/// The Lease and this replica's part in it.
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This replica's identity (the Lease's holder while it leads).
    pub identity: String,
    /// How long a lease holds without renewal; a new leader takes over within about this
    /// long after the old one stops renewing. Whole seconds (the Lease stores seconds).
    pub duration: Duration,
    /// How long after sending its last successful renewal the leader may still act;
    /// shorter than `duration`.
    pub renew_deadline: Duration,
    /// How often the leader renews and a standby tries.
    pub retry: Duration,
}

/// Until when this replica may act as the leader, shared by the election loop, the
/// scheduling thread and the binder.
#[derive(Debug, Clone)]
pub struct Leadership(Arc<Deadline>);

#[derive(Debug)]
struct Deadline {
    origin: Instant,
    /// Nanoseconds after `origin`; 0 = not leading.
    until: AtomicU64,
}

impl Leadership {
    /// Not leading until an election loop extends it.
    pub fn elected() -> Self {
        Leadership(Arc::new(Deadline {
            origin: Instant::now(),
            until: AtomicU64::new(0),
        }))
    }

    /// Always leading: no election (a single replica).
    pub fn sole() -> Self {
        Leadership(Arc::new(Deadline {
            origin: Instant::now(),
            until: AtomicU64::new(u64::MAX),
        }))
    }

    /// Whether this replica may act as the leader at `now`.
    pub fn holds(&self, now: Instant) -> bool {
        let until = self.0.until.load(Ordering::Acquire);
        let elapsed = now.saturating_duration_since(self.0.origin).as_nanos();
        until != 0 && elapsed < u128::from(until)
    }

    /// Leading until `until`.
    fn extend(&self, until: Instant) {
        let nanos = until.saturating_duration_since(self.0.origin).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
        self.0.until.store(nanos, Ordering::Release);
    }

    /// Not leading.
    fn end(&self) {
        self.0.until.store(0, Ordering::Release);
    }
}

/// Campaigns for the lease until `stop` turns true, keeping `leadership` and telling `to`
/// (after every renewal, so the scheduling thread wakes if its deadline had lapsed);
/// releases the lease on the way out if held.
pub async fn campaign(
    client: Client,
    settings: LeaseSettings,
    leadership: Leadership,
    to: Sender<Input>,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let mut observed: Option<Observed> = None;
    let mut leading = false;
    loop {
        let sent = Instant::now();
        let attempt = tokio::time::timeout(
            settings.renew_deadline,
            acquire_or_renew(&api, &settings, &mut observed),
        )
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {:?}", settings.renew_deadline)));
        let (now_leading, renewed) = match attempt {
            Ok(held) => (held, held),
            Err(e) => {
                warn!(error = %e, lease = %settings.name, "lease acquisition or renewal failed");
                // Still the leader until the deadline of the last renewal that went through.
                (leading && leadership.holds(Instant::now()), false)
            }
        };
        if now_leading && !leading {
            info!(identity = %settings.identity, "lease acquired");
        } else if leading && !now_leading {
            info!(identity = %settings.identity, "lease lost");
        }
        if renewed {
            leadership.extend(sent + settings.renew_deadline);
        } else if !now_leading {
            leadership.end();
        }
        if (now_leading || leading) && to.send(Input::Leader(now_leading)).is_err() {
            return;
        }
        leading = now_leading;
        tokio::select! {
            _ = tokio::time::sleep(settings.retry) => {}
            _ = stopped(&mut stop) => {
                if leading {
                    leadership.end();
                    if let Err(e) = release(&api, &settings).await {
                        warn!(error = %e, "could not release the lease");
                    }
                }
                return;
            }
        }
    }
}

/// The parts of a Lease record whose change shows its holder is alive, and when this
/// replica saw them change.
#[derive(Debug, Clone)]
struct Observed {
    record: Record,
    at: Instant,
}

#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: Option<String>,
    renew_time: Option<Timestamp>,
    transitions: Option<i32>,
}

impl Record {
    fn of(spec: &LeaseSpec) -> Self {
        Record {
            holder: spec.holder_identity.clone().filter(|h| !h.is_empty()),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            transitions: spec.lease_transitions,
        }
    }
}

/// One round: creates the Lease, renews it if held, or takes it if its holder has let it
/// expire. Ok(true) when this replica holds it afterwards. Writes carry the version read,
/// so two replicas never both succeed (the loser gets 409 Conflict).
async fn acquire_or_renew(
    api: &Api<Lease>,
    settings: &LeaseSettings,
    observed: &mut Option<Observed>,
) -> Result<bool, String> {
    let seconds = i32::try_from(settings.duration.as_secs()).unwrap_or(i32::MAX);
    let now = MicroTime(Timestamp::now());
    let Some(lease) = api
        .get_opt(&settings.name)
        .await
        .map_err(|e| e.to_string())?
    else {
        let spec = LeaseSpec {
            holder_identity: Some(settings.identity.clone()),
            lease_duration_seconds: Some(seconds),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(settings.name.clone()),
                namespace: Some(settings.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec.clone()),
        };
        return written(
            api.create(&PostParams::default(), &lease).await,
            observed,
            &spec,
        );
    };
    let spec = lease.spec.unwrap_or_default();
    let record = Record::of(&spec);
    let seen = Instant::now();
    if observed.as_ref().is_none_or(|o| o.record != record) {
        *observed = Some(Observed { record, at: seen });
    }
    let Some(o) = observed.as_ref() else {
        return Ok(false);
    };
    let ours = o.record.holder.as_deref() == Some(settings.identity.as_str());
    if o.record.holder.is_some() && !ours {
        let held_for = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(settings.duration, Duration::from_secs);
        if seen < o.at + held_for {
            return Ok(false);
        }
    }
    let mut next = spec.clone();
    next.holder_identity = Some(settings.identity.clone());
    next.lease_duration_seconds = Some(seconds);
    next.renew_time = Some(now.clone());
    if !ours {
        next.acquire_time = Some(now);
        next.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": lease.metadata.resource_version},
        "spec": next,
    });
    let result = api
        .patch(
            &settings.name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await;
    written(result, observed, &next)
}

/// The outcome of a write of `spec`: held (and observed as written) on success, not held
/// on a conflict.
fn written(
    result: Result<Lease, kube::Error>,
    observed: &mut Option<Observed>,
    spec: &LeaseSpec,
) -> Result<bool, String> {
    match result {
        Ok(_) => {
            *observed = Some(Observed {
                record: Record::of(spec),
                at: Instant::now(),
            });
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(e) => Err(e.to_string()),
    }
}

/// Gives the lease up at shutdown so a standby takes over at once (client-go's
/// ReleaseOnCancel): no holder, a one-second duration.
async fn release(api: &Api<Lease>, settings: &LeaseSettings) -> Result<(), kube::Error> {
    let Some(lease) = api.get_opt(&settings.name).await? else {
        return Ok(());
    };
    let spec = lease.spec.unwrap_or_default();
    if spec.holder_identity.as_deref() != Some(settings.identity.as_str()) {
        return Ok(());
    }
    let now = MicroTime(Timestamp::now());
    let patch = serde_json::json!({
        "metadata": {"resourceVersion": lease.metadata.resource_version},
        "spec": {"holderIdentity": null, "leaseDurationSeconds": 1,
                 "renewTime": now, "acquireTime": now},
    });
    api.patch(
        &settings.name,
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await
    .map(drop)
}

/// Completes when `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_is_a_deadline() {
        let l = Leadership::elected();
        let now = Instant::now();
        assert!(!l.holds(now));
        l.extend(now + Duration::from_secs(3));
        assert!(l.holds(now + Duration::from_secs(2)));
        // A replica resumed after a pause longer than its deadline does not lead.
        assert!(!l.holds(now + Duration::from_secs(3)));
        l.end();
        assert!(!l.holds(now));
        assert!(Leadership::sole().holds(now + Duration::from_secs(1 << 30)));
    }
}
