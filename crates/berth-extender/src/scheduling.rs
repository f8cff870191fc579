//! The engine's [`berth_engine::Extender`] over HTTP: the cycle's nodes and pod become an
//! `ExtenderArgs` with the JSON from [`Documents`], the answers become engine verdicts.

use std::sync::Arc;

use berth_engine::extender::{
    ExtenderCall, FilterVerdict, PendingScores, PreemptionCall, PreemptionVerdict,
};
use berth_engine::model;
use berth_policy::Extender;
use tokio::runtime::Handle;

use crate::client::{HttpExtender, Observer, Pending, PreemptionCandidate};
use crate::documents::Documents;
use crate::error::ConfigError;

/// A Policy extender as the scheduling cycle calls it.
pub struct PolicyExtender {
    http: Arc<HttpExtender>,
    documents: Documents,
    managed: Vec<String>,
}

impl PolicyExtender {
    /// The HTTP client behind it.
    pub fn http(&self) -> &Arc<HttpExtender> {
        &self.http
    }

    /// Whether it binds pods for pods it is interested in (upstream's IsBinder and
    /// IsInterested, as extendersBinding asks them).
    pub fn binds(&self, pod: &model::Pod) -> bool {
        self.http.config().bind_verb.is_some() && berth_engine::extender::is_interested(self, pod)
    }

    /// The body of a filter or prioritize call for this cycle.
    fn body(&self, call: &ExtenderCall<'_>) -> Result<Vec<u8>, String> {
        let key = call.pod.key();
        let pod = self.documents.pod(&key).ok_or_else(|| {
            format!(
                "extender {:?}: Berth holds no JSON for pod {key}, so it cannot be sent \
                 (the caller must keep every pending pod in the extender documents)",
                self.http.name()
            )
        })?;
        let names: Vec<&str> = call
            .nodes
            .iter()
            .map(|id| call.cluster.node(*id).name())
            .collect();
        self.http.args(&pod, &names, |names| {
            self.documents.nodes(names).map_err(|node| {
                format!(
                    "extender {:?}: Berth holds no JSON for node {node}, so it cannot be sent",
                    self.http.name()
                )
            })
        })
    }
}

/// Checks that each of `extenders` can be set up (its URL, its TLS material and files),
/// without making clients: the first that cannot is the error.
pub fn check_extenders(extenders: &[Extender]) -> Result<(), ConfigError> {
    extenders.iter().try_for_each(crate::client::check)
}

/// One PolicyExtender per Policy extender (`policy.extenders`, in call order), sharing
/// `documents`; calls run on `runtime` and are reported to `observer`.
pub fn policy_extenders(
    extenders: &[Extender],
    runtime: &Handle,
    documents: &Documents,
    observer: Option<Observer>,
) -> Result<Vec<Arc<PolicyExtender>>, ConfigError> {
    extenders
        .iter()
        .map(|config| {
            let mut http = HttpExtender::new(config, runtime.clone())?;
            if let Some(observer) = &observer {
                http = http.with_observer(observer.clone());
            }
            Ok(Arc::new(PolicyExtender {
                http: Arc::new(http),
                documents: documents.clone(),
                managed: config
                    .managed_resources
                    .iter()
                    .map(|m| m.name.clone())
                    .collect(),
            }))
        })
        .collect()
}

/// The store these extenders need: node JSON only if one of them is not node-cache capable,
/// bound pods' JSON only if one of them preempts and is not.
pub fn documents_for(extenders: &[Extender]) -> Documents {
    let documents = if extenders.is_empty() {
        Documents::unused()
    } else if extenders.iter().all(|e| e.node_cache_capable) {
        Documents::pods_only()
    } else {
        Documents::new()
    };
    if extenders
        .iter()
        .any(|e| e.preempt_verb.is_some() && !e.node_cache_capable)
    {
        documents.with_bound_pods()
    } else {
        documents
    }
}

impl berth_engine::Extender for PolicyExtender {
    fn name(&self) -> &str {
        self.http.name()
    }

    fn ignorable(&self) -> bool {
        self.http.config().ignorable
    }

    fn managed_resources(&self) -> &[String] {
        &self.managed
    }

    fn filters(&self) -> bool {
        self.http.config().filter_verb.is_some()
    }

    fn weight(&self) -> i64 {
        let config = self.http.config();
        if config.prioritize_verb.is_some() {
            config.weight
        } else {
            0
        }
    }

    fn filter(&self, call: ExtenderCall<'_>) -> Result<FilterVerdict, String> {
        let body = self.body(&call)?;
        let answer = self
            .http
            .start_filter(body)
            .wait()
            .map_err(|e| e.to_string())?;
        let answer = self
            .http
            .filter_answer(&answer)
            .map_err(|e| e.to_string())?;
        Ok(FilterVerdict {
            passed: answer.passed,
            failed: answer.failed,
            failed_and_unresolvable: answer.failed_and_unresolvable,
        })
    }

    fn supports_preemption(&self) -> bool {
        self.http.config().preempt_verb.is_some()
    }

    fn process_preemption(&self, call: PreemptionCall<'_>) -> Result<PreemptionVerdict, String> {
        let key = call.pod.key();
        let pod = self.documents.pod(&key).ok_or_else(|| {
            format!(
                "extender {:?}: Berth holds no JSON for pod {key}, so it cannot be sent",
                self.http.name()
            )
        })?;
        let cluster = call.cluster;
        let candidates: Vec<PreemptionCandidate<'_>> = call
            .candidates
            .iter()
            .map(|c| PreemptionCandidate {
                node: cluster.node(c.node).name(),
                victims: c
                    .victims
                    .iter()
                    .map(|v| {
                        let victim = cluster.pod(*v);
                        (victim.key(), victim.pod.meta.uid.as_str())
                    })
                    .collect(),
                pdb_violations: c.pdb_violations as i64,
            })
            .collect();
        let body = self
            .http
            .preemption_args(&pod, &candidates, |key| self.documents.pod(key))?;
        let answer = self
            .http
            .start_preempt(body)
            .wait()
            .map_err(|e| e.to_string())?;
        self.http.preempt_answer(&answer).map_err(|e| e.to_string())
    }

    fn prioritize(&self, call: ExtenderCall<'_>) -> Box<dyn PendingScores> {
        match self.body(&call) {
            Ok(body) => Box::new(Scores::Started(
                self.http.clone(),
                self.http.start_prioritize(body),
            )),
            Err(message) => Box::new(Scores::Failed(message)),
        }
    }
}

enum Scores {
    Started(Arc<HttpExtender>, Pending),
    Failed(String),
}

impl PendingScores for Scores {
    fn wait(self: Box<Self>) -> Result<Vec<(String, i64)>, String> {
        match *self {
            Scores::Started(http, pending) => {
                let body = pending.wait().map_err(|e| e.to_string())?;
                http.prioritize_answer(&body).map_err(|e| e.to_string())
            }
            Scores::Failed(message) => Err(message),
        }
    }
}
