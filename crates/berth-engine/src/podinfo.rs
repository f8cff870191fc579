//! A pod compiled for scheduling: interned labels, compiled selectors and affinity terms,
//! and its resource requests computed once.

use crate::labels::{
    HoldsSymbols, Interner, LabelSelector, Labels, Operator, Requirement, Selector, Sym,
};
use crate::model::{self, NodeSelectorTerm, PodAffinityTerm, WhenUnsatisfiable};
use crate::resources::{
    CPU, DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, MEMORY, ResourceList, Resources,
    clamp_i64,
};
use crate::types::{HostPort, NamespaceFilter, NodeId, TermKind};

/// A compiled node selector term: label requirements plus `metadata.name` field requirements.
#[derive(Debug, Clone, Default)]
pub struct NodeTerm {
    labels: Selector,
    names: Vec<Requirement>,
    /// A term with no requirement at all matches no node (upstream's rule).
    empty: bool,
}

impl NodeTerm {
    /// Compiles a term.
    pub fn compile(interner: &mut Interner, term: &NodeSelectorTerm) -> Self {
        NodeTerm {
            labels: Selector::compile_reqs(interner, &term.match_expressions),
            names: term.match_fields.clone(),
            empty: term.match_expressions.is_empty() && term.match_fields.is_empty(),
        }
    }

    /// Whether a node with these labels and name satisfies the term.
    pub fn matches(&self, labels: &Labels, node_name: &str, interner: &Interner) -> bool {
        if self.empty {
            return false;
        }
        let names_ok = self.names.iter().all(|r| {
            r.key == "metadata.name"
                && match r.operator {
                    Operator::In => r.values.iter().any(|v| v == node_name),
                    Operator::NotIn => r.values.iter().all(|v| v != node_name),
                    _ => false,
                }
        });
        names_ok
            && if self.labels.needs_numbers() {
                self.labels.matches_with_numbers(labels, interner)
            } else {
                self.labels.matches(labels)
            }
    }
}

impl HoldsSymbols for NodeTerm {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        self.labels.visit_symbols(f);
    }
}

/// Whether any of the terms (ORed) matches.
pub fn any_term_matches(
    terms: &[NodeTerm],
    labels: &Labels,
    node_name: &str,
    interner: &Interner,
) -> bool {
    terms.iter().any(|t| t.matches(labels, node_name, interner))
}

/// A compiled pod (anti-)affinity term.
#[derive(Debug, Clone)]
pub struct AffinityTerm {
    /// Selects the pods the term is about; None selects nothing.
    pub selector: Option<Selector>,
    /// The namespaces it looks in.
    pub namespaces: NamespaceFilter,
    /// The topology key.
    pub topology_key: Sym,
    /// Weight for preferred terms (1 for required ones).
    pub weight: i32,
}

impl AffinityTerm {
    fn compile(
        interner: &mut Interner,
        own_namespace: Sym,
        term: &PodAffinityTerm,
        weight: i32,
    ) -> Self {
        let names = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
            vec![own_namespace]
        } else {
            term.namespaces.iter().map(|n| interner.intern(n)).collect()
        };
        AffinityTerm {
            selector: term
                .label_selector
                .as_ref()
                .map(|s| Selector::compile(interner, s)),
            namespaces: NamespaceFilter {
                names,
                selector: term
                    .namespace_selector
                    .as_ref()
                    .map(|s| Selector::compile(interner, s)),
            },
            topology_key: interner.intern(&term.topology_key),
            weight,
        }
    }

    /// Whether `pod` is one of the pods this term is about; `namespace_labels` are the labels
    /// of the pod's namespace, None when there is no Namespace object.
    #[inline]
    pub fn matches(&self, pod: &PodInfo, namespace_labels: Option<&Labels>) -> bool {
        self.selector.as_ref().is_some_and(|s| {
            s.matches(&pod.labels) && self.namespaces.contains(pod.namespace, || namespace_labels)
        })
    }

    /// Whether `pod`, whose namespace carries `namespace_labels`, is one of the pods this term
    /// is about: upstream's `AffinityTerm.Matches(pod, nsLabels)`, used for an existing pod's
    /// term against the pod being scheduled. Unlike [`AffinityTerm::matches`], a namespace
    /// without a Namespace object counts as having no labels, as upstream's snapshot does.
    #[inline]
    pub fn matches_in(&self, pod: &PodInfo, namespace_labels: &Labels) -> bool {
        self.selector.as_ref().is_some_and(|s| {
            s.matches(&pod.labels)
                && (self.namespaces.names.contains(&pod.namespace)
                    || self
                        .namespaces
                        .selector
                        .as_ref()
                        .is_some_and(|ns| ns.matches(namespace_labels)))
        })
    }
}

impl HoldsSymbols for AffinityTerm {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        if let Some(s) = &mut self.selector {
            s.visit_symbols(f);
        }
        self.namespaces.visit_symbols(f);
        f(&mut self.topology_key);
    }
}

/// A pod's compiled inter-pod affinity.
#[derive(Debug, Clone, Default)]
pub struct PodAffinity {
    /// Required affinity terms.
    pub required: Vec<AffinityTerm>,
    /// Preferred affinity terms.
    pub preferred: Vec<AffinityTerm>,
    /// Required anti-affinity terms.
    pub anti_required: Vec<AffinityTerm>,
    /// Preferred anti-affinity terms.
    pub anti_preferred: Vec<AffinityTerm>,
}

impl PodAffinity {
    /// Whether there is any pod (anti-)affinity term.
    pub fn has_pod_terms(&self) -> bool {
        !(self.required.is_empty()
            && self.preferred.is_empty()
            && self.anti_required.is_empty()
            && self.anti_preferred.is_empty())
    }

    /// One of the four term lists.
    pub fn terms(&self, kind: TermKind) -> &[AffinityTerm] {
        match kind {
            TermKind::Required => &self.required,
            TermKind::Preferred => &self.preferred,
            TermKind::AntiRequired => &self.anti_required,
            TermKind::AntiPreferred => &self.anti_preferred,
        }
    }
}

impl HoldsSymbols for PodAffinity {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for list in [
            &mut self.required,
            &mut self.preferred,
            &mut self.anti_required,
            &mut self.anti_preferred,
        ] {
            for term in list {
                term.visit_symbols(f);
            }
        }
    }
}

/// A compiled topology spread constraint.
#[derive(Debug, Clone)]
pub struct SpreadConstraint {
    /// The largest allowed difference in matching pods between two domains.
    pub max_skew: i32,
    /// The topology key.
    pub topology_key: Sym,
    /// A filter (DoNotSchedule) or a score (ScheduleAnyway).
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// The pods counted; None counts none (upstream's nil selector).
    pub selector: Option<Selector>,
    /// `minDomains` (1 when unset, as upstream's `filterTopologySpreadConstraints`).
    pub min_domains: i32,
    /// Whether only nodes matching the pod's node selector and required node affinity count
    /// (`nodeAffinityPolicy: Honor`, the default).
    pub honor_node_affinity: bool,
    /// Whether nodes with a NoSchedule or NoExecute taint the pod does not tolerate are left
    /// out of the count (`nodeTaintsPolicy: Honor`; Ignore is the default).
    pub honor_node_taints: bool,
}

/// A pod ready for the rules.
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// The pod as given.
    pub pod: model::Pod,
    /// Interned namespace.
    pub namespace: Sym,
    /// Interned labels.
    pub labels: Labels,
    /// The node it is assigned to (None while pending).
    pub node: Option<NodeId>,
    /// Filter request as v1.36 computes it: sidecars, pod-level requests, overhead, and for a
    /// bound pod the resize-aware largest of spec, admitted and running requests (see
    /// `pod_requests`). Without those fields, v1.22's max(sum of containers, each init
    /// container) + overhead.
    pub request: Resources,
    /// Scoring CPU request, with 100m for containers that request none.
    pub nonzero_milli_cpu: i64,
    /// Scoring memory request, with 200 MiB for containers that request none.
    pub nonzero_memory: i64,
    /// The CPU scoring request of this pod as the pod being scheduled: upstream adds its CPU
    /// overhead in whole cores rounded up (`Value()`, not `MilliValue()`), unlike the node
    /// aggregate. Kept so scores match v1.22 exactly.
    pub incoming_milli_cpu: i64,
    /// The CPU request of this pod as the pod being scheduled, without non-zero defaults
    /// (what BalancedResourceAllocation reads): the filter request with the CPU overhead in
    /// whole cores rounded up, as `incoming_milli_cpu`.
    pub incoming_requested_milli_cpu: i64,
    /// Host ports its containers ask for.
    pub host_ports: Vec<HostPort>,
    /// Whether it needs a pod IP (not hostNetwork).
    pub needs_ip: bool,
    /// `spec.nodeSelector`, compiled.
    pub node_selector: Selector,
    /// Required node affinity terms (ORed); None when there is no requirement.
    pub node_required: Option<Vec<NodeTerm>>,
    /// Preferred node affinity terms with weights.
    pub node_preferred: Vec<(i32, NodeTerm)>,
    /// Inter-pod affinity.
    pub affinity: PodAffinity,
    /// `spec.topologySpreadConstraints`, compiled.
    pub spread_constraints: Vec<SpreadConstraint>,
}

impl HoldsSymbols for PodInfo {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        f(&mut self.namespace);
        self.labels.visit_symbols(f);
        self.node_selector.visit_symbols(f);
        for term in self.node_required.iter_mut().flatten() {
            term.visit_symbols(f);
        }
        for (_, term) in &mut self.node_preferred {
            term.visit_symbols(f);
        }
        self.affinity.visit_symbols(f);
        for c in &mut self.spread_constraints {
            f(&mut c.topology_key);
            if let Some(s) = &mut c.selector {
                s.visit_symbols(f);
            }
        }
    }
}

impl PodInfo {
    /// Compiles a pod.
    pub fn compile(pod: model::Pod, interner: &mut Interner) -> Self {
        let namespace = interner.intern(&pod.meta.namespace);
        let labels = Labels::intern(
            interner,
            pod.meta
                .labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        // A bound pod counts what its containers run with as well as its spec (in-place
        // resize); a pending one only its spec, as upstream's NodeResourcesFit reads it.
        let with_status = pod.node_name.is_some();
        let request = filter_request(&pod, with_status);
        let (nonzero_milli_cpu, nonzero_memory) = scoring_request(&pod, with_status);
        let cpu_overhead = pod
            .overhead
            .iter()
            .find(|(n, _)| n == CPU)
            .map_or(0, |(_, v)| *v);
        // In i128: a request or overhead near i64::MAX must not overflow on the way.
        let whole_cores = |milli_cpu: i64| {
            let overhead = i128::from(cpu_overhead);
            clamp_i64(i128::from(milli_cpu) - overhead + (overhead + 999) / 1000)
        };
        let incoming_milli_cpu = whole_cores(nonzero_milli_cpu);
        let incoming_requested_milli_cpu = whole_cores(request.milli_cpu);
        // Sidecars' host ports first, then the app containers' (v1.36's `GetHostPorts`);
        // regular init containers have exited by the time the ports matter.
        let host_ports = pod
            .init_containers
            .iter()
            .filter(|c| c.restartable)
            .chain(&pod.containers)
            .flat_map(|c| &c.ports)
            .filter(|p| p.host_port > 0)
            .map(|p| HostPort {
                ip: if p.host_ip.is_empty() {
                    "0.0.0.0"
                } else {
                    &p.host_ip
                }
                .into(),
                protocol: if p.protocol.is_empty() {
                    "TCP"
                } else {
                    &p.protocol
                }
                .into(),
                port: p.host_port,
            })
            .collect();
        let node_selector =
            Selector::compile(interner, &LabelSelector::from_map(pod.node_selector.iter()));
        let a = &pod.affinity;
        let node_required = a.node_required.as_ref().map(|terms| {
            terms
                .iter()
                .map(|t| NodeTerm::compile(interner, t))
                .collect()
        });
        let node_preferred = a
            .node_preferred
            .iter()
            .map(|p| (p.weight, NodeTerm::compile(interner, &p.term)))
            .collect();
        let mut compile_terms = |terms: &mut dyn Iterator<Item = (&PodAffinityTerm, i32)>| {
            terms
                .map(|(t, w)| AffinityTerm::compile(interner, namespace, t, w))
                .collect::<Vec<_>>()
        };
        let affinity = PodAffinity {
            required: compile_terms(&mut a.pod_required.iter().map(|t| (t, 1))),
            preferred: compile_terms(&mut a.pod_preferred.iter().map(|t| (&t.term, t.weight))),
            anti_required: compile_terms(&mut a.anti_required.iter().map(|t| (t, 1))),
            anti_preferred: compile_terms(
                &mut a.anti_preferred.iter().map(|t| (&t.term, t.weight)),
            ),
        };
        let spread_constraints = pod
            .topology_spread_constraints
            .iter()
            .map(|c| SpreadConstraint {
                max_skew: c.max_skew,
                topology_key: interner.intern(&c.topology_key),
                when_unsatisfiable: c.when_unsatisfiable,
                selector: c
                    .label_selector
                    .as_ref()
                    .map(|s| Selector::compile(interner, s)),
                min_domains: c.min_domains.unwrap_or(1),
                honor_node_affinity: c.node_affinity_policy
                    != Some(model::NodeInclusionPolicy::Ignore),
                honor_node_taints: c.node_taints_policy == Some(model::NodeInclusionPolicy::Honor),
            })
            .collect();
        PodInfo {
            namespace,
            labels,
            node: None,
            request,
            nonzero_milli_cpu,
            nonzero_memory,
            incoming_milli_cpu,
            incoming_requested_milli_cpu,
            host_ports,
            needs_ip: !pod.host_network,
            node_selector,
            node_required,
            node_preferred,
            affinity,
            spread_constraints,
            pod,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        self.pod.key()
    }

    /// Whether the pod is BestEffort: no container (app or init) requests or limits anything.
    /// Limits are not modelled separately: a container with limits but no requests gets
    /// requests equal to the limits from the API server's defaulting.
    pub fn is_best_effort(&self) -> bool {
        let unset = |list: &ResourceList| list.iter().all(|(n, _)| n != CPU && n != MEMORY);
        // Pod-level resources count for the QoS class too (v1.36's `ComputePodQOS`).
        unset(&self.pod.resources)
            && self
                .pod
                .containers
                .iter()
                .chain(&self.pod.init_containers)
                .all(|c| unset(&c.requests))
    }

    /// Whether the pod is being deleted.
    pub fn terminating(&self) -> bool {
        self.pod.meta.deleting
    }
}

/// One container's requests (component-helpers' `AggregateContainerRequests`), with
/// `defaults` added for the resources it does not list at all (upstream's
/// `applyNonMissing`: an explicit zero stays zero). When `read_status` (a bound pod's app
/// container or sidecar) and the container's status reports `resources` (upstream's
/// `cs.Resources != nil`), per resource the largest of what it runs with, what the kubelet
/// admitted and, unless the resize is infeasible, the spec; otherwise the spec alone. A
/// regular init container's status is never read.
fn container_requests(
    c: &model::Container,
    read_status: bool,
    resize_infeasible: bool,
    defaults: &[(&str, i64)],
) -> Resources {
    let effective;
    let list = match (&c.actual, read_status) {
        (Some(actual), true) => {
            let mut lists = vec![actual];
            lists.extend(&c.allocated);
            if !resize_infeasible {
                lists.push(&c.requests);
            }
            effective = largest(&lists);
            &effective
        }
        _ => &c.requests,
    };
    let mut r = Resources::from_list(list);
    for &(name, value) in defaults {
        if !list.iter().any(|(n, _)| n == name) {
            r.set_named(name, value);
        }
    }
    r
}

/// Per resource, the largest quantity any of `lists` gives (component-helpers' `max`): a
/// resource named by one list is named in the result.
fn largest(lists: &[&ResourceList]) -> ResourceList {
    let mut out: ResourceList = Vec::new();
    for (name, value) in lists.iter().flat_map(|list| list.iter()) {
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, q)) => *q = (*q).max(*value),
            None => out.push((name.clone(), *value)),
        }
    }
    out
}

/// The containers' requests as v1.36 sums them (component-helpers'
/// `AggregateContainerRequests`, the sidecar KEP's formula): the app containers and the
/// sidecars (restartable init containers) run together; each regular init container runs
/// beside the sidecars started before it, one at a time. Per resource, the larger of the two.
/// Without sidecars this is v1.22's max(sum of containers, largest init container). A bound
/// pod (`with_status`) counts its app containers and sidecars resize-aware
/// ([`container_requests`]).
fn aggregate(pod: &model::Pod, with_status: bool, defaults: &[(&str, i64)]) -> Resources {
    let one = |c, read_status| container_requests(c, read_status, pod.resize_infeasible, defaults);
    let mut running = Resources::default();
    for c in &pod.containers {
        running.add(&one(c, with_status));
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for c in &pod.init_containers {
        let mut r = one(c, with_status && c.restartable);
        if c.restartable {
            running.add(&r);
            sidecars.add(&r);
            init_peak.max_with(&sidecars);
        } else {
            r.add(&sidecars);
            init_peak.max_with(&r);
        }
    }
    running.max_with(&init_peak);
    running
}

/// Whether a resource can be set at pod level (component-helpers'
/// `IsSupportedPodLevelResource`).
fn pod_level_resource(name: &str) -> bool {
    name == CPU || name == MEMORY || name.starts_with("hugepages-")
}

/// Whether the pod sets pod-level requests for a resource that can have them
/// (`IsPodLevelRequestsSet`).
fn pod_level_requests_set(pod: &model::Pod) -> bool {
    pod.resources.iter().any(|(n, _)| pod_level_resource(n))
}

/// The pod's requests as v1.36 computes them (component-helpers' `PodRequests`), with
/// `defaults` for container requests left out (see [`container_requests`]). A bound pod
/// (`with_status`) counts each app container and sidecar whose status reports resources
/// as the largest of its spec, what the kubelet admitted and what runs (in-place resize,
/// `UseStatusResources`), the spec left out while the resize is infeasible. Pod-level
/// requests (for a bound pod, resize-aware in the same way) then replace the containers'
/// sum for the resources they set, and the overhead is added.
fn pod_requests(pod: &model::Pod, with_status: bool, defaults: &[(&str, i64)]) -> Resources {
    let mut requests = aggregate(pod, with_status, defaults);
    // A bound pod whose status reports pod-level resources counts, for each resource its
    // spec sets at pod level, the largest of spec (unless the resize is infeasible),
    // admitted and running, and 0 where none of those names it (`PodRequests` with
    // InPlacePodLevelResourcesVerticalScaling).
    let effective = match (&pod.actual_pod_level, with_status) {
        (Some(actual), true) => {
            let mut lists = vec![actual];
            lists.extend(&pod.allocated_pod_level);
            if !pod.resize_infeasible {
                lists.push(&pod.resources);
            }
            Some(largest(&lists))
        }
        _ => None,
    };
    for (name, value) in &pod.resources {
        if pod_level_resource(name) {
            let value = match &effective {
                Some(list) => list.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v),
                None => *value,
            };
            requests.set_named(name, value);
        }
    }
    requests.add(&Resources::from_list(&pod.overhead));
    requests
}

/// What the pod reserves on a node, as v1.36 and its kubelet's admission compute it: for a
/// bound pod resize-aware (see [`pod_requests`]), for a pending one from its spec.
pub fn effective_requests(pod: &model::Pod) -> Resources {
    filter_request(pod, pod.node_name.is_some())
}

/// Upstream's filter request (`PodRequests`, see [`pod_requests`]).
fn filter_request(pod: &model::Pod, with_status: bool) -> Resources {
    pod_requests(pod, with_status, &[])
}

/// Upstream's scoring request for CPU and memory (v1.36's `calculateResource`): a container
/// with no request for a resource counts the default; an explicit zero stays zero. With
/// pod-level requests, the defaults apply only to a resource no container, pod-level request
/// or overhead names (`getNonMissingContainerRequests`).
fn scoring_request(pod: &model::Pod, with_status: bool) -> (i64, i64) {
    let all_defaults = [
        (CPU, DEFAULT_MILLI_CPU_REQUEST),
        (MEMORY, DEFAULT_MEMORY_REQUEST),
    ];
    let defaults: Vec<(&str, i64)> = if pod_level_requests_set(pod) {
        let named = |name: &str| {
            let in_list = |list: &ResourceList| list.iter().any(|(n, _)| n == name);
            pod.containers.iter().chain(&pod.init_containers).any(|c| {
                in_list(&c.requests)
                    || (with_status
                        && (c.allocated.as_ref().is_some_and(in_list)
                            || c.actual.as_ref().is_some_and(in_list)))
            }) || in_list(&pod.resources)
                || in_list(&pod.overhead)
        };
        all_defaults
            .into_iter()
            .filter(|(name, _)| !named(name))
            .collect()
    } else {
        all_defaults.to_vec()
    };
    let requests = pod_requests(pod, with_status, &defaults);
    (requests.milli_cpu, requests.memory)
}
