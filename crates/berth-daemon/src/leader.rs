//! Leader election on a coordination.k8s.io Lease (kube-lease-manager). Only the leader
//! schedules; the scheduling thread is told of every change at once.

use std::sync::mpsc::Sender;
use std::time::Duration;

use kube::Client;
use kube_lease_manager::{LeaseCreateMode, LeaseManager, LeaseManagerBuilder};
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
    /// long after the old one stops renewing.
    pub duration: Duration,
    /// How long before expiry the leader renews.
    pub renew_before: Duration,
    /// Wait before trying again after a failed acquisition or renewal.
    pub retry: Duration,
}

/// Campaigns for the lease until `stop` turns true, reporting leadership to `to`; releases
/// the lease on the way out if held.
pub async fn campaign(
    client: Client,
    settings: LeaseSettings,
    to: Sender<Input>,
    mut stop: watch::Receiver<bool>,
) {
    let mut leading = false;
    loop {
        let manager = match build(&client, &settings).await {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, lease = %settings.name, "cannot use the lease; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(settings.retry) => continue,
                    _ = stopped(&mut stop) => return,
                }
            }
        };
        loop {
            let changed = tokio::select! {
                changed = manager.changed() => changed,
                _ = stopped(&mut stop) => {
                    if leading && let Err(e) = manager.release().await {
                        warn!(error = %e, "could not release the lease");
                    }
                    return;
                }
            };
            match changed {
                Ok(now_leading) => {
                    leading = now_leading;
                    info!(identity = %settings.identity, leading, "lease changed");
                    if to.send(Input::Leader(leading)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    // Unsure whether the lease is still ours: stop scheduling until a fresh
                    // manager has read the lease again.
                    warn!(error = %e, "lease renewal failed");
                    if leading {
                        leading = false;
                        if to.send(Input::Leader(false)).is_err() {
                            return;
                        }
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(settings.retry) => break,
                        _ = stopped(&mut stop) => return,
                    }
                }
            }
        }
    }
}

/// Completes when `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn build(
    client: &Client,
    settings: &LeaseSettings,
) -> Result<LeaseManager, kube_lease_manager::LeaseManagerError> {
    LeaseManagerBuilder::new(client.clone(), &settings.name)
        .with_namespace(&settings.namespace)
        .with_identity(&settings.identity)
        .with_duration(settings.duration.as_secs().max(1))
        .with_grace(settings.renew_before.as_secs().max(1))
        .with_create_mode(LeaseCreateMode::AutoCreate)
        .build()
        .await
}
