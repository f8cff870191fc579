//! CheckNodeCircuitBreaker (Berth): keeps pods off a node whose circuit breaker is open, and
//! lets a single probe through while it is half-open. The breaker's state comes from the
//! tracker in [`crate::health::breaker`], which the daemon (or `simulate`) runs and publishes
//! into the cluster; this rule only reads it, so a healthy cluster costs one emptiness check
//! per pod.

use crate::cluster::{NodeId, NodeInfo};
use crate::framework::{CycleContext, FailureKind, FilterPrep, FilterRule, NodeCheck, Reason};
use crate::health::state::Circuit;

/// The reason for a node whose breaker is open.
pub const OPEN: &str = "node(s) had an open circuit breaker";
/// The reason for a half-open node whose probe pod has not started yet.
pub const PROBING: &str = "node(s) had a half-open circuit breaker waiting for its probe pod";

/// The rule.
pub struct CheckNodeCircuitBreaker;

/// The nodes the pod may not use, resolved to ids once per pod: breakers are rarely open on
/// more than a few nodes, so a short scan per node beats hashing every node's name.
struct Check {
    refused: Vec<(NodeId, &'static str)>,
}

impl NodeCheck for Check {
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        match self.refused.iter().find(|(id, _)| *id == node.id) {
            None => true,
            Some((_, reason)) => {
                reasons.push((*reason).into());
                false
            }
        }
    }
}

impl FilterRule for CheckNodeCircuitBreaker {
    /// Removing pods does not mend a node's runtime.
    fn failure_kind(&self, _reason: &Reason) -> FailureKind {
        FailureKind::UnschedulableAndUnresolvable
    }

    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        let state = ctx.cluster.protections();
        if !state.any_circuit() {
            return FilterPrep::Skip;
        }
        let meta = &ctx.pod.pod.meta;
        let key = format!("{}/{}", meta.namespace, meta.name);
        let refused: Vec<(NodeId, &'static str)> = state
            .circuits()
            .iter()
            .filter_map(|(node, circuit)| {
                let reason = match circuit {
                    Circuit::Open { .. } => OPEN,
                    Circuit::HalfOpen { probe: Some(probe) } if *probe != key => PROBING,
                    Circuit::HalfOpen { .. } => return None,
                };
                Some((ctx.cluster.node_by_name(node)?, reason))
            })
            .collect();
        if refused.is_empty() {
            return FilterPrep::Skip;
        }
        FilterPrep::Check(Box::new(Check { refused }))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::testkit::*;

    fn open() -> Circuit {
        Circuit::Open {
            since: 100,
            until: 400,
            failures: vec![],
        }
    }

    /// (case, breakers not closed, pod name, nodes that pass).
    type Case = (
        &'static str,
        Vec<(&'static str, Circuit)>,
        &'static str,
        &'static [&'static str],
    );

    #[test]
    fn open_nodes_are_rejected_a_half_open_one_takes_one_probe() {
        let cases: &[Case] = &[
            ("all closed", vec![], "p", &["a", "b", "c"]),
            ("one open", vec![("a", open())], "p", &["b", "c"]),
            (
                "half-open without probe",
                vec![("a", Circuit::HalfOpen { probe: None })],
                "p",
                &["a", "b", "c"],
            ),
            (
                "half-open probing with another pod",
                vec![(
                    "a",
                    Circuit::HalfOpen {
                        probe: Some("default/probe".into()),
                    },
                )],
                "p",
                &["b", "c"],
            ),
            (
                "the probe itself",
                vec![(
                    "a",
                    Circuit::HalfOpen {
                        probe: Some("default/probe".into()),
                    },
                )],
                "probe",
                &["a", "b", "c"],
            ),
            (
                "all open",
                vec![("a", open()), ("b", open()), ("c", open())],
                "p",
                &[],
            ),
        ];
        for (name, circuits, pod_name, want) in cases {
            let nodes = vec![node("a").build(), node("b").build(), node("c").build()];
            let mut cluster = cluster(nodes, vec![]);
            let map: HashMap<String, Circuit> = circuits
                .iter()
                .map(|(n, c)| (n.to_string(), c.clone()))
                .collect();
            cluster.protections_mut().set_circuits(map);
            let results = run_filter(
                &CheckNodeCircuitBreaker,
                &mut cluster,
                pod(pod_name).build(),
            );
            assert_eq!(passing(&results), *want, "{name}");
            for (node, reasons) in &results {
                let want_reason = match circuits.iter().find(|(n, _)| n == node) {
                    Some((_, Circuit::Open { .. })) => vec![OPEN.to_string()],
                    _ if want.contains(&node.as_str()) => vec![],
                    _ => vec![PROBING.to_string()],
                };
                assert_eq!(*reasons, want_reason, "{name}: {node}");
            }
        }
    }

    #[test]
    fn reasons_are_unresolvable() {
        let reason: Reason = OPEN.into();
        assert_eq!(
            CheckNodeCircuitBreaker.failure_kind(&reason),
            FailureKind::UnschedulableAndUnresolvable
        );
    }
}
