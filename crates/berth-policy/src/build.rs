//! From the file as written to the effective configuration, rejecting what kube-scheduler
//! v1.22 rejects (and a little more: see the crate docs).

use std::mem::discriminant;
use std::time::Duration;

use crate::error::PolicyError;
use crate::names::{self, Builtin, V122Argument};
use crate::raw::{
    RawCircuitBreaker, RawExtender, RawManagedResource, RawPodIpCapacity, RawPolicy, RawPredicate,
    RawPredicateArgument, RawPriority, RawPriorityArgument, RawRequestedToCapacityRatio,
    RawTlsConfig, RawTolerationRestriction, RawWasm, RawWorkloadQuarantine,
};
use crate::syntax;
use crate::types::{
    CircuitBreakerArgs, Defaulted, EffectivePolicy, Extender, ExtenderTlsConfig, FailurePolicy,
    GuardedEffect, ManagedResource, PodIpSource, PredicateConfig, PredicateKind, PriorityConfig,
    PriorityKind, ResourceWeight, ShapePoint, TaintGuard, WasmPlugin, WhenCapacityMissing,
    WorkloadQuarantineArgs,
};

/// The warning on an argument only Berth accepts.
const BERTH_ARGUMENT: &str = "a Berth extension: kube-scheduler rejects this argument";
/// The legacy core group and the scheduler config group both registered the v1 Policy.
const API_VERSIONS: [&str; 2] = ["v1", "kubescheduler.config.k8s.io/v1"];
/// v1.22's `MaxWeight`: `MaxTotalScore` (i64::MAX) over `MaxCustomPriorityScore` (10).
const MAX_WEIGHT: i64 = i64::MAX / 10;
/// Top of a node score; an extender's 0..=10 score is scaled to it too.
const MAX_NODE_SCORE: i64 = 100;
/// What kube-scheduler uses when `httpTimeout` is 0 or absent.
const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(5);
/// Used when `hardPodAffinitySymmetricWeight` is absent or 0.
const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;
/// Bounds of `requestedToCapacityRatioArguments.shape`.
const MAX_UTILIZATION: i64 = 100;
const MAX_SHAPE_SCORE: i64 = 10;
/// Bound of one WASM plugin call when `timeoutMillis` is absent.
pub const DEFAULT_WASM_TIMEOUT_MILLIS: u64 = 200;
/// Largest accepted `timeoutMillis`: a plugin call runs inside a scheduling cycle.
pub const MAX_WASM_TIMEOUT_MILLIS: u64 = 10_000;
/// Memory cap of one WASM plugin instance when `memoryLimitMiB` is absent.
pub const DEFAULT_WASM_MEMORY_LIMIT_MIB: u64 = 128;
/// Largest accepted `memoryLimitMiB` (4 GiB is all a 32-bit module can address).
pub const MAX_WASM_MEMORY_LIMIT_MIB: u64 = 4096;

/// The configuration the default provider gives.
pub(crate) fn default_policy() -> EffectivePolicy {
    EffectivePolicy {
        predicates: default_predicates(),
        priorities: default_priorities(),
        extenders: Vec::new(),
        hard_pod_affinity_symmetric_weight: DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        always_check_all_predicates: false,
        warnings: Vec::new(),
        defaulted: Defaulted {
            predicates: true,
            priorities: true,
            hard_pod_affinity_symmetric_weight: true,
            always_check_all_predicates: true,
        },
    }
}

fn default_predicates() -> Vec<PredicateConfig> {
    let mut predicates: Vec<PredicateConfig> = names::DEFAULT_PREDICATES
        .into_iter()
        .map(|kind| PredicateConfig {
            name: kind.slot_name().to_owned(),
            kind,
        })
        .collect();
    predicates.sort_by_key(|p| p.kind.order());
    predicates
}

fn default_priorities() -> Vec<PriorityConfig> {
    names::DEFAULT_PRIORITIES
        .into_iter()
        .map(|(name, kind, weight)| PriorityConfig {
            name: name.to_owned(),
            weight,
            kind,
        })
        .collect()
}

/// Validates `raw` and resolves it; `file` names the source in messages.
pub(crate) fn build(raw: RawPolicy, file: &str) -> Result<EffectivePolicy, PolicyError> {
    Builder {
        file,
        warnings: Vec::new(),
    }
    .policy(raw)
}

/// A configured predicate or priority, with what repeats of it are detected by.
struct Entry<C> {
    /// The canonical name: aliases and their target share it.
    key: String,
    /// Where it was configured, e.g. `predicates[2]`; empty for mandatory predicates.
    path: String,
    config: C,
}

/// The first priority of an argument kind whose entries must share one weight.
struct FirstWeight {
    argument: &'static str,
    path: String,
    name: String,
    weight: i64,
}

/// A label asked for by a presence-style argument, kept to detect contradictions.
struct LabelUse {
    label: String,
    presence: bool,
    path: String,
    name: String,
}

/// What is wrong with a `kind` other than Policy.
pub(crate) fn kind_error(kind: &str) -> Option<String> {
    if kind == "Policy" {
        return None;
    }
    let hint = if kind == "KubeSchedulerConfiguration" {
        "; Berth reads the legacy Policy file (--policy-config-file), not a \
         KubeSchedulerConfiguration (give that with --config)"
    } else {
        ""
    };
    Some(format!("expected \"Policy\", got {kind:?}{hint}"))
}

struct Builder<'a> {
    file: &'a str,
    warnings: Vec<String>,
}

impl Builder<'_> {
    fn invalid(&self, path: impl Into<String>, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            file: self.file.to_owned(),
            path: path.into(),
            message: message.into(),
        }
    }

    fn warn(&mut self, path: &str, message: impl std::fmt::Display) {
        self.warnings.push(format!("{path}: {message}"));
    }

    /// A field that must be present; null counts as absent.
    fn required<T>(&self, value: Option<T>, path: &str, what: &str) -> Result<T, PolicyError> {
        value.ok_or_else(|| self.invalid(path, format!("missing (or null); expected {what}")))
    }

    /// `presence` defaults to false upstream, which is easy to get by accident.
    fn presence(&mut self, value: Option<bool>, path: &str) -> bool {
        value.unwrap_or_else(|| {
            self.warn(
                path,
                "presence is not set and defaults to false (label absent)",
            );
            false
        })
    }

    /// An entry's name, taken as v1.22.17 takes it: any string, and a missing or null name is
    /// Go's zero value "". Its `ValidatePolicy` (pkg/scheduler/apis/config/validation/
    /// validation.go, lines 298-317) checks weights, custom priorities, extenders and
    /// hardPodAffinitySymmetricWeight but never a name, and its legacy registry
    /// (pkg/scheduler/framework/plugins/legacy_registry.go, `ProcessPredicatePolicy` and
    /// `ProcessPriorityPolicy`) looks a name up only for an entry without an argument. An
    /// empty name works but leaves explanations, events and metrics naming the entry "", so
    /// it is warned about.
    fn name(&mut self, name: Option<String>, path: &str) -> String {
        let name = name.unwrap_or_default();
        if name.is_empty() {
            self.warn(
                &format!("{path}.name"),
                "is empty (or missing): kube-scheduler v1.22 accepts that, but explanations, \
                 events and metrics will call this entry \"\"; give it a name",
            );
        }
        name
    }

    fn policy(mut self, raw: RawPolicy) -> Result<EffectivePolicy, PolicyError> {
        if let Some(problem) = raw.kind.as_deref().and_then(kind_error) {
            return Err(self.invalid("kind", problem));
        }
        if let Some(version) = &raw.api_version
            && !API_VERSIONS.contains(&version.as_str())
        {
            return Err(self.invalid(
                "apiVersion",
                format!(
                    "expected \"v1\" (or \"{}\"), got {version:?}",
                    API_VERSIONS[1]
                ),
            ));
        }
        let mut defaulted = Defaulted::default();
        let predicates = match raw.predicates {
            Some(list) => self.predicates(list)?,
            None => {
                defaulted.predicates = true;
                default_predicates()
            }
        };
        let priorities = match raw.priorities {
            Some(list) => self.priorities(list)?,
            None => {
                defaulted.priorities = true;
                default_priorities()
            }
        };
        let extenders = self.extenders(raw.extenders.unwrap_or_default())?;
        self.check_total_score(&priorities, &extenders)?;
        let hard_pod_affinity_symmetric_weight =
            match raw.hard_pod_affinity_symmetric_weight.map(i32::try_from) {
                None => {
                    defaulted.hard_pod_affinity_symmetric_weight = true;
                    DEFAULT_HARD_POD_AFFINITY_WEIGHT
                }
                Some(Ok(0)) => {
                    defaulted.hard_pod_affinity_symmetric_weight = true;
                    self.warn(
                        "hardPodAffinitySymmetricWeight",
                        "0 means \"not set\" to kube-scheduler, so the default 1 applies",
                    );
                    DEFAULT_HARD_POD_AFFINITY_WEIGHT
                }
                Some(Ok(weight)) if (1..=100).contains(&weight) => weight,
                Some(_) => {
                    return Err(self.invalid(
                        "hardPodAffinitySymmetricWeight",
                        format!(
                            "must be in 0..=100 (0 means the default, 1), got {}",
                            raw.hard_pod_affinity_symmetric_weight.unwrap_or_default()
                        ),
                    ));
                }
            };
        defaulted.always_check_all_predicates = raw.always_check_all_predicates.is_none();
        Ok(EffectivePolicy {
            predicates,
            priorities,
            extenders,
            hard_pod_affinity_symmetric_weight,
            always_check_all_predicates: raw.always_check_all_predicates.unwrap_or(false),
            warnings: self.warnings,
            defaulted,
        })
    }

    fn predicates(&mut self, list: Vec<RawPredicate>) -> Result<Vec<PredicateConfig>, PolicyError> {
        let mut entries: Vec<Entry<PredicateConfig>> = Vec::new();
        let mut label_uses: Vec<LabelUse> = Vec::new();
        for (index, raw) in list.into_iter().enumerate() {
            let path = format!("predicates[{index}]");
            let (key, config) = self.predicate(raw, &path)?;
            if let PredicateKind::CheckNodeLabelPresence { labels, presence } = &config.kind {
                let labels_path = format!("{path}.argument.labelsPresence.labels");
                for label in labels {
                    let used = LabelUse {
                        label: label.clone(),
                        presence: *presence,
                        path: labels_path.clone(),
                        name: config.name.clone(),
                    };
                    self.check_label_use(&label_uses, &used, "must be", "no node can pass both")?;
                    label_uses.push(used);
                }
            }
            self.reject_repeat(&entries, &key, &path, &config.name)?;
            // Each protection keeps one history of the cluster, so it has one set of
            // thresholds.
            if matches!(
                config.kind,
                PredicateKind::CheckNodeCircuitBreaker(_)
                    | PredicateKind::CheckWorkloadQuarantine(_)
            ) && let Some(first) = entries
                .iter()
                .find(|e| discriminant(&e.config.kind) == discriminant(&config.kind))
            {
                return Err(self.invalid(
                    format!("{path}.name"),
                    format!(
                        "{:?} is a second {} after {}; a policy has one of each protection, \
                         with one set of thresholds",
                        config.name,
                        config.kind.slot_name(),
                        first.path
                    ),
                ));
            }
            entries.push(Entry { key, path, config });
        }
        for kind in names::MANDATORY_PREDICATES {
            if !entries.iter().any(|entry| entry.key == kind.slot_name()) {
                let name = kind.slot_name().to_owned();
                let config = PredicateConfig {
                    name: name.clone(),
                    kind,
                };
                entries.push(Entry {
                    key: name,
                    path: String::new(),
                    config,
                });
            }
        }
        let mut predicates: Vec<PredicateConfig> = entries.into_iter().map(|e| e.config).collect();
        // Stable: entries sharing a slot keep their file order.
        predicates.sort_by_key(|p| p.kind.order());
        Ok(predicates)
    }

    /// Rejects an entry whose name (or alias) an earlier entry already uses. Upstream
    /// silently collapses repeats (the last priority weight winning), which hides typos and
    /// merge mistakes in long policies.
    fn reject_repeat<C>(
        &self,
        entries: &[Entry<C>],
        key: &str,
        path: &str,
        name: &str,
    ) -> Result<(), PolicyError> {
        match entries.iter().find(|entry| entry.key == key) {
            Some(first) => Err(self.invalid(
                format!("{path}.name"),
                format!(
                    "{name:?} duplicates {} (same {key}); name each predicate and priority \
                     once (kube-scheduler would silently keep only one of them)",
                    first.path
                ),
            )),
            None => Ok(()),
        }
    }

    fn check_label_use(
        &self,
        uses: &[LabelUse],
        new: &LabelUse,
        verb: &str,
        consequence: &str,
    ) -> Result<(), PolicyError> {
        let Some(other) = uses
            .iter()
            .find(|u| u.label == new.label && u.presence != new.presence)
        else {
            return Ok(());
        };
        let state = |presence: bool| if presence { "present" } else { "absent" };
        Err(self.invalid(
            new.path.clone(),
            format!(
                "label {:?} {verb} {} for {:?} but {} for {:?} at {}; {consequence}",
                new.label,
                state(new.presence),
                new.name,
                state(other.presence),
                other.name,
                other.path
            ),
        ))
    }

    /// Resolves one entry; returns the key duplicates are detected by.
    fn predicate(
        &mut self,
        raw: RawPredicate,
        path: &str,
    ) -> Result<(String, PredicateConfig), PolicyError> {
        let name = self.name(raw.name, path);
        let builtin = names::predicate(&name);
        let Some(argument) = raw.argument else {
            if let Some(needed) = names::argument_only_predicate(&name) {
                return Err(self.invalid(path, format!("{name:?} needs an argument: {{{needed}}}")));
            }
            let Some(builtin) = builtin else {
                let accepted: Vec<&str> = names::PREDICATES.iter().map(|b| b.name).collect();
                return Err(self.invalid(
                    format!("{path}.name"),
                    format!(
                        "predicate type not found for {name:?}; expected one of: {}; or any name \
                         with an argument ({})",
                        accepted.join(", "),
                        RawPredicateArgument::KEYS.join(", ")
                    ),
                ));
            };
            if let Some(note) = builtin.note {
                self.warn(path, format!("{name:?} {note}"));
            }
            return Ok((
                builtin.canonical.to_owned(),
                PredicateConfig {
                    name,
                    kind: builtin.kind.clone(),
                },
            ));
        };
        let argument_path = format!("{path}.argument");
        let kind = self.predicate_argument(argument, &argument_path)?;
        let kind = match builtin {
            Some(builtin) => {
                self.check_builtin_argument(builtin, &name, &kind, path, |k| k.slot_name())?;
                if builtin.v122_argument == V122Argument::Ignored {
                    builtin.kind.clone()
                } else {
                    kind
                }
            }
            None => {
                let reserved =
                    names::argument_only_predicate(&name).is_some_and(|_| kind.slot_name() != name);
                if reserved {
                    return Err(self.invalid(
                        format!("{path}.name"),
                        format!(
                            "{name:?} is Berth's {name}, but its argument makes it a {}; give \
                             the custom entry its own name (e.g. \"My{name}\")",
                            kind.slot_name()
                        ),
                    ));
                }
                kind
            }
        };
        Ok((name.clone(), PredicateConfig { name, kind }))
    }

    /// A built-in name may carry an argument only of its own kind.
    fn check_builtin_argument<K>(
        &mut self,
        builtin: &Builtin<K>,
        name: &str,
        kind: &K,
        path: &str,
        kind_name: impl Fn(&K) -> &'static str,
    ) -> Result<(), PolicyError> {
        if discriminant(&builtin.kind) != discriminant(kind) {
            return Err(self.invalid(
                format!("{path}.name"),
                format!(
                    "{name:?} is the built-in {}, but its argument makes it a {}; give the \
                     custom entry its own name (e.g. \"My{name}\")",
                    kind_name(&builtin.kind),
                    kind_name(kind)
                ),
            ));
        }
        match builtin.v122_argument {
            V122Argument::Used => {}
            V122Argument::Ignored => self.warn(
                path,
                format!(
                    "kube-scheduler v1.22 ignores the argument of an entry named {name:?}, so \
                     the entry has no effect there; Berth ignores it too. Give the entry \
                     another name (e.g. \"My{name}\") to apply the argument"
                ),
            ),
            V122Argument::Refused => self.warn(
                path,
                format!(
                    "kube-scheduler v1.22 refuses to start with an entry named {name:?}; Berth \
                     applies the argument as {}'s. Another name would be portable",
                    builtin.canonical
                ),
            ),
        }
        Ok(())
    }

    fn predicate_argument(
        &mut self,
        argument: RawPredicateArgument,
        path: &str,
    ) -> Result<PredicateKind, PolicyError> {
        let present = argument.present_keys();
        if present.len() > 1 {
            return Err(self.not_one_argument(path, RawPredicateArgument::KEYS, &present));
        }
        if let Some(service_affinity) = argument.service_affinity {
            let path = format!("{path}.serviceAffinity");
            let labels = self.required(
                service_affinity.labels,
                &format!("{path}.labels"),
                "a list of node label keys",
            )?;
            Ok(PredicateKind::CheckServiceAffinity { labels })
        } else if let Some(labels_presence) = argument.labels_presence {
            let path = format!("{path}.labelsPresence");
            let labels = self.required(
                labels_presence.labels,
                &format!("{path}.labels"),
                "a list of node label keys",
            )?;
            let presence = self.presence(labels_presence.presence, &path);
            Ok(PredicateKind::CheckNodeLabelPresence { labels, presence })
        } else if let Some(selector) = argument.namespace_node_selector {
            let path = format!("{path}.namespaceNodeSelector");
            self.warn(&path, BERTH_ARGUMENT);
            let selector_path = format!("{path}.defaultNodeSelector");
            let default_node_selector = self.required(
                selector.default_node_selector,
                &selector_path,
                "a node selector such as \"region=east,tier=web\" (or \"\" for none)",
            )?;
            if let Err(problem) = syntax::parse_selector(&default_node_selector) {
                return Err(self.invalid(selector_path, problem));
            }
            Ok(PredicateKind::MatchNamespaceNodeSelector {
                default_node_selector,
            })
        } else if let Some(restriction) = argument.toleration_restriction {
            self.toleration_restriction(restriction, &format!("{path}.tolerationRestriction"))
        } else if let Some(capacity) = argument.pod_ip_capacity {
            self.pod_ip_capacity(capacity, &format!("{path}.podIPCapacity"))
        } else if let Some(breaker) = argument.circuit_breaker {
            self.circuit_breaker(breaker, &format!("{path}.circuitBreaker"))
        } else if let Some(quarantine) = argument.workload_quarantine {
            self.workload_quarantine(quarantine, &format!("{path}.workloadQuarantine"))
        } else if let Some(wasm) = argument.wasm {
            Ok(PredicateKind::Wasm(
                self.wasm(wasm, &format!("{path}.wasm"))?,
            ))
        } else {
            Err(self.not_one_argument(path, RawPredicateArgument::KEYS, &present))
        }
    }

    /// `tolerationRestriction{taints: [{taint, namespaces}]}`: every taint parses as
    /// `key[=value][:effect]` with an effect that keeps pods off a node, every namespace is a
    /// namespace name, and no taint is guarded twice.
    fn toleration_restriction(
        &mut self,
        raw: RawTolerationRestriction,
        path: &str,
    ) -> Result<PredicateKind, PolicyError> {
        self.warn(path, BERTH_ARGUMENT);
        let taints_path = format!("{path}.taints");
        let raw_guards = self.required(
            raw.taints,
            &taints_path,
            "a list of guarded taints [{\"taint\": \"key[=value][:effect]\", \"namespaces\": \
             [...]}]",
        )?;
        if raw_guards.is_empty() {
            return Err(self.invalid(
                taints_path,
                "empty: list at least one taint to guard, e.g. {\"taint\": \
                 \"dedicated=tenant-a\", \"namespaces\": [\"tenant-a\"]}",
            ));
        }
        let mut guards: Vec<TaintGuard> = Vec::with_capacity(raw_guards.len());
        for (index, raw) in raw_guards.into_iter().enumerate() {
            let at = format!("{taints_path}[{index}]");
            let taint_path = format!("{at}.taint");
            let taint =
                self.required(raw.taint, &taint_path, "a taint \"key[=value][:effect]\"")?;
            let (key, value, effect) = syntax::parse_taint(&taint)
                .map_err(|problem| self.invalid(&taint_path, problem))?;
            let effect = match effect.as_deref() {
                None => None,
                Some("NoSchedule") => Some(GuardedEffect::NoSchedule),
                Some("NoExecute") => Some(GuardedEffect::NoExecute),
                Some("PreferNoSchedule") => {
                    return Err(self.invalid(
                        taint_path,
                        format!(
                            "{taint:?}: a PreferNoSchedule taint does not keep pods off a node, \
                             so guarding it protects nothing; guard the NoSchedule or NoExecute \
                             taint that dedicates the nodes"
                        ),
                    ));
                }
                Some(other) => {
                    return Err(self.invalid(
                        taint_path,
                        format!(
                            "{taint:?}: unknown effect {other:?}; expected NoSchedule or \
                             NoExecute (or none for both)"
                        ),
                    ));
                }
            };
            let namespaces_path = format!("{at}.namespaces");
            let namespaces = self.required(
                raw.namespaces,
                &namespaces_path,
                "a list of namespace names allowed to tolerate the taint ([] for those granted \
                 by their namespace annotation only)",
            )?;
            for (i, namespace) in namespaces.iter().enumerate() {
                if let Some(problem) = syntax::namespace_name_error(namespace) {
                    return Err(self.invalid(format!("{namespaces_path}[{i}]"), problem));
                }
                if namespaces[..i].contains(namespace) {
                    return Err(self.invalid(
                        format!("{namespaces_path}[{i}]"),
                        format!("namespace {namespace:?} is listed twice"),
                    ));
                }
            }
            if let Some((first, _)) = guards
                .iter()
                .enumerate()
                .find(|(_, g)| g.key == key && g.value == value && g.effect == effect)
            {
                return Err(self.invalid(
                    taint_path,
                    format!(
                        "{taint:?} is already guarded at {taints_path}[{first}]; list its \
                         namespaces in one entry"
                    ),
                ));
            }
            guards.push(TaintGuard {
                taint,
                key,
                value,
                effect,
                namespaces,
            });
        }
        Ok(PredicateKind::CheckTolerationRestriction { guards })
    }

    /// `podIPCapacity{nodeLabel | nodeAnnotation | resource, whenMissing}`.
    /// [`Self::bounded`] for a protection's count or seconds, which fit in u32.
    fn bounded_u32(
        &self,
        value: Option<i64>,
        path: String,
        default: u32,
        max: u32,
    ) -> Result<u32, PolicyError> {
        let v = self.bounded(value, &path, default.into(), max.into())?;
        Ok(u32::try_from(v).expect("bounded by a u32"))
    }

    /// `circuitBreaker{failureThreshold, minWorkloads, windowSeconds, coolDownSeconds,
    /// startTimeoutSeconds}`, each optional.
    fn circuit_breaker(
        &mut self,
        raw: RawCircuitBreaker,
        path: &str,
    ) -> Result<PredicateKind, PolicyError> {
        self.warn(path, BERTH_ARGUMENT);
        const DAY: u32 = 86_400;
        let d = CircuitBreakerArgs::DEFAULT;
        let failure_threshold = self.bounded_u32(
            raw.failure_threshold,
            format!("{path}.failureThreshold"),
            d.failure_threshold,
            1_000,
        )?;
        let min_workloads = self.bounded_u32(
            raw.min_workloads,
            format!("{path}.minWorkloads"),
            d.min_workloads,
            1_000,
        )?;
        if min_workloads > failure_threshold {
            return Err(self.invalid(
                format!("{path}.minWorkloads"),
                format!(
                    "{min_workloads} workloads cannot fit in {failure_threshold} failures                      (failureThreshold); expected at most {failure_threshold}"
                ),
            ));
        }
        let args = CircuitBreakerArgs {
            failure_threshold,
            min_workloads,
            window_seconds: self.bounded_u32(
                raw.window_seconds,
                format!("{path}.windowSeconds"),
                d.window_seconds,
                7 * DAY,
            )?,
            cool_down_seconds: self.bounded_u32(
                raw.cool_down_seconds,
                format!("{path}.coolDownSeconds"),
                d.cool_down_seconds,
                7 * DAY,
            )?,
            start_timeout_seconds: self.bounded_u32(
                raw.start_timeout_seconds,
                format!("{path}.startTimeoutSeconds"),
                d.start_timeout_seconds,
                DAY,
            )?,
        };
        Ok(PredicateKind::CheckNodeCircuitBreaker(args))
    }

    /// `workloadQuarantine{nodeThreshold, windowSeconds, notReadyWithinSeconds,
    /// coolDownSeconds, quarantineNodeLabel}`, each optional.
    fn workload_quarantine(
        &mut self,
        raw: RawWorkloadQuarantine,
        path: &str,
    ) -> Result<PredicateKind, PolicyError> {
        self.warn(path, BERTH_ARGUMENT);
        const DAY: u32 = 86_400;
        let d = WorkloadQuarantineArgs::DEFAULT;
        let quarantine_node_label = match raw.quarantine_node_label {
            None => None,
            Some(text) => {
                let (key, value) = match text.split_once('=') {
                    Some((key, value)) => (key, Some(value)),
                    None => (text.as_str(), None),
                };
                let label_path = format!("{path}.quarantineNodeLabel");
                if let Some(problem) = syntax::qualified_name_error(key) {
                    return Err(self.invalid(
                        label_path,
                        format!("invalid label {text:?}: expected key[=value]: {problem}"),
                    ));
                }
                if let Some(problem) = value.and_then(syntax::label_value_error) {
                    return Err(self.invalid(
                        label_path,
                        format!("invalid label {text:?}: expected key[=value]: {problem}"),
                    ));
                }
                Some((key.to_owned(), value.map(str::to_owned)))
            }
        };
        let node_threshold = self.bounded_u32(
            raw.node_threshold,
            format!("{path}.nodeThreshold"),
            d.node_threshold,
            1_000,
        )?;
        if node_threshold < 2 {
            return Err(self.invalid(
                format!("{path}.nodeThreshold"),
                "1 node going NotReady is no cascade; expected 2 or more (default 3)",
            ));
        }
        let args = WorkloadQuarantineArgs {
            node_threshold,
            window_seconds: self.bounded_u32(
                raw.window_seconds,
                format!("{path}.windowSeconds"),
                d.window_seconds,
                7 * DAY,
            )?,
            not_ready_within_seconds: self.bounded_u32(
                raw.not_ready_within_seconds,
                format!("{path}.notReadyWithinSeconds"),
                d.not_ready_within_seconds,
                DAY,
            )?,
            cool_down_seconds: self.bounded_u32(
                raw.cool_down_seconds,
                format!("{path}.coolDownSeconds"),
                d.cool_down_seconds,
                30 * DAY,
            )?,
            quarantine_node_label,
        };
        Ok(PredicateKind::CheckWorkloadQuarantine(args))
    }

    fn pod_ip_capacity(
        &mut self,
        raw: RawPodIpCapacity,
        path: &str,
    ) -> Result<PredicateKind, PolicyError> {
        self.warn(path, BERTH_ARGUMENT);
        const SOURCES: [&str; 3] = ["nodeLabel", "nodeAnnotation", "resource"];
        let present: Vec<&str> = [
            raw.node_label.is_some(),
            raw.node_annotation.is_some(),
            raw.resource.is_some(),
        ]
        .into_iter()
        .zip(SOURCES)
        .filter_map(|(set, key)| set.then_some(key))
        .collect();
        let source = match (raw.node_label, raw.node_annotation, raw.resource) {
            (Some(label), None, None) => {
                if let Some(problem) = syntax::qualified_name_error(&label) {
                    return Err(self.invalid(
                        format!("{path}.nodeLabel"),
                        format!("invalid label key: {problem}"),
                    ));
                }
                PodIpSource::NodeLabel(label)
            }
            (None, Some(annotation), None) => {
                if let Some(problem) = syntax::qualified_name_error(&annotation) {
                    return Err(self.invalid(
                        format!("{path}.nodeAnnotation"),
                        format!("invalid annotation key: {problem}"),
                    ));
                }
                PodIpSource::NodeAnnotation(annotation)
            }
            (None, None, Some(resource)) => {
                if let Some(problem) = syntax::qualified_name_error(&resource) {
                    return Err(self.invalid(
                        format!("{path}.resource"),
                        format!("invalid resource name: {problem}"),
                    ));
                }
                if matches!(resource.as_str(), "cpu" | "memory" | "ephemeral-storage")
                    || resource.starts_with("hugepages-")
                {
                    return Err(self.invalid(
                        format!("{path}.resource"),
                        format!(
                            "{resource:?} is not a count of addresses; name an extended \
                             resource (e.g. \"example.com/pod-ips\") or \"pods\""
                        ),
                    ));
                }
                PodIpSource::Resource(resource)
            }
            _ => {
                let got = if present.is_empty() {
                    "it sets none".to_owned()
                } else {
                    format!("it sets {}", present.join(", "))
                };
                return Err(self.invalid(
                    path,
                    format!(
                        "podIPCapacity must set exactly one source of: {}; {got}",
                        SOURCES.join(", ")
                    ),
                ));
            }
        };
        let when_missing = match raw.when_missing.as_deref() {
            None | Some("Reject") => WhenCapacityMissing::Reject,
            Some("PodCIDR") => WhenCapacityMissing::PodCIDR,
            Some(other) => {
                return Err(self.invalid(
                    format!("{path}.whenMissing"),
                    format!(
                        "unknown value {other:?}; expected \"Reject\" (the default: a node \
                         without the source fits no pod that needs an IP) or \"PodCIDR\" \
                         (count its pod CIDRs instead)"
                    ),
                ));
            }
        };
        Ok(PredicateKind::CheckPodCIDRCapacity {
            source,
            when_missing,
        })
    }

    fn not_one_argument(&self, path: &str, accepted: &[&str], present: &[&str]) -> PolicyError {
        let got = if present.is_empty() {
            "it sets none".to_owned()
        } else {
            format!("it sets {}: {}", present.len(), present.join(", "))
        };
        self.invalid(
            path,
            format!(
                "an argument must set exactly one of: {}; {got}",
                accepted.join(", ")
            ),
        )
    }

    fn priorities(&mut self, list: Vec<RawPriority>) -> Result<Vec<PriorityConfig>, PolicyError> {
        let mut entries: Vec<Entry<PriorityConfig>> = Vec::new();
        let mut ratio_at: Option<(String, String)> = None;
        let mut shared_weights: Vec<FirstWeight> = Vec::new();
        let mut label_uses: Vec<LabelUse> = Vec::new();
        for (index, raw) in list.into_iter().enumerate() {
            let path = format!("priorities[{index}]");
            let (key, config) = self.priority(raw, &path)?;
            match &config.kind {
                PriorityKind::RequestedToCapacityRatio { .. } => {
                    if let Some((first_path, first_name)) = &ratio_at {
                        return Err(self.invalid(
                            path,
                            format!(
                                "RequestedToCapacityRatio may be configured once, and \
                                 {first_name:?} at {first_path} already does"
                            ),
                        ));
                    }
                    ratio_at = Some((path.clone(), config.name.clone()));
                }
                PriorityKind::NodeLabel { label, presence } => {
                    let used = LabelUse {
                        label: label.clone(),
                        presence: *presence,
                        path: format!("{path}.argument.labelPreference"),
                        name: config.name.clone(),
                    };
                    self.check_label_use(
                        &label_uses,
                        &used,
                        "is preferred",
                        "kube-scheduler rejects this",
                    )?;
                    label_uses.push(used);
                    self.check_shared_weight(
                        &mut shared_weights,
                        "labelPreference",
                        &path,
                        &config,
                    )?;
                }
                PriorityKind::ServiceAntiAffinity { .. } => {
                    self.check_shared_weight(
                        &mut shared_weights,
                        "serviceAntiAffinity",
                        &path,
                        &config,
                    )?;
                }
                _ => {}
            }
            self.reject_repeat(&entries, &key, &path, &config.name)?;
            entries.push(Entry { key, path, config });
        }
        Ok(entries.into_iter().map(|e| e.config).collect())
    }

    /// kube-scheduler runs all priorities of one argument kind as one plugin with one weight.
    fn check_shared_weight(
        &self,
        firsts: &mut Vec<FirstWeight>,
        argument: &'static str,
        path: &str,
        config: &PriorityConfig,
    ) -> Result<(), PolicyError> {
        let Some(first) = firsts.iter().find(|first| first.argument == argument) else {
            firsts.push(FirstWeight {
                argument,
                path: path.to_owned(),
                name: config.name.clone(),
                weight: config.weight,
            });
            return Ok(());
        };
        if first.weight == config.weight {
            return Ok(());
        }
        Err(self.invalid(
            format!("{path}.weight"),
            format!(
                "all {argument} priorities must have the same weight: {:?} has {} but {:?} at {} \
                 has {}",
                config.name, config.weight, first.name, first.path, first.weight
            ),
        ))
    }

    fn priority(
        &mut self,
        raw: RawPriority,
        path: &str,
    ) -> Result<(String, PriorityConfig), PolicyError> {
        let name = self.name(raw.name, path);
        let weight_path = format!("{path}.weight");
        let weight = match raw.weight {
            None => {
                return Err(self.invalid(
                    weight_path,
                    "missing (or null); expected a positive integer",
                ));
            }
            Some(weight) if weight <= 0 => {
                return Err(self.invalid(
                    weight_path,
                    format!("weight must be a positive integer, got {weight}"),
                ));
            }
            Some(weight) if weight >= MAX_WEIGHT => {
                return Err(self.invalid(
                    weight_path,
                    format!(
                        "weight {weight} is too large: it must be below {MAX_WEIGHT} so scores \
                         cannot overflow"
                    ),
                ));
            }
            Some(weight) => weight,
        };
        if i32::try_from(weight).is_err() {
            self.warn(
                &weight_path,
                format!(
                    "kube-scheduler v1.22 truncates weights to 32 bits, so {weight} would not \
                     act as written there"
                ),
            );
        }
        let builtin = names::priority(&name);
        let Some(argument) = raw.argument else {
            let Some(builtin) = builtin else {
                let accepted: Vec<&str> = names::PRIORITIES.iter().map(|b| b.name).collect();
                return Err(self.invalid(
                    format!("{path}.name"),
                    format!(
                        "priority type not found for {name:?}; expected one of: {}; or any name \
                         with an argument ({})",
                        accepted.join(", "),
                        RawPriorityArgument::KEYS.join(", ")
                    ),
                ));
            };
            if let Some(note) = builtin.note {
                self.warn(path, format!("{name:?} {note}"));
            }
            let kind = builtin.kind_without_argument();
            return Ok((
                builtin.canonical.to_owned(),
                PriorityConfig { name, weight, kind },
            ));
        };
        let kind = self.priority_argument(argument, &format!("{path}.argument"))?;
        let key = match builtin {
            Some(builtin) => {
                self.check_builtin_argument(builtin, &name, &kind, path, PriorityKind::kind_name)?;
                builtin.canonical.to_owned()
            }
            None => name.clone(),
        };
        Ok((key, PriorityConfig { name, weight, kind }))
    }

    fn priority_argument(
        &mut self,
        argument: RawPriorityArgument,
        path: &str,
    ) -> Result<PriorityKind, PolicyError> {
        let present = argument.present_keys();
        if present.len() > 1 {
            return Err(self.not_one_argument(path, RawPriorityArgument::KEYS, &present));
        }
        if let Some(anti_affinity) = argument.service_anti_affinity {
            let label_path = format!("{path}.serviceAntiAffinity.label");
            let label = self.required(anti_affinity.label, &label_path, "a node label key")?;
            Ok(PriorityKind::ServiceAntiAffinity { label })
        } else if let Some(preference) = argument.label_preference {
            let path = format!("{path}.labelPreference");
            let label = self.required(
                preference.label,
                &format!("{path}.label"),
                "a node label key",
            )?;
            let presence = self.presence(preference.presence, &path);
            Ok(PriorityKind::NodeLabel { label, presence })
        } else if let Some(ratio) = argument.requested_to_capacity_ratio {
            self.requested_to_capacity_ratio(
                ratio,
                &format!("{path}.requestedToCapacityRatioArguments"),
            )
        } else if let Some(wasm) = argument.wasm {
            Ok(PriorityKind::Wasm(
                self.wasm(wasm, &format!("{path}.wasm"))?,
            ))
        } else {
            Err(self.not_one_argument(path, RawPriorityArgument::KEYS, &present))
        }
    }

    /// A plugin reference; whether the module exists and fits is checked where files are read.
    fn wasm(&mut self, raw: RawWasm, path: &str) -> Result<WasmPlugin, PolicyError> {
        self.warn(path, BERTH_ARGUMENT);
        let module_path = format!("{path}.module");
        let module = self.required(
            raw.module,
            &module_path,
            "a module file in the plugins directory, e.g. \"gpu-model.wasm\"",
        )?;
        if let Some(problem) = syntax::module_path_error(&module) {
            return Err(self.invalid(module_path, problem));
        }
        let config = raw
            .config
            .unwrap_or_else(|| serde_json::json!({}))
            .to_string();
        let failure_policy = match raw.failure_policy.as_deref() {
            None | Some("Fail") => FailurePolicy::Fail,
            Some("Ignore") => FailurePolicy::Ignore,
            Some(other) => {
                return Err(self.invalid(
                    format!("{path}.failurePolicy"),
                    format!("expected \"Fail\" or \"Ignore\", got {other:?}"),
                ));
            }
        };
        let timeout_millis = self.bounded(
            raw.timeout_millis,
            &format!("{path}.timeoutMillis"),
            DEFAULT_WASM_TIMEOUT_MILLIS,
            MAX_WASM_TIMEOUT_MILLIS,
        )?;
        let memory_limit_mib = self.bounded(
            raw.memory_limit_mib,
            &format!("{path}.memoryLimitMiB"),
            DEFAULT_WASM_MEMORY_LIMIT_MIB,
            MAX_WASM_MEMORY_LIMIT_MIB,
        )?;
        Ok(WasmPlugin {
            module,
            config,
            failure_policy,
            timeout_millis,
            memory_limit_mib,
        })
    }

    /// An optional integer in 1..=max, `default` when absent.
    fn bounded(
        &self,
        value: Option<i64>,
        path: &str,
        default: u64,
        max: u64,
    ) -> Result<u64, PolicyError> {
        match value.map(u64::try_from) {
            None => Ok(default),
            Some(Ok(v)) if (1..=max).contains(&v) => Ok(v),
            Some(_) => Err(self.invalid(
                path,
                format!(
                    "must be in 1..={max} (default {default}), got {}",
                    value.unwrap_or_default()
                ),
            )),
        }
    }

    fn requested_to_capacity_ratio(
        &mut self,
        raw: RawRequestedToCapacityRatio,
        path: &str,
    ) -> Result<PriorityKind, PolicyError> {
        let raw_shape = raw.shape.unwrap_or_default();
        if raw_shape.is_empty() {
            return Err(self.invalid(
                format!("{path}.shape"),
                "at least one point must be specified, e.g. [{\"utilization\": 0, \"score\": 10}, \
                 {\"utilization\": 100, \"score\": 0}]",
            ));
        }
        let mut shape: Vec<ShapePoint> = Vec::with_capacity(raw_shape.len());
        for (index, point) in raw_shape.into_iter().enumerate() {
            let point_path = format!("{path}.shape[{index}]");
            let utilization_path = format!("{point_path}.utilization");
            let utilization = self.required(
                point.utilization,
                &utilization_path,
                "an integer in 0..=100",
            )?;
            if !(0..=MAX_UTILIZATION).contains(&utilization) {
                return Err(self.invalid(
                    utilization_path,
                    format!("must be in 0..={MAX_UTILIZATION}, got {utilization}"),
                ));
            }
            if let Some(previous) = shape.last()
                && utilization <= previous.utilization
            {
                return Err(self.invalid(
                    utilization_path,
                    format!(
                        "utilization must increase strictly from point to point: {utilization} \
                             follows {}",
                        previous.utilization
                    ),
                ));
            }
            let score_path = format!("{point_path}.score");
            let score = self.required(point.score, &score_path, "an integer in 0..=10")?;
            if !(0..=MAX_SHAPE_SCORE).contains(&score) {
                return Err(self.invalid(
                    score_path,
                    format!("must be in 0..={MAX_SHAPE_SCORE}, got {score}"),
                ));
            }
            shape.push(ShapePoint { utilization, score });
        }
        let raw_resources = raw.resources.unwrap_or_default();
        if raw_resources.is_empty() {
            // v1.22's Policy path copies the (empty) list as is; only the versioned
            // KubeSchedulerConfiguration defaults it to cpu and memory.
            self.warn(
                &format!("{path}.resources"),
                "has no effect: with no resources listed, kube-scheduler v1.22 (and Berth) \
                 scores 0 on every node; list them, e.g. [{\"name\": \"cpu\", \"weight\": 1}, \
                 {\"name\": \"memory\", \"weight\": 1}]",
            );
            return Ok(PriorityKind::RequestedToCapacityRatio {
                shape,
                resources: Vec::new(),
            });
        }
        let mut resources: Vec<ResourceWeight> = Vec::with_capacity(raw_resources.len());
        for (index, resource) in raw_resources.into_iter().enumerate() {
            let resource_path = format!("{path}.resources[{index}]");
            let name_path = format!("{resource_path}.name");
            let name =
                self.required(resource.name, &name_path, "a resource name such as \"cpu\"")?;
            if name.is_empty() {
                return Err(self.invalid(
                    name_path,
                    "must be a resource name such as \"cpu\", got \"\"",
                ));
            }
            if resources.iter().any(|r| r.name == name) {
                return Err(self.invalid(
                    name_path,
                    format!("resource {name:?} is listed more than once"),
                ));
            }
            let weight_path = format!("{resource_path}.weight");
            let weight = self.required(resource.weight, &weight_path, "an integer >= 1")?;
            if weight < 1 {
                return Err(self.invalid(
                    weight_path,
                    format!("resource weight must be >= 1, got {weight}"),
                ));
            }
            resources.push(ResourceWeight { name, weight });
        }
        Ok(PriorityKind::RequestedToCapacityRatio { shape, resources })
    }

    fn extenders(&mut self, list: Vec<RawExtender>) -> Result<Vec<Extender>, PolicyError> {
        let mut extenders: Vec<Extender> = Vec::with_capacity(list.len());
        let mut binder: Option<String> = None;
        let mut resources: Vec<(String, String)> = Vec::new();
        for (index, raw) in list.into_iter().enumerate() {
            let path = format!("extenders[{index}]");
            let extender = self.extender(raw, &path, &mut resources)?;
            if extender.bind_verb.is_some() {
                if let Some(first) = &binder {
                    return Err(self.invalid(
                        format!("{path}.bindVerb"),
                        format!("only one extender may bind, and {first} already has a bindVerb"),
                    ));
                }
                binder = Some(path);
            }
            extenders.push(extender);
        }
        let reordered = extenders
            .windows(2)
            .any(|pair| pair[0].ignorable && !pair[1].ignorable);
        if reordered {
            self.warn(
                "extenders",
                "ignorable extenders are called after the others, as kube-scheduler does",
            );
        }
        // Stable: each group keeps its file order.
        extenders.sort_by_key(|e| e.ignorable);
        Ok(extenders)
    }

    fn extender(
        &self,
        raw: RawExtender,
        path: &str,
        resources: &mut Vec<(String, String)>,
    ) -> Result<Extender, PolicyError> {
        let url_path = format!("{path}.urlPrefix");
        let url_prefix = self.required(
            raw.url_prefix,
            &url_path,
            "the extender's URL prefix, e.g. \"http://127.0.0.1:8888/scheduler\"",
        )?;
        if url_prefix.is_empty() {
            return Err(self.invalid(
                url_path,
                "must not be empty: it is the extender's URL prefix",
            ));
        }
        let verb = |v: Option<String>| v.filter(|v| !v.is_empty());
        let prioritize_verb = verb(raw.prioritize_verb);
        let weight = raw.weight.unwrap_or(0);
        if prioritize_verb.is_some() && weight <= 0 {
            return Err(self.invalid(
                format!("{path}.weight"),
                format!(
                    "an extender with a prioritizeVerb must have a positive weight, got {weight}"
                ),
            ));
        }
        let http_timeout = match raw.http_timeout.unwrap_or(0) {
            0 => DEFAULT_HTTP_TIMEOUT,
            nanos => match u64::try_from(nanos) {
                Ok(nanos) => Duration::from_nanos(nanos),
                Err(_) => {
                    return Err(self.invalid(
                        format!("{path}.httpTimeout"),
                        format!(
                            "must be >= 0 (integer nanoseconds; 0 means the default 5s), got \
                             {nanos}"
                        ),
                    ));
                }
            },
        };
        let tls_config = match raw.tls_config {
            Some(tls) => Some(self.tls_config(tls, &format!("{path}.tlsConfig"))?),
            None => None,
        };
        let mut managed_resources = Vec::new();
        for (index, resource) in raw
            .managed_resources
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            let resource_path = format!("{path}.managedResources[{index}]");
            managed_resources.push(self.managed_resource(resource, &resource_path, resources)?);
        }
        Ok(Extender {
            url_prefix,
            filter_verb: verb(raw.filter_verb),
            preempt_verb: verb(raw.preempt_verb),
            prioritize_verb,
            bind_verb: verb(raw.bind_verb),
            weight,
            enable_https: raw.enable_https.unwrap_or(false),
            tls_config,
            http_timeout,
            node_cache_capable: raw.node_cache_capable.unwrap_or(false),
            managed_resources,
            ignorable: raw.ignorable.unwrap_or(false),
        })
    }

    fn tls_config(&self, raw: RawTlsConfig, path: &str) -> Result<ExtenderTlsConfig, PolicyError> {
        let data = |value: Option<String>, key: &str| match value {
            None => Ok(Vec::new()),
            Some(text) => syntax::decode_base64(&text)
                .map_err(|problem| self.invalid(format!("{path}.{key}"), problem)),
        };
        Ok(ExtenderTlsConfig {
            insecure: raw.insecure.unwrap_or(false),
            server_name: raw.server_name.unwrap_or_default(),
            cert_file: raw.cert_file.unwrap_or_default(),
            key_file: raw.key_file.unwrap_or_default(),
            ca_file: raw.ca_file.unwrap_or_default(),
            cert_data: data(raw.cert_data, "certData")?,
            key_data: data(raw.key_data, "keyData")?,
            ca_data: data(raw.ca_data, "caData")?,
        })
    }

    /// Names must be unique across all extenders, not just within one.
    fn managed_resource(
        &self,
        raw: RawManagedResource,
        path: &str,
        seen: &mut Vec<(String, String)>,
    ) -> Result<ManagedResource, PolicyError> {
        let name_path = format!("{path}.name");
        let name = self.required(
            raw.name,
            &name_path,
            "an extended resource name, e.g. \"example.com/foo\"",
        )?;
        if let Some(problem) = syntax::extended_resource_name_error(&name) {
            return Err(self.invalid(name_path, problem));
        }
        if let Some((_, first)) = seen.iter().find(|(seen_name, _)| *seen_name == name) {
            return Err(self.invalid(
                name_path,
                format!("duplicate extender managed resource name {name:?} (first at {first})"),
            ));
        }
        seen.push((name.clone(), name_path));
        Ok(ManagedResource {
            name,
            ignored_by_scheduler: raw.ignored_by_scheduler.unwrap_or(false),
        })
    }

    /// The best possible total score must fit in an i64, as kube-scheduler's framework checks.
    fn check_total_score(
        &self,
        priorities: &[PriorityConfig],
        extenders: &[Extender],
    ) -> Result<(), PolicyError> {
        let scored = priorities.iter().map(|p| ("priorities", p.weight)).chain(
            extenders
                .iter()
                .filter(|e| e.prioritize_verb.is_some())
                .map(|e| ("extenders", e.weight)),
        );
        let mut total: i64 = 0;
        for (path, weight) in scored {
            total = weight
                .checked_mul(MAX_NODE_SCORE)
                .and_then(|score| total.checked_add(score))
                .ok_or_else(|| {
                    self.invalid(
                        path,
                        format!(
                            "the weights are too large: the highest possible total score (the sum \
                             of weight x {MAX_NODE_SCORE} over priorities and prioritizing \
                             extenders) overflows a 64-bit integer"
                        ),
                    )
                })?;
        }
        Ok(())
    }
}
