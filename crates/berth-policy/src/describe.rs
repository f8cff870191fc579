//! The human-readable effective configuration printed by `berth check`.

use std::fmt::Write as _;
use std::mem::discriminant;

use crate::names;
use crate::types::{
    EffectivePolicy, Extender, PodIpSource, PredicateConfig, PredicateKind, PriorityConfig,
    PriorityKind, WasmPlugin, WhenCapacityMissing,
};

impl EffectivePolicy {
    /// Describes the effective configuration: predicates in evaluation order, priorities,
    /// extenders, the scalar settings, what came from defaults, and the warnings.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let source = |defaulted: bool| {
            if defaulted {
                "default provider"
            } else {
                "from the file"
            }
        };
        let _ = writeln!(
            out,
            "Predicates ({}, in evaluation order; {}):",
            self.predicates.len(),
            source(self.defaulted.predicates)
        );
        for (index, predicate) in self.predicates.iter().enumerate() {
            let _ = writeln!(out, "  {:>2}. {}", index + 1, predicate_line(predicate));
        }
        let _ = writeln!(
            out,
            "Priorities ({}; {}):",
            self.priorities.len(),
            source(self.defaulted.priorities)
        );
        for priority in &self.priorities {
            let _ = writeln!(
                out,
                "  weight {:>5}  {}",
                priority.weight,
                priority_line(priority)
            );
        }
        if self.extenders.is_empty() {
            let _ = writeln!(out, "Extenders: none");
        } else {
            let _ = writeln!(out, "Extenders ({}, in call order):", self.extenders.len());
            for (index, extender) in self.extenders.iter().enumerate() {
                describe_extender(&mut out, index, extender);
            }
        }
        let default_mark = |defaulted: bool| if defaulted { " (default)" } else { "" };
        let _ = writeln!(
            out,
            "hardPodAffinitySymmetricWeight: {}{}",
            self.hard_pod_affinity_symmetric_weight,
            default_mark(self.defaulted.hard_pod_affinity_symmetric_weight)
        );
        let _ = writeln!(
            out,
            "alwaysCheckAllPredicates: {}{}",
            self.always_check_all_predicates,
            default_mark(self.defaulted.always_check_all_predicates)
        );
        if self.warnings.is_empty() {
            let _ = writeln!(out, "Warnings: none");
        } else {
            let _ = writeln!(out, "Warnings ({}):", self.warnings.len());
            for warning in &self.warnings {
                let _ = writeln!(out, "  - {warning}");
            }
        }
        out
    }
}

/// `Name`, or `Name: Kind arguments` when the name or arguments add something.
fn predicate_line(predicate: &PredicateConfig) -> String {
    let slot = predicate.kind.slot_name();
    let arguments = match &predicate.kind {
        PredicateKind::MatchNamespaceNodeSelector {
            default_node_selector,
        } if default_node_selector.is_empty() => " (no default node selector)".to_owned(),
        PredicateKind::MatchNamespaceNodeSelector {
            default_node_selector,
        } => {
            format!(" (default node selector {default_node_selector:?})")
        }
        PredicateKind::CheckNodeLabelPresence { labels, presence } => {
            format!(
                " (labels [{}] must be {})",
                labels.join(", "),
                if *presence { "present" } else { "absent" }
            )
        }
        PredicateKind::CheckServiceAffinity { labels } => {
            format!(" (labels [{}])", labels.join(", "))
        }
        PredicateKind::CheckTolerationRestriction { guards } => {
            let guards: Vec<String> = guards
                .iter()
                .map(|g| format!("{} by [{}]", g.taint, g.namespaces.join(", ")))
                .collect();
            format!(
                " (tolerable only by the namespaces listed or granted by annotation: {})",
                guards.join("; ")
            )
        }
        PredicateKind::CheckPodCIDRCapacity {
            source,
            when_missing,
        } => match source {
            PodIpSource::PodCidr => String::new(),
            PodIpSource::NodeLabel(name) => capacity_arguments("node label", name, *when_missing),
            PodIpSource::NodeAnnotation(name) => {
                capacity_arguments("node annotation", name, *when_missing)
            }
            PodIpSource::Resource(name) => capacity_arguments("allocatable", name, *when_missing),
        },
        PredicateKind::CheckNodeCircuitBreaker(a) => format!(
            " (opens after {} start failures from {} workloads within {}s; probes after {}s; a \
             sandbox missing after {}s is a failure)",
            a.failure_threshold,
            a.min_workloads,
            a.window_seconds,
            a.cool_down_seconds,
            a.start_timeout_seconds
        ),
        PredicateKind::CheckWorkloadQuarantine(a) => {
            let nodes = match &a.quarantine_node_label {
                None => "no node".to_owned(),
                Some((key, None)) => format!("nodes labelled {key}"),
                Some((key, Some(value))) => format!("nodes labelled {key}={value}"),
            };
            format!(
                " (quarantines after {} nodes in a cascade within {}s, each NotReady within {}s \
                 of receiving a pod; for {}s; {nodes} still take quarantined pods)",
                a.node_threshold, a.window_seconds, a.not_ready_within_seconds, a.cool_down_seconds
            )
        }
        PredicateKind::Wasm(plugin) => wasm_arguments(plugin),
        PredicateKind::PodToleratesNodeTaints | PredicateKind::CheckNodeUnschedulable => {
            " (mandatory)".to_owned()
        }
        _ => String::new(),
    };
    if predicate.name == slot {
        format!("{}{arguments}", predicate.name)
    } else {
        format!("{}: {slot}{arguments}", predicate.name)
    }
}

fn capacity_arguments(what: &str, name: &str, when_missing: WhenCapacityMissing) -> String {
    let missing = match when_missing {
        WhenCapacityMissing::Reject => "rejected",
        WhenCapacityMissing::PodCIDR => "counted by pod CIDR",
    };
    format!(" (pod IPs from {what} {name:?}; nodes without it {missing})")
}

fn priority_line(priority: &PriorityConfig) -> String {
    let arguments = match &priority.kind {
        PriorityKind::RequestedToCapacityRatio { shape, resources } => {
            let points: Vec<String> = shape
                .iter()
                .map(|p| format!("{}%->{}", p.utilization, p.score))
                .collect();
            let weights: Vec<String> = resources
                .iter()
                .map(|r| format!("{} {}", r.name, r.weight))
                .collect();
            format!(
                " (shape [{}], resources [{}])",
                points.join(", "),
                weights.join(", ")
            )
        }
        PriorityKind::ServiceAntiAffinity { label } => format!(" (label {label:?})"),
        PriorityKind::Wasm(plugin) => wasm_arguments(plugin),
        PriorityKind::NodeLabel { label, presence } => {
            format!(
                " (prefers label {label:?} {})",
                if *presence { "present" } else { "absent" }
            )
        }
        _ => String::new(),
    };
    // A built-in name already says what it is; aliases and custom names get the kind spelled out.
    let builtin = names::priority(&priority.name).is_some_and(|b| {
        b.canonical == priority.name && discriminant(&b.kind) == discriminant(&priority.kind)
    });
    if builtin {
        format!("{}{arguments}", priority.name)
    } else {
        format!(
            "{}: {}{arguments}",
            priority.name,
            priority.kind.kind_name()
        )
    }
}

fn wasm_arguments(plugin: &WasmPlugin) -> String {
    format!(
        " (module {:?}, failurePolicy {}, timeout {} ms, memory {} MiB, config {})",
        plugin.module,
        plugin.failure_policy.as_str(),
        plugin.timeout_millis,
        plugin.memory_limit_mib,
        plugin.config
    )
}

fn describe_extender(out: &mut String, index: usize, extender: &Extender) {
    let verb = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let _ = writeln!(out, "  {:>2}. {}", index + 1, extender.url_prefix);
    let _ = writeln!(
        out,
        "      filter: {}, prioritize: {} (weight {}), bind: {}, preempt: {}",
        verb(&extender.filter_verb),
        verb(&extender.prioritize_verb),
        extender.weight,
        verb(&extender.bind_verb),
        verb(&extender.preempt_verb)
    );
    let _ = writeln!(
        out,
        "      https: {}, httpTimeout: {:?}, nodeCacheCapable: {}, ignorable: {}",
        yes_no(extender.enable_https),
        extender.http_timeout,
        yes_no(extender.node_cache_capable),
        yes_no(extender.ignorable)
    );
    if let Some(tls) = &extender.tls_config {
        let mut parts = vec![format!("insecure: {}", yes_no(tls.insecure))];
        let files = [
            ("serverName", &tls.server_name),
            ("certFile", &tls.cert_file),
            ("keyFile", &tls.key_file),
            ("caFile", &tls.ca_file),
        ];
        parts.extend(
            files
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| format!("{k}: {v}")),
        );
        let data = [
            ("certData", &tls.cert_data),
            ("keyData", &tls.key_data),
            ("caData", &tls.ca_data),
        ];
        parts.extend(
            data.iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| format!("{k}: {} bytes", v.len())),
        );
        let _ = writeln!(out, "      tls: {}", parts.join(", "));
    }
    if !extender.managed_resources.is_empty() {
        let names: Vec<String> = extender
            .managed_resources
            .iter()
            .map(|r| {
                if r.ignored_by_scheduler {
                    format!("{} (ignored by scheduler)", r.name)
                } else {
                    r.name.clone()
                }
            })
            .collect();
        let _ = writeln!(out, "      managedResources: {}", names.join(", "));
    }
}
