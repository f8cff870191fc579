//! Seeded preemption scenarios: nodes full of running pods of several priorities
//! (PriorityClasses), PodDisruptionBudgets guarding some of them, and pending pods of higher
//! priority that must preempt to fit, so that v1.22's DefaultPreemption and Berth's can be
//! compared on the node they nominate and the victims they evict.
//!
//! Pending pods vary in what makes them preempt or not: `preemptionPolicy: Never` (a
//! PriorityClass saying so), requests no node can hold even when emptied, a priority no
//! higher than the running pods', required anti-affinity toward running pods (preempting
//! frees the node only if the dry run removes the matching pods from the anti-affinity
//! counts), required affinity, and hard topology spread constraints over running pods
//! (preempting changes the node's domain count).
//!
//! Running pods carry distinct `status.startTime`s and budgets a fixed
//! `status.disruptionsAllowed` (the replay writes both through the status subresource, as the
//! kubelet and the disruption controller would): without start times v1.22 orders pods of
//! equal priority by the time of the call (`GetPodStartTime` returns now), which is not
//! reproducible.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::generate::Scenario;

const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
const ZONES: [&str; 2] = ["zone-a", "zone-b"];
const APPS: [&str; 4] = ["web", "db", "cache", "batch"];

/// The scenario's PriorityClasses: (suffix, value, preemptionPolicy Never).
const CLASSES: [(&str, i32, bool); 5] = [
    ("low", 10, false),
    ("mid", 100, false),
    ("high", 1000, false),
    ("high-never", 1000, true),
    ("top", 10000, false),
];

/// Generates the preemption scenario of `seed`; names as [`crate::generate::scenario`].
pub fn scenario(seed: u64, prefix: &str) -> Scenario {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        prefix: prefix.to_owned(),
        ns: [prefix.to_owned(), format!("{prefix}-team")],
        started: 0,
    };
    let mut objects: Vec<Value> = CLASSES
        .iter()
        .map(|(suffix, value, never)| {
            let mut class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": g.class(suffix)}, "value": value});
            if *never {
                class["preemptionPolicy"] = json!("Never");
            }
            class
        })
        .collect();
    let node_count = g.rng.random_range(3..=6usize);
    let nodes: Vec<String> = (0..node_count).map(|i| format!("{prefix}-n{i}")).collect();
    let mut k = 0;
    for (i, name) in nodes.iter().enumerate() {
        let cpu_cores = g.rng.random_range(2..=4i64);
        objects.push(g.node(name, i, cpu_cores));
        // Fill the node to within half a core of its allocatable cpu.
        let mut left = cpu_cores * 1000;
        while left >= 500 {
            let cpu = (*g.pick(&[500i64, 500, 1000, 1500])).min(left);
            objects.push(g.running_pod(&format!("r{k}"), name, cpu));
            left -= cpu;
            k += 1;
        }
    }
    for b in 0..g.rng.random_range(0..=3usize) {
        objects.push(g.budget(&format!("pdb{b}")));
    }
    let pending = (0..g.rng.random_range(3..=6usize))
        .map(|k| g.preemptor(&format!("p{k}"), &nodes))
        .collect();
    let policy = g.policy();
    Scenario {
        seed,
        preemption: true,
        namespaces: g.ns.clone(),
        policy,
        controllers: Vec::new(),
        objects,
        pending,
    }
}

struct Gen {
    rng: ChaCha8Rng,
    prefix: String,
    ns: [String; 2],
    /// Seconds after the epoch of the next running pod's start time.
    started: u64,
}

impl Gen {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.random_range(0..items.len())]
    }

    fn class(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.prefix)
    }

    fn namespace(&mut self) -> String {
        if self.chance(0.85) {
            self.ns[0].clone()
        } else {
            self.ns[1].clone()
        }
    }

    fn node(&mut self, name: &str, index: usize, cpu_cores: i64) -> Value {
        let mut labels = json!({HOSTNAME_LABEL: name, "kubernetes.io/os": "linux"});
        if self.chance(0.9) {
            labels[ZONE_LABEL] = json!(ZONES[index % ZONES.len()]);
        }
        let allocatable = json!({"cpu": cpu_cores.to_string(), "memory": "16Gi", "pods": "110"});
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {"capacity": allocatable.clone(), "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
    }

    fn running_pod(&mut self, name: &str, node: &str, cpu_milli: i64) -> Value {
        let ns = self.namespace();
        let app = *self.pick(&APPS);
        let class = *self.pick(&["low", "low", "mid", "mid", "high"]);
        let class = self.class(class);
        let mut spec = json!({"containers": [{"name": "main", "image": "registry.local/x:1",
                "resources": {"requests": {"cpu": format!("{cpu_milli}m"), "memory": "256Mi"}}}],
            "nodeName": node, "priorityClassName": class,
            "terminationGracePeriodSeconds": 0});
        if self.chance(0.15) {
            // Keeps pods of another app off its node: a pod of that app must evict it.
            let other = *self.pick(&APPS);
            spec["affinity"] = json!({"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": other}},
                    "topologyKey": HOSTNAME_LABEL}]}});
        }
        // Distinct start times, some equal priority pods started in either order.
        self.started += self.rng.random_range(1..=60);
        let start = format!(
            "2024-01-01T{:02}:{:02}:{:02}Z",
            self.started / 3600,
            self.started / 60 % 60,
            self.started % 60
        );
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": spec,
            "status": {"phase": "Running", "startTime": start}})
    }

    fn budget(&mut self, name: &str) -> Value {
        let ns = self.ns[0].clone();
        let app = *self.pick(&APPS);
        let allowed = *self.pick(&[0, 0, 1, 2]);
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": allowed},
            "status": {"disruptionsAllowed": allowed, "currentHealthy": 3,
                "desiredHealthy": 3, "expectedPods": 3, "observedGeneration": 1}})
    }

    fn preemptor(&mut self, name: &str, nodes: &[String]) -> Value {
        let ns = self.namespace();
        let app = *self.pick(&APPS);
        // Mostly able to preempt; sometimes Never, or no higher than what runs.
        let class = *self.pick(&["high", "high", "top", "top", "mid", "high-never", "low"]);
        let class = self.class(class);
        // 8 cores fit on no node even emptied.
        let cpu = *self.pick(&["500m", "1", "1500m", "2", "2", "8"]);
        let mut spec = json!({"containers": [{"name": "main", "image": "registry.local/x:1",
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}],
            "priorityClassName": class, "terminationGracePeriodSeconds": 0});
        let mut affinity = serde_json::Map::new();
        if self.chance(0.3) {
            let other = *self.pick(&APPS);
            let key = *self.pick(&[HOSTNAME_LABEL, HOSTNAME_LABEL, ZONE_LABEL]);
            affinity.insert(
                "podAntiAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": other}}, "topologyKey": key}]}),
            );
        }
        if self.chance(0.15) {
            let other = *self.pick(&APPS);
            affinity.insert(
                "podAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": other}},
                    "topologyKey": ZONE_LABEL}]}),
            );
        }
        if !affinity.is_empty() {
            spec["affinity"] = Value::Object(affinity);
        }
        if self.chance(0.3) {
            let key = *self.pick(&[HOSTNAME_LABEL, ZONE_LABEL]);
            spec["topologySpreadConstraints"] = json!([{"maxSkew": self.rng.random_range(1..=2),
                "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}}}]);
        }
        if self.chance(0.1) {
            spec["nodeSelector"] = json!({HOSTNAME_LABEL: self.pick(nodes)});
        }
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": spec})
    }

    fn policy(&mut self) -> Value {
        let mut policy = json!({"kind": "Policy", "apiVersion": "v1"});
        // Sometimes the default provider, which has every predicate.
        if self.chance(0.2) {
            return policy;
        }
        let mut predicates = vec![json!({"name": "PodFitsResources"})];
        for (name, p) in [
            ("MatchInterPodAffinity", 0.8),
            ("EvenPodsSpread", 0.8),
            ("MatchNodeSelector", 0.5),
            ("PodFitsHostPorts", 0.3),
        ] {
            if self.chance(p) {
                predicates.push(json!({"name": name}));
            }
        }
        policy["predicates"] = json!(predicates);
        policy["priorities"] = json!([{"name": "LeastRequestedPriority", "weight": 1}]);
        if self.chance(0.3) {
            policy["alwaysCheckAllPredicates"] = json!(true);
        }
        policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_reproduce_and_every_kind_of_preemptor_is_generated() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let s = scenario(seed, "s");
            let again = scenario(seed, "s");
            assert_eq!(
                (&s.objects, &s.pending, &s.policy),
                (&again.objects, &again.pending, &again.policy)
            );
            for p in &s.pending {
                let class = p["spec"]["priorityClassName"].as_str().unwrap_or_default();
                seen.insert(class.trim_start_matches("s-").to_owned());
                if p["spec"]["affinity"]["podAntiAffinity"].is_object() {
                    seen.insert("anti-affinity".into());
                }
                if p["spec"]["topologySpreadConstraints"].is_array() {
                    seen.insert("spread".into());
                }
            }
            if s.objects.iter().any(|o| o["kind"] == "PodDisruptionBudget") {
                seen.insert("budget".into());
            }
        }
        for want in [
            "low",
            "mid",
            "high",
            "high-never",
            "top",
            "anti-affinity",
            "spread",
            "budget",
        ] {
            assert!(seen.contains(want), "{want} never generated: {seen:?}");
        }
    }
}
