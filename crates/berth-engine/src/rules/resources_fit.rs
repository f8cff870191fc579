//! PodFitsResources (v1.22 NodeResourcesFit): the node has room for the pod's requests.

use crate::cluster::{FitRequest, NodeFit, NodeInfo};
use crate::framework::{CycleContext, Dense, FilterPrep, FilterRule, NodeCheck, Reason, RowTest};
use crate::resources::Resources;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "NodeResourcesFit";

/// The node already runs as many pods as it allows.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// Not enough CPU.
pub const REASON_CPU: &str = "Insufficient cpu";
/// Not enough memory.
pub const REASON_MEMORY: &str = "Insufficient memory";
/// Not enough ephemeral storage.
pub const REASON_EPHEMERAL_STORAGE: &str = "Insufficient ephemeral-storage";
/// Prefix of the reason for an extended resource: `Insufficient <name>`.
pub const REASON_PREFIX: &str = "Insufficient ";

/// The rule. Extended resources managed by an extender with `ignoredByScheduler` are skipped.
pub struct PodFitsResources {
    ignored: Vec<String>,
}

impl PodFitsResources {
    /// The rule, ignoring these extended resources.
    pub fn new(ignored: Vec<String>) -> Self {
        PodFitsResources { ignored }
    }

    /// The per-node check for a pod (shared with GeneralPredicates).
    pub fn checker<'a>(&'a self, ctx: &CycleContext<'a>) -> ResourcesCheck<'a> {
        let request = &ctx.pod.request;
        ResourcesCheck {
            request,
            requests_nothing: request.is_zero() && request.scalars.is_empty(),
            ignored: &self.ignored,
            rows: ctx.cluster.fit_rows(),
        }
    }
}

impl FilterRule for PodFitsResources {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> FilterPrep<'a> {
        FilterPrep::Check(Box::new(self.checker(&ctx)))
    }
}

/// The prepared check.
pub struct ResourcesCheck<'a> {
    request: &'a Resources,
    requests_nothing: bool,
    ignored: &'a [String],
    rows: &'a [NodeFit],
}

impl NodeCheck for ResourcesCheck<'_> {
    fn node_local(&self) -> bool {
        true
    }

    /// Extended resources are not in the rows: a pod asking for any reads the node.
    fn dense(&self) -> Dense<'_> {
        if !self.request.scalars.is_empty() {
            return Dense::No;
        }
        Dense::Rows(
            self.rows,
            RowTest::Fits(FitRequest {
                milli_cpu: self.request.milli_cpu,
                memory: self.request.memory,
                ephemeral_storage: self.request.ephemeral_storage,
                requests_nothing: self.requests_nothing,
            }),
        )
    }

    #[inline]
    fn check(&self, node: &NodeInfo, reasons: &mut Vec<Reason>) -> bool {
        let before = reasons.len();
        if node.pods.len() as i64 + 1 > node.allowed_pods {
            reasons.push(REASON_TOO_MANY_PODS.into());
        }
        if self.requests_nothing {
            return reasons.len() == before;
        }
        let (alloc, used, req) = (&node.allocatable, &node.requested, self.request);
        if exceeds(alloc.milli_cpu, req.milli_cpu, used.milli_cpu) {
            reasons.push(REASON_CPU.into());
        }
        if exceeds(alloc.memory, req.memory, used.memory) {
            reasons.push(REASON_MEMORY.into());
        }
        if exceeds(
            alloc.ephemeral_storage,
            req.ephemeral_storage,
            used.ephemeral_storage,
        ) {
            reasons.push(REASON_EPHEMERAL_STORAGE.into());
        }
        for (name, want) in &req.scalars {
            if self.ignored.iter().any(|i| **i == **name) {
                continue;
            }
            if exceeds(alloc.scalar(name), *want, used.scalar(name)) {
                reasons.push(format!("{REASON_PREFIX}{name}").into());
            }
        }
        reasons.len() == before
    }
}

/// Whether `request` on top of `used` exceeds `allocatable`, summed without overflow (two
/// pods asking for 7Ei each).
#[inline]
fn exceeds(allocatable: i64, request: i64, used: i64) -> bool {
    i128::from(request) + i128::from(used) > i128::from(allocatable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn table() {
        let gpu = "example.com/gpu";
        struct Case {
            name: &'static str,
            node: crate::model::Node,
            running: Vec<crate::model::Pod>,
            pod: crate::model::Pod,
            want: Vec<&'static str>,
        }
        let cases = vec![
            Case {
                name: "fits",
                node: node("n").cpu(1000).mem(GI).build(),
                running: vec![pod("a").req(500, 512 * MI).on("n").build()],
                pod: pod("p").req(500, 512 * MI).build(),
                want: vec![],
            },
            Case {
                name: "cpu and memory both short, both reported",
                node: node("n").cpu(1000).mem(GI).build(),
                running: vec![pod("a").req(600, 600 * MI).on("n").build()],
                pod: pod("p").req(500, 512 * MI).build(),
                want: vec![REASON_CPU, REASON_MEMORY],
            },
            Case {
                name: "zero capacity node rejects any request",
                node: node("n").cpu(0).mem(0).build(),
                running: vec![],
                pod: pod("p").req(1, 0).build(),
                want: vec![REASON_CPU],
            },
            Case {
                name: "best-effort pod fits a full node",
                node: node("n").cpu(0).mem(0).build(),
                running: vec![],
                pod: pod("p").build(),
                want: vec![],
            },
            Case {
                name: "pod count limit applies even to best-effort pods",
                node: node("n").pods(1).build(),
                running: vec![pod("a").on("n").build()],
                pod: pod("p").build(),
                want: vec![REASON_TOO_MANY_PODS],
            },
            Case {
                name: "init container larger than the sum of app containers",
                node: node("n").cpu(1000).build(),
                running: vec![],
                pod: pod("p").req(100, 0).init(1500, 0).build(),
                want: vec![REASON_CPU],
            },
            Case {
                name: "overhead is added",
                node: node("n").cpu(1000).build(),
                running: vec![],
                pod: pod("p").req(900, 0).overhead("cpu", 200).build(),
                want: vec![REASON_CPU],
            },
            Case {
                name: "extended resource missing on node",
                node: node("n").build(),
                running: vec![],
                pod: pod("p").res(gpu, 1).build(),
                want: vec!["Insufficient example.com/gpu"],
            },
            Case {
                name: "extended resource available",
                node: node("n").alloc(gpu, 2).build(),
                running: vec![pod("a").res(gpu, 1).on("n").build()],
                pod: pod("p").res(gpu, 1).build(),
                want: vec![],
            },
            Case {
                name: "ephemeral storage",
                node: node("n").alloc("ephemeral-storage", GI).build(),
                running: vec![],
                pod: pod("p").res("ephemeral-storage", 2 * GI).build(),
                want: vec![REASON_EPHEMERAL_STORAGE],
            },
            Case {
                name: "two bound pods of 7Ei memory each: their sum does not wrap to free room",
                node: node("n").mem(i64::MAX).build(),
                running: vec![
                    pod("a").req(0, 7 * EI).on("n").build(),
                    pod("b").req(0, 7 * EI).on("n").build(),
                ],
                pod: pod("p").req(0, 1).build(),
                want: vec![REASON_MEMORY],
            },
            Case {
                name: "a request of i64::MAX on a node already in use",
                node: node("n").alloc(gpu, i64::MAX).build(),
                running: vec![pod("a").res(gpu, 1).on("n").build()],
                pod: pod("p").res(gpu, i64::MAX).build(),
                want: vec!["Insufficient example.com/gpu"],
            },
            Case {
                name: "a request and overhead of i64::MAX cpu (clamped) fit a node of i64::MAX",
                node: node("n").cpu(i64::MAX).build(),
                running: vec![],
                pod: pod("p").req(i64::MAX, 0).overhead("cpu", i64::MAX).build(),
                want: vec![],
            },
            Case {
                name: "terminating pods still hold their resources",
                node: node("n").cpu(1000).build(),
                running: vec![pod("a").req(800, 0).on("n").terminating().build()],
                pod: pod("p").req(300, 0).build(),
                want: vec![REASON_CPU],
            },
        ];
        for c in cases {
            let mut cl = cluster(vec![c.node], c.running);
            let got = run_filter(&PodFitsResources::new(vec![]), &mut cl, c.pod);
            assert_eq!(got[0].1, c.want, "{}", c.name);
        }
    }

    #[test]
    fn ignored_extended_resource() {
        let mut cl = cluster(vec![node("n").build()], vec![]);
        let rule = PodFitsResources::new(vec!["example.com/foo".into()]);
        let got = run_filter(&rule, &mut cl, pod("p").res("example.com/foo", 3).build());
        assert!(got[0].1.is_empty());
    }
}
