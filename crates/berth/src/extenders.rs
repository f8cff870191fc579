//! The Policy's HTTP extenders for `check`, `simulate` and `bench`: their clients, the
//! runtime their calls run on, and the node and pod JSON they are sent.

use std::sync::Arc;

use anyhow::{Context, Result};
use berth_extender::{Documents, Observer, PolicyExtender, documents_for, policy_extenders};
use berth_kube::ClusterObjects;
use berth_policy::EffectivePolicy;

/// Live extender clients and what they need.
pub struct Extenders {
    /// The clients, in call order.
    pub list: Vec<Arc<PolicyExtender>>,
    /// The JSON sent to them; fill it before scheduling.
    pub documents: Documents,
    // Last: the clients' connection tasks end with it.
    _runtime: tokio::runtime::Runtime,
}

impl Extenders {
    /// Sets up a client for each of the policy's extenders (none are called yet).
    pub fn new(policy: &EffectivePolicy, observer: Option<Observer>) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("berth-extender")
            .enable_all()
            .build()
            .context("starting the extender runtime")?;
        let documents = documents_for(&policy.extenders);
        let list = policy_extenders(&policy.extenders, runtime.handle(), &documents, observer)?;
        Ok(Extenders {
            list,
            documents,
            _runtime: runtime,
        })
    }

    /// The engine's view of them.
    pub fn engine(&self) -> Vec<Arc<dyn berth_engine::Extender>> {
        self.list
            .iter()
            .map(|e| e.clone() as Arc<dyn berth_engine::Extender>)
            .collect()
    }

    /// Keeps the JSON of a cluster file's nodes and pods for the calls.
    pub fn add_objects(&self, objects: &ClusterObjects) -> Result<()> {
        for node in &objects.nodes {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            self.documents.set_node(name, node)?;
        }
        for pod in &objects.pods {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            self.documents
                .set_pod(&format!("{namespace}/{name}"), pod)?;
        }
        Ok(())
    }
}

/// What `berth check` says about the extenders: warnings for what Berth will not do, and
/// notes for when an extender is left out (of a pod's cycle, or of `simulate`).
pub fn check(policy: &EffectivePolicy) -> (Vec<String>, Vec<String>) {
    let (mut warnings, mut notes) = (Vec::new(), Vec::new());
    for extender in &policy.extenders {
        let name = &extender.url_prefix;
        if let Some(verb) = &extender.preempt_verb {
            let victims = if extender.node_cache_capable {
                "by UID"
            } else {
                "as whole pods"
            };
            notes.push(format!(
                "extender {name}: preemptVerb {verb:?}: asked (victims {victims}) to keep or \
                 drop each preemption candidate and trim its victims, in simulate and run"
            ));
        }
        if let Some(verb) = &extender.bind_verb {
            notes.push(format!(
                "extender {name}: bindVerb {verb:?} is called by berth run only (berth simulate \
                 binds nothing)"
            ));
        }
        if !extender.managed_resources.is_empty() {
            let names: Vec<&str> = extender
                .managed_resources
                .iter()
                .map(|m| m.name.as_str())
                .collect();
            notes.push(format!(
                "extender {name}: called only for pods that request one of {}, as upstream does",
                names.join(", ")
            ));
        }
        if extender.ignorable && (extender.filter_verb.is_some() || extender.preempt_verb.is_some())
        {
            notes.push(format!(
                "extender {name}: ignorable: when its filter or preempt call fails or it cannot \
                 be reached, it is skipped for that pod"
            ));
        }
        if extender.filter_verb.is_none()
            && extender.prioritize_verb.is_none()
            && extender.bind_verb.is_none()
            && extender.preempt_verb.is_none()
        {
            warnings.push(format!(
                "extender {name}: has no filterVerb, prioritizeVerb, preemptVerb or bindVerb, so \
                 it is never called"
            ));
        }
    }
    if !policy.extenders.is_empty() {
        notes.push(
            "berth simulate calls these extenders; with --skip-extenders it calls none (each \
             named on stderr)"
                .to_string(),
        );
    }
    (warnings, notes)
}
