//! Counting agreement and keeping the disagreements.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use berth_kube::ClusterObjects;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use crate::berth::BerthOutcome;
use crate::generate::Scenario;
use crate::replay::Verdict;
use crate::upstream::{DefaultPodTopologySpread, ScoreLog};

/// Agreement under one gate setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateStats {
    /// Scenarios run.
    pub scenarios: usize,
    /// Pods the reference decided on.
    pub pods: usize,
    /// Pods where Berth agreed on the decision (node within its top set, or unschedulable).
    pub decisions_agree: usize,
    /// Pods the reference found unschedulable.
    pub fit_errors: usize,
    /// ... of which Berth gave the identical FitError text.
    pub fit_errors_agree: usize,
    /// Pods the reference scored (more than one feasible node).
    pub scored: usize,
    /// ... of which every plugin's score on every node was identical.
    pub scores_agree: usize,
    /// Pods the reference ran preemption for (found unschedulable).
    pub preemptions: usize,
    /// ... of which it nominated a node and deleted victims.
    pub preempted: usize,
    /// ... on which Berth agreed: the same node (within Berth's tie) and the same victims
    /// there, or no preemption on either side.
    pub preemptions_agree: usize,
}

impl GateStats {
    fn all_agree(&self) -> bool {
        self.decisions_agree == self.pods
            && self.fit_errors_agree == self.fit_errors
            && self.scores_agree == self.scored
            && self.preemptions_agree == self.preemptions
    }
}

/// One way Berth and the reference differed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The scenario's seed.
    pub seed: u64,
    /// Whether the seed is a preemption scenario's ([`crate::preemption::scenario`]).
    pub preemption: bool,
    /// The gate setting.
    pub gate: DefaultPodTopologySpread,
    /// `namespace/name` of the pod, or "-" for the scenario as a whole.
    pub pod: String,
    /// What differed: "policy", "error", "decision", "fit-error", "scores", "preemption".
    pub what: &'static str,
    /// Both sides, in words.
    pub detail: String,
}

impl Disagreement {
    /// A disagreement about `pod` of `scenario`.
    pub fn new(
        scenario: &Scenario,
        gate: DefaultPodTopologySpread,
        pod: &str,
        what: &'static str,
        detail: String,
    ) -> Self {
        Disagreement {
            seed: scenario.seed,
            preemption: scenario.preemption,
            gate,
            pod: pod.to_owned(),
            what,
            detail,
        }
    }
}

/// The outcome of a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Per gate setting, in the order run.
    pub gates: Vec<(DefaultPodTopologySpread, GateStats)>,
    /// Every disagreement found.
    pub disagreements: Vec<Disagreement>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// Whether Berth agreed on everything.
    pub fn all_agree(&self) -> bool {
        self.disagreements.is_empty() && self.gates.iter().all(|(_, s)| s.all_agree())
    }

    /// The stats of `gate`, added if new.
    pub fn gate(&mut self, gate: DefaultPodTopologySpread) -> &mut GateStats {
        let index = match self.gates.iter().position(|(g, _)| *g == gate) {
            Some(i) => i,
            None => {
                self.gates.push((gate, GateStats::default()));
                self.gates.len() - 1
            }
        };
        &mut self.gates[index].1
    }

    /// Records a disagreement.
    pub fn disagree(&mut self, disagreement: Disagreement) {
        self.disagreements.push(disagreement);
    }

    /// Compares Berth's outcome on one pod with the reference's; returns whether they
    /// disagreed on anything.
    pub fn compare(
        &mut self,
        scenario: &Scenario,
        gate: DefaultPodTopologySpread,
        pod: &str,
        verdict: &Verdict,
        scores: &ScoreLog,
        ours: anyhow::Result<BerthOutcome>,
    ) -> bool {
        let before = self.disagreements.len();
        let stats = self.gate(gate);
        stats.pods += 1;
        if verdict.fit_error().is_some() {
            stats.fit_errors += 1;
            stats.preemptions += 1;
        }
        if matches!(verdict, Verdict::Preempted { .. }) {
            stats.preempted += 1;
        }
        // After a preemption the log holds the scores of the retry, once the victims were
        // gone, which Berth was not asked about.
        let scored = matches!(verdict, Verdict::Bound(_)) && !scores.plugins.is_empty();
        if scored {
            stats.scored += 1;
        }
        let ours = match ours {
            Ok(ours) => ours,
            Err(e) => {
                let detail = format!("Berth failed: {e:#}");
                self.disagree(Disagreement::new(scenario, gate, pod, "error", detail));
                return true;
            }
        };
        let decision_agrees = match verdict {
            Verdict::Bound(node) => ours.top.contains(node),
            Verdict::Unschedulable(_) | Verdict::Preempted { .. } => ours.node.is_none(),
        };
        if decision_agrees {
            self.gate(gate).decisions_agree += 1;
        }
        if verdict.fit_error().is_some() {
            match preemption_difference(verdict, &ours) {
                None => self.gate(gate).preemptions_agree += 1,
                Some(detail) => {
                    self.disagree(Disagreement::new(scenario, gate, pod, "preemption", detail));
                }
            }
        }
        if let Some(message) = verdict.fit_error() {
            if ours.message.as_deref() == Some(message) {
                self.gate(gate).fit_errors_agree += 1;
            } else {
                let detail = format!(
                    "v1.22: {message:?}\n    Berth: {:?}",
                    ours.message.as_deref().unwrap_or("<placed>")
                );
                self.disagree(Disagreement::new(scenario, gate, pod, "fit-error", detail));
            }
        }
        if let (false, Verdict::Bound(node)) = (decision_agrees, verdict) {
            let berth = match &ours.message {
                Some(message) => format!("Berth: {message:?}"),
                None => format!("Berth's top nodes {:?}, totals {:?}", ours.top, ours.totals),
            };
            let detail = format!("v1.22 bound it to {node}; {berth}");
            self.disagree(Disagreement::new(scenario, gate, pod, "decision", detail));
        }
        if scored {
            match score_differences(scores, &ours) {
                None => self.gate(gate).scores_agree += 1,
                Some(detail) => {
                    self.disagree(Disagreement::new(scenario, gate, pod, "scores", detail));
                }
            }
        }
        self.disagreements.len() > before
    }
}

/// How Berth's preemption differs from the reference's, in words, or None if they agree:
/// the reference's node must be one of Berth's tied best candidates with the same victims
/// there, or neither preempts.
fn preemption_difference(verdict: &Verdict, ours: &BerthOutcome) -> Option<String> {
    let berth = ours.preemption.clone().unwrap_or_default();
    let describe = || match &berth.not_eligible {
        Some(why) => format!("Berth does not preempt: {why}"),
        None if berth.victims.is_empty() => "Berth finds no candidate".to_owned(),
        None => format!(
            "Berth nominates one of {:?}; its candidates' victims {:?}",
            berth.nominated, berth.victims
        ),
    };
    match verdict {
        Verdict::Preempted { node, victims, .. } => {
            let agrees = berth.nominated.contains(node) && berth.victims.get(node) == Some(victims);
            (!agrees).then(|| {
                format!(
                    "v1.22 nominated {node}, evicting {victims:?}; {}",
                    describe()
                )
            })
        }
        _ => {
            (!berth.nominated.is_empty()).then(|| format!("v1.22 does not preempt; {}", describe()))
        }
    }
}

/// Every (plugin, node) whose score differs, and every node whose total differs, in words,
/// or None if all agree. Plugins Berth
/// scores that v1.22 did not log count too (a missing plugin is a difference).
fn score_differences(reference: &ScoreLog, ours: &BerthOutcome) -> Option<String> {
    let keys: BTreeSet<&(String, String)> = reference
        .plugins
        .keys()
        .chain(ours.plugins.keys())
        .collect();
    let mut by_plugin: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for key in keys {
        let theirs = reference.plugins.get(key);
        let mine = ours.plugins.get(key);
        if theirs != mine {
            by_plugin.entry(key.0.as_str()).or_default().push(format!(
                "{} v1.22 {} Berth {}",
                key.1,
                theirs.map_or("-".to_owned(), i64::to_string),
                mine.map_or("-".to_owned(), i64::to_string)
            ));
        }
    }
    // The totals as well: they include what no plugin logs (Berth's score for an entry
    // v1.22 drops, such as EqualPriority).
    for (node, theirs) in &reference.totals {
        let mine = ours.totals.get(node);
        if mine != Some(theirs) {
            by_plugin.entry("total").or_default().push(format!(
                "{node} v1.22 {theirs} Berth {}",
                mine.map_or("-".to_owned(), i64::to_string)
            ));
        }
    }
    if by_plugin.is_empty() {
        return None;
    }
    Some(
        by_plugin
            .iter()
            .map(|(plugin, nodes)| format!("{plugin}: {}", nodes.join(", ")))
            .collect::<Vec<_>>()
            .join("\n    "),
    )
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "n/a".to_owned();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "differential run against kube-scheduler v1.22.17 ({:.0} s)",
            self.elapsed.as_secs_f64()
        )?;
        for (gate, s) in &self.gates {
            writeln!(
                f,
                "  {}: {} scenarios, {} pods",
                gate.label(),
                s.scenarios,
                s.pods
            )?;
            writeln!(
                f,
                "    decisions   {}/{} ({})",
                s.decisions_agree,
                s.pods,
                percent(s.decisions_agree, s.pods)
            )?;
            writeln!(
                f,
                "    FitErrors   {}/{} ({})",
                s.fit_errors_agree,
                s.fit_errors,
                percent(s.fit_errors_agree, s.fit_errors)
            )?;
            writeln!(
                f,
                "    scores      {}/{} scored pods identical ({})",
                s.scores_agree,
                s.scored,
                percent(s.scores_agree, s.scored)
            )?;
            writeln!(
                f,
                "    preemption  {}/{} ({}; v1.22 preempted for {})",
                s.preemptions_agree,
                s.preemptions,
                percent(s.preemptions_agree, s.preemptions),
                s.preempted
            )?;
        }
        if !self.disagreements.is_empty() {
            writeln!(f, "disagreements ({}):", self.disagreements.len())?;
        }
        for d in &self.disagreements {
            writeln!(
                f,
                "  {}seed {} [{}] {} {}:\n    {}",
                if d.preemption { "preemption " } else { "" },
                d.seed,
                d.gate.label(),
                d.pod,
                d.what,
                d.detail
            )?;
        }
        Ok(())
    }
}

/// Writes `<out>/<prefix>-<pod>/policy.json` and `cluster.json` (a v1 List: the state
/// before the pod plus the pod), which `berth simulate --explain` runs on.
pub fn write_reproduction(
    out: &Path,
    scenario: &Scenario,
    gate: DefaultPodTopologySpread,
    pod_key: &str,
    state: &ClusterObjects,
    pod: &Pod,
) -> Result<()> {
    let dir = out.join(format!(
        "{}seed{}-gate{}-{}",
        if scenario.preemption {
            "preemption-"
        } else {
            ""
        },
        scenario.seed,
        u8::from(gate.enabled()),
        pod_key.replace('/', "-")
    ));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("policy.json"),
        serde_json::to_vec_pretty(&scenario.policy)?,
    )?;
    let mut pods = state.pods.clone();
    pods.push(pod.clone());
    let items = [
        values(&state.namespaces)?,
        values(&state.nodes)?,
        values(&state.services)?,
        values(&state.replication_controllers)?,
        values(&state.replica_sets)?,
        values(&state.stateful_sets)?,
        values(&state.persistent_volumes)?,
        values(&state.persistent_volume_claims)?,
        values(&state.storage_classes)?,
        values(&state.csi_nodes)?,
        values(&state.priority_classes)?,
        values(&state.pod_disruption_budgets)?,
        values(&pods)?,
    ]
    .concat();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(dir.join("cluster.json"), serde_json::to_vec_pretty(&list)?)?;
    Ok(())
}

fn values<T: serde::Serialize>(objects: &[T]) -> serde_json::Result<Vec<Value>> {
    objects.iter().map(serde_json::to_value).collect()
}
