//! An in-memory host for native tests (every target but wasm32).
//!
//! Build nodes ([`FakeNode`]) and pods ([`FakePod`]), put the nodes in a [`TestHost`] with the
//! policy entry's `config`, and run a plugin type on a pod: the host instantiates it as
//! `berth_init` would (config parsed into the plugin's `Config`, `new` called) and calls
//! `filter` / `score` through the same SDK code the wasm build runs, over host functions
//! that answer from the fakes with the semantics of docs/plugin-abi.md: symbols exist only
//! for strings the cluster uses, node and pod accessors work only inside a call, a bad node
//! index or unknown reason id traps. A trap or a panic in the plugin becomes
//! [`CallError::Trap`], a returned error [`CallError::Failed`].
//!
//! ```
//! use berth_plugin::testing::{FakeNode, FakePod, TestHost};
//! # use berth_plugin::{Filter, Nodes, Pod, Reason, Verdicts, reason};
//! # struct NoGpu(Reason);
//! # impl Filter for NoGpu {
//! #     type Config = serde_json::Value;
//! #     fn new(_: serde_json::Value) -> Result<Self, String> { Ok(NoGpu(reason("has a GPU"))) }
//! #     fn filter(&mut self, _: &Pod, nodes: &Nodes, out: &mut Verdicts) -> Result<(), String> {
//! #         for i in 0..nodes.len() {
//! #             if nodes.allocatable(i, "nvidia.com/gpu") > 0 { out.reject(i, self.0); }
//! #         }
//! #         Ok(())
//! #     }
//! # }
//! let host = TestHost::new()
//!     .node(FakeNode::new("plain").allocatable("cpu", 4000))
//!     .node(FakeNode::new("gpu").allocatable("nvidia.com/gpu", 8));
//! let result = host.filter::<NoGpu>(&FakePod::new("p").request("cpu", 100)).unwrap();
//! assert_eq!(result.passed(), ["plain"]);
//! assert_eq!(result.reason("gpu"), Some("has a GPU"));
//! ```
//!
//! The host calls a plugin once per chunk of nodes; [`TestHost::chunk_size`] splits the
//! nodes the same way, so a plugin that assumes it sees every node at once is caught.

pub(crate) mod sys;
mod view;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use crate::{__export, Conditions, Filter, Level, Normalize, Score, Taint, Toleration};

/// A node for [`TestHost`]: name, labels, annotations, taints, allocatable quantities,
/// conditions, images, and the pods running on it (which make up its requested quantities).
#[derive(Debug, Clone)]
pub struct FakeNode {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    taints: Vec<Taint>,
    allocatable: BTreeMap<String, i64>,
    conditions: Conditions,
    images: Vec<(String, i64)>,
    pods: Vec<FakePod>,
    pod_cidrs: Vec<String>,
}

impl FakeNode {
    /// A Ready node with nothing else.
    pub fn new(name: &str) -> Self {
        FakeNode {
            name: name.to_owned(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            taints: Vec::new(),
            allocatable: BTreeMap::new(),
            conditions: Conditions::READY,
            images: Vec::new(),
            pods: Vec::new(),
            pod_cidrs: Vec::new(),
        }
    }

    /// Sets a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Sets an annotation.
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds a taint; `effect` is `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        self.taints.push(Taint {
            key: key.to_owned(),
            value: value.to_owned(),
            effect: effect.to_owned(),
        });
        self
    }

    /// Sets an allocatable quantity (`cpu` in millicores, others in base units; `pods` is
    /// the pod capacity).
    pub fn allocatable(mut self, resource: &str, quantity: i64) -> Self {
        self.allocatable.insert(resource.to_owned(), quantity);
        self
    }

    /// Replaces the condition bits (the default is [`Conditions::READY`]).
    pub fn conditions(mut self, conditions: Conditions) -> Self {
        self.conditions = conditions;
        self
    }

    /// Sets `spec.unschedulable`.
    pub fn unschedulable(mut self) -> Self {
        self.conditions = self.conditions | Conditions::UNSCHEDULABLE;
        self
    }

    /// Adds an image the node holds, by the name the kubelet reports, with its size.
    pub fn image(mut self, name: &str, size_bytes: i64) -> Self {
        self.images.push((name.to_owned(), size_bytes));
        self
    }

    /// Adds a pod CIDR.
    pub fn pod_cidr(mut self, cidr: &str) -> Self {
        self.pod_cidrs.push(cidr.to_owned());
        self
    }

    /// Runs `pod` on the node: it counts in the node's pods and requested quantities.
    pub fn pod(mut self, mut pod: FakePod) -> Self {
        pod.node_name = Some(self.name.clone());
        self.pods.push(pod);
        self
    }

    fn requested(&self, resource: &str) -> i64 {
        if resource == "pods" {
            return self.pods.len() as i64;
        }
        self.pods.iter().map(|p| p.request_of(resource)).sum()
    }
}

#[derive(Debug, Clone)]
struct Container {
    name: String,
    image: String,
    requests: BTreeMap<String, i64>,
}

/// A pod for [`TestHost`]: the pod being scheduled, or one running on a [`FakeNode`].
#[derive(Debug, Clone)]
pub struct FakePod {
    name: String,
    namespace: String,
    uid: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    node_name: Option<String>,
    scheduler_name: String,
    priority: i32,
    priority_class_name: String,
    containers: Vec<Container>,
    init_containers: Vec<Container>,
    overhead: BTreeMap<String, i64>,
    node_selector: BTreeMap<String, String>,
    tolerations: Vec<Toleration>,
    host_network: bool,
}

impl FakePod {
    /// A pod in namespace `default` with no containers.
    pub fn new(name: &str) -> Self {
        FakePod {
            name: name.to_owned(),
            namespace: "default".to_owned(),
            uid: format!("uid-{name}"),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            node_name: None,
            scheduler_name: "default-scheduler".to_owned(),
            priority: 0,
            priority_class_name: String::new(),
            containers: Vec::new(),
            init_containers: Vec::new(),
            overhead: BTreeMap::new(),
            node_selector: BTreeMap::new(),
            tolerations: Vec::new(),
            host_network: false,
        }
    }

    /// Sets the namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.to_owned();
        self
    }

    /// Sets the UID (default `uid-<name>`).
    pub fn uid(mut self, uid: &str) -> Self {
        self.uid = uid.to_owned();
        self
    }

    /// Sets a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.labels.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Sets an annotation.
    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds `quantity` of `resource` to the first app container's requests (creating a
    /// container `main` if there is none).
    pub fn request(mut self, resource: &str, quantity: i64) -> Self {
        if self.containers.is_empty() {
            self = self.container("main", "", &[]);
        }
        *self.containers[0]
            .requests
            .entry(resource.to_owned())
            .or_default() += quantity;
        self
    }

    /// Adds an app container with its requests.
    pub fn container(mut self, name: &str, image: &str, requests: &[(&str, i64)]) -> Self {
        self.containers.push(container(name, image, requests));
        self
    }

    /// Adds an init container with its requests.
    pub fn init_container(mut self, name: &str, image: &str, requests: &[(&str, i64)]) -> Self {
        self.init_containers.push(container(name, image, requests));
        self
    }

    /// Sets a `spec.overhead` quantity.
    pub fn overhead(mut self, resource: &str, quantity: i64) -> Self {
        self.overhead.insert(resource.to_owned(), quantity);
        self
    }

    /// Sets a `spec.nodeSelector` entry.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.node_selector.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds a toleration.
    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.tolerations.push(toleration);
        self
    }

    /// Sets the priority and its class name.
    pub fn priority(mut self, priority: i32, class_name: &str) -> Self {
        self.priority = priority;
        self.priority_class_name = class_name.to_owned();
        self
    }

    /// Sets `spec.schedulerName` (default `default-scheduler`).
    pub fn scheduler_name(mut self, name: &str) -> Self {
        self.scheduler_name = name.to_owned();
        self
    }

    /// Sets `spec.hostNetwork`.
    pub fn host_network(mut self) -> Self {
        self.host_network = true;
        self
    }

    /// The filter request of `resource`, as the host computes it: the larger of the app
    /// containers' sum and each init container, plus the overhead.
    fn request_of(&self, resource: &str) -> i64 {
        let of = |c: &Container| c.requests.get(resource).copied().unwrap_or(0);
        let sum: i64 = self.containers.iter().map(of).sum();
        let init = self.init_containers.iter().map(of).max().unwrap_or(0);
        sum.max(init) + self.overhead.get(resource).copied().unwrap_or(0)
    }

    /// Every resource named in a request or the overhead.
    fn resource_names(&self) -> impl Iterator<Item = &str> {
        self.containers
            .iter()
            .chain(&self.init_containers)
            .flat_map(|c| c.requests.keys())
            .chain(self.overhead.keys())
            .map(String::as_str)
    }
}

fn container(name: &str, image: &str, requests: &[(&str, i64)]) -> Container {
    Container {
        name: name.to_owned(),
        image: image.to_owned(),
        requests: requests
            .iter()
            .map(|(n, q)| ((*n).to_owned(), *q))
            .collect(),
    }
}

impl Toleration {
    /// `operator: Equal`: tolerates taints with this key and value.
    pub fn equal(key: &str, value: &str) -> Self {
        Toleration {
            key: key.to_owned(),
            operator: "Equal".to_owned(),
            value: value.to_owned(),
            effect: None,
        }
    }

    /// `operator: Exists`: tolerates taints with this key ("" for every key).
    pub fn exists(key: &str) -> Self {
        Toleration {
            key: key.to_owned(),
            operator: "Exists".to_owned(),
            value: String::new(),
            effect: None,
        }
    }

    /// Restricts the toleration to one effect.
    pub fn effect(mut self, effect: &str) -> Self {
        self.effect = Some(effect.to_owned());
        self
    }
}

/// A line the plugin logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// Its text.
    pub text: String,
}

/// Why a call did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The plugin returned an error (from `new`, `filter` or `score`).
    Failed(String),
    /// The call trapped: a host function refused its arguments, or the plugin panicked.
    Trap(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Failed(m) => write!(f, "plugin failed: {m}"),
            CallError::Trap(m) => write!(f, "plugin trapped: {m}"),
        }
    }
}

impl std::error::Error for CallError {}

/// A filter's answer for every node of the host, in the host's node order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterResult {
    /// Per node: its name and the reason it was rejected for (None = passes).
    pub verdicts: Vec<(String, Option<String>)>,
    /// Lines logged since the previous call (including `new`'s for the first).
    pub logs: Vec<LogLine>,
}

impl FilterResult {
    /// The nodes that pass.
    pub fn passed(&self) -> Vec<&str> {
        self.verdicts
            .iter()
            .filter(|(_, r)| r.is_none())
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The reason node `name` was rejected for; None if it passes or does not exist.
    pub fn reason(&self, name: &str) -> Option<&str> {
        self.verdicts
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, r)| r.as_deref())
    }
}

/// A score plugin's raw scores for every node of the host, and how the host would normalise
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreResult {
    /// Per node: its name and raw score.
    pub scores: Vec<(String, i64)>,
    /// The mode the plugin asked for in `new`.
    pub normalize: Normalize,
    /// Lines logged since the previous call (including `new`'s for the first).
    pub logs: Vec<LogLine>,
}

/// The highest score a node gets from one priority, before its weight.
const MAX_NODE_SCORE: i64 = 100;

impl ScoreResult {
    /// Node `name`'s raw score.
    pub fn raw(&self, name: &str) -> Option<i64> {
        self.scores.iter().find(|(n, _)| n == name).map(|(_, s)| *s)
    }

    /// The scores the host would give, 0..=100, taking every node as feasible (the host
    /// normalises over the nodes that passed the filters).
    pub fn normalized(&self) -> Vec<(String, i64)> {
        let mut values: Vec<i64> = self.scores.iter().map(|(_, s)| *s).collect();
        match self.normalize {
            Normalize::None => values
                .iter_mut()
                .for_each(|s| *s = (*s).clamp(0, MAX_NODE_SCORE)),
            Normalize::Reduce | Normalize::ReduceReverse => {
                let reverse = self.normalize == Normalize::ReduceReverse;
                values
                    .iter_mut()
                    .for_each(|s| *s = (*s).clamp(0, i64::MAX / MAX_NODE_SCORE));
                let highest = values.iter().copied().max().unwrap_or(0);
                for s in &mut values {
                    *s = match (highest, reverse) {
                        (0, true) => MAX_NODE_SCORE,
                        (0, false) => *s,
                        (h, false) => MAX_NODE_SCORE * *s / h,
                        (h, true) => MAX_NODE_SCORE - MAX_NODE_SCORE * *s / h,
                    };
                }
            }
        }
        self.scores
            .iter()
            .zip(values)
            .map(|((n, _), s)| (n.clone(), s))
            .collect()
    }
}

/// The cluster and configuration a plugin runs against.
#[derive(Debug, Clone)]
pub struct TestHost {
    config: String,
    nodes: Vec<FakeNode>,
    chunk_size: usize,
}

impl Default for TestHost {
    fn default() -> Self {
        TestHost::new()
    }
}

impl TestHost {
    /// No nodes, config `{}`, every node in one call.
    pub fn new() -> Self {
        TestHost {
            config: "{}".to_owned(),
            nodes: Vec::new(),
            chunk_size: usize::MAX,
        }
    }

    /// The policy entry's `config` JSON, as the plugin receives it.
    pub fn config(mut self, json: &str) -> Self {
        self.config = json.to_owned();
        self
    }

    /// Adds a node.
    pub fn node(mut self, node: FakeNode) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds nodes.
    pub fn nodes(mut self, nodes: impl IntoIterator<Item = FakeNode>) -> Self {
        self.nodes.extend(nodes);
        self
    }

    /// Calls the plugin once per `size` nodes (at least 1), as the host does on large
    /// clusters, instead of once for all.
    pub fn chunk_size(mut self, size: usize) -> Self {
        self.chunk_size = size.max(1);
        self
    }

    /// Starts an instance of filter plugin `T`, as `berth_init` does.
    pub fn filter_instance<T: Filter>(&self) -> Result<Instance<T>, CallError> {
        Instance::start(self, __export::init_filter::<T>)
    }

    /// Starts an instance of score plugin `T`, as `berth_init` does.
    pub fn score_instance<T: Score>(&self) -> Result<Instance<T>, CallError> {
        Instance::start(self, __export::init_score::<T>)
    }

    /// Runs filter plugin `T` on `pod` in a fresh instance.
    pub fn filter<T: Filter>(&self, pod: &FakePod) -> Result<FilterResult, CallError> {
        self.filter_instance::<T>()?.filter(pod)
    }

    /// Runs score plugin `T` on `pod` in a fresh instance.
    pub fn score<T: Score>(&self, pod: &FakePod) -> Result<ScoreResult, CallError> {
        self.score_instance::<T>()?.score(pod)
    }
}

/// A started plugin instance: like the host's, it keeps its state (and registered reasons)
/// from pod to pod.
pub struct Instance<T> {
    state: Rc<RefCell<State>>,
    slot: RefCell<Option<T>>,
    chunk_size: usize,
}

impl<T> Instance<T> {
    fn start(
        host: &TestHost,
        init: fn(&RefCell<Option<T>>) -> i32,
    ) -> Result<Instance<T>, CallError> {
        let instance = Instance {
            state: Rc::new(RefCell::new(State::new(host))),
            slot: RefCell::new(None),
            chunk_size: host.chunk_size,
        };
        instance.run(|| init(&instance.slot))?;
        Ok(instance)
    }

    /// Runs `call` with this instance's state serving the host functions; a non-zero return
    /// is the last `set_error`, a panic a trap.
    fn run(&self, call: impl FnOnce() -> i32) -> Result<(), CallError> {
        let _current = sys::Current::set(self.state.clone());
        match catch_unwind(AssertUnwindSafe(call)) {
            Ok(0) => Ok(()),
            Ok(code) => Err(CallError::Failed(
                self.state
                    .borrow_mut()
                    .error
                    .take()
                    .unwrap_or_else(|| format!("returned {code}")),
            )),
            Err(panic) => Err(CallError::Trap(sys::panic_message(panic))),
        }
    }

    /// Runs one guest call per chunk of nodes for `pod`, collecting the per-node outputs.
    fn each_chunk(
        &self,
        pod: &FakePod,
        call: impl Fn(&RefCell<Option<T>>, i32) -> i32,
    ) -> Result<(), CallError> {
        self.state.borrow_mut().begin_pod(pod);
        let count = self.state.borrow().nodes.len();
        let mut result = Ok(());
        for start in (0..count).step_by(self.chunk_size) {
            let end = count.min(start.saturating_add(self.chunk_size));
            self.state.borrow_mut().begin_call(start..end);
            result = self.run(|| call(&self.slot, (end - start) as i32));
            self.state.borrow_mut().end_call();
            if result.is_err() {
                break;
            }
        }
        self.state.borrow_mut().end_pod();
        result
    }

    fn take_logs(&self) -> Vec<LogLine> {
        std::mem::take(&mut self.state.borrow_mut().logs)
    }
}

impl<T: Filter> Instance<T> {
    /// Filters every node of the host for `pod`.
    pub fn filter(&self, pod: &FakePod) -> Result<FilterResult, CallError> {
        self.each_chunk(pod, __export::run_filter::<T>)?;
        let state = self.state.borrow();
        let verdicts = state
            .nodes
            .iter()
            .zip(&state.verdicts)
            .map(|(n, v)| {
                let reason = (*v != 0).then(|| state.reasons[*v as usize - 1].clone());
                (n.name.clone(), reason)
            })
            .collect();
        drop(state);
        Ok(FilterResult {
            verdicts,
            logs: self.take_logs(),
        })
    }
}

impl<T: Score> Instance<T> {
    /// Scores every node of the host for `pod`.
    pub fn score(&self, pod: &FakePod) -> Result<ScoreResult, CallError> {
        self.each_chunk(pod, __export::run_score::<T>)?;
        let state = self.state.borrow();
        let scores = state
            .nodes
            .iter()
            .zip(&state.scores)
            .map(|(n, s)| (n.name.clone(), *s))
            .collect();
        let normalize = state.normalize;
        drop(state);
        Ok(ScoreResult {
            scores,
            normalize,
            logs: self.take_logs(),
        })
    }
}

/// What the host functions read and write for one instance.
pub(crate) struct State {
    config: String,
    nodes: Vec<FakeNode>,
    symbols: Vec<String>,
    symbol_ids: HashMap<String, u32>,
    /// The nodes of the current call; None outside a call.
    call: Option<std::ops::Range<usize>>,
    /// The pod being scheduled, with its JSON view once asked for.
    pod: Option<FakePod>,
    pod_json: Option<Vec<u8>>,
    reasons: Vec<String>,
    reason_ids: HashMap<String, u32>,
    /// Per node of the host (not of the call): the reason id, or the raw score.
    verdicts: Vec<u32>,
    scores: Vec<i64>,
    /// What the current call wrote through `set_verdicts` / `set_scores` / `reject`.
    call_verdicts: Vec<u32>,
    call_scores: Vec<i64>,
    error: Option<String>,
    normalize: Normalize,
    logs: Vec<LogLine>,
}

impl State {
    fn new(host: &TestHost) -> State {
        let mut state = State {
            config: host.config.clone(),
            nodes: host.nodes.clone(),
            symbols: Vec::new(),
            symbol_ids: HashMap::new(),
            call: None,
            pod: None,
            pod_json: None,
            reasons: Vec::new(),
            reason_ids: HashMap::new(),
            verdicts: Vec::new(),
            scores: Vec::new(),
            call_verdicts: Vec::new(),
            call_scores: Vec::new(),
            error: None,
            normalize: Normalize::None,
            logs: Vec::new(),
        };
        // The host interns what the cluster's objects use: labels, namespaces, images.
        let nodes = std::mem::take(&mut state.nodes);
        for node in &nodes {
            for (k, v) in &node.labels {
                state.intern(k);
                state.intern(v);
            }
            for (image, _) in &node.images {
                state.intern(image);
            }
            for pod in &node.pods {
                state.intern_pod(pod);
            }
        }
        state.nodes = nodes;
        state
    }

    fn intern(&mut self, text: &str) {
        if !self.symbol_ids.contains_key(text) {
            self.symbols.push(text.to_owned());
            self.symbol_ids
                .insert(text.to_owned(), self.symbols.len() as u32);
        }
    }

    fn intern_pod(&mut self, pod: &FakePod) {
        self.intern(&pod.namespace);
        for (k, v) in &pod.labels {
            self.intern(k);
            self.intern(v);
        }
    }

    fn begin_pod(&mut self, pod: &FakePod) {
        self.intern_pod(pod);
        self.pod = Some(pod.clone());
        self.pod_json = None;
        let count = self.nodes.len();
        self.verdicts = vec![0; count];
        self.scores = vec![0; count];
    }

    fn end_pod(&mut self) {
        self.pod = None;
        self.pod_json = None;
        self.call = None;
    }

    fn begin_call(&mut self, nodes: std::ops::Range<usize>) {
        self.call_verdicts = vec![0; nodes.len()];
        self.call_scores = vec![0; nodes.len()];
        self.call = Some(nodes);
        self.error = None;
    }

    fn end_call(&mut self) {
        if let Some(range) = self.call.take() {
            self.verdicts[range.clone()].copy_from_slice(&self.call_verdicts);
            self.scores[range].copy_from_slice(&self.call_scores);
        }
    }
}
