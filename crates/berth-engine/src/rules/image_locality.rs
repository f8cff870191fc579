//! ImageLocalityPriority (v1.22 ImageLocality): prefer nodes that already have the pod's
//! container images.
//!
//! For each app container (init containers do not count in v1.22) whose image, normalised
//! with `:latest` when it has no tag or digest, is on the node, add
//! `int(size * nodes having the image / all nodes)`. The sum is clamped to
//! [23 MiB, 1000 MiB x number of containers] and scaled linearly to 0..100 (integer
//! division). There is no normalisation step.

use crate::cluster::{NodeInfo, normalize_image_name};
use crate::framework::{CycleContext, MAX_NODE_SCORE, NodeScore, Reuse, ScorePrep, ScoreRule};
use crate::labels::Sym;

/// The kube-scheduler framework plugin that serves this rule's policy entries (v1.22's
/// legacy registry).
pub const UPSTREAM_PLUGIN: &str = "ImageLocality";

const MB: i64 = 1024 * 1024;
/// Image sums below this score 0.
const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container, image sums above this score 100.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// The rule.
pub struct ImageLocality;

/// Scales an image sum to 0..=100 between the thresholds.
fn priority(sum: i64, max_threshold: i64) -> i64 {
    let clamped = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max_threshold {
        max_threshold
    } else {
        sum
    };
    MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) / (max_threshold - MIN_THRESHOLD)
}

struct Score {
    /// Per container whose image some node has: the interned image name and its spread
    /// (nodes having it / all nodes).
    images: Vec<(Sym, f64)>,
    max_threshold: i64,
}

impl NodeScore for Score {
    /// Reusable across a class while the node is unchanged: The node's images; the spread of each image across nodes changes only when nodes do.
    fn reuse(&self) -> Reuse {
        Reuse::node_local()
    }

    #[inline]
    fn score(&self, node: &NodeInfo) -> i64 {
        let sum = self
            .images
            .iter()
            .filter_map(|(image, spread)| {
                let i = node
                    .image_syms
                    .binary_search_by_key(image, |(s, _)| *s)
                    .ok()?;
                Some((node.image_syms[i].1 as f64 * spread) as i64)
            })
            .fold(0, i64::saturating_add);
        priority(sum, self.max_threshold)
    }
}

impl ScoreRule for ImageLocality {
    fn prepare<'a>(&'a self, ctx: CycleContext<'a>) -> ScorePrep<'a> {
        let cluster = ctx.cluster;
        let containers = &ctx.pod.pod.containers;
        let max_threshold = MAX_CONTAINER_THRESHOLD.saturating_mul(containers.len() as i64);
        let total = cluster.node_count() as f64;
        let images: Vec<(Sym, f64)> = containers
            .iter()
            .filter_map(|c| {
                let name = normalize_image_name(&c.image);
                let having = cluster.image_node_count(&name);
                if having == 0 {
                    return None;
                }
                let sym = cluster.interner().get(&name)?;
                Some((sym, f64::from(having) / total))
            })
            .collect();
        if images.is_empty() {
            return ScorePrep::Constant(priority(0, max_threshold));
        }
        ScorePrep::PerNode(Box::new(Score {
            images,
            max_threshold,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, Node, NodeImage, Pod};
    use crate::testkit::*;

    fn images_pod(images: &[&str]) -> Pod {
        pod("p")
            .with(|p| {
                p.containers = images
                    .iter()
                    .enumerate()
                    .map(|(i, image)| Container {
                        name: format!("c{i}"),
                        image: image.to_string(),
                        ..Container::default()
                    })
                    .collect();
            })
            .build()
    }

    fn image_node(name: &str, images: &[(&[&str], i64)]) -> Node {
        let mut n = node(name).build();
        n.images = images
            .iter()
            .map(|(names, mb)| NodeImage {
                names: names.iter().map(|s| s.to_string()).collect(),
                size_bytes: mb * MB,
            })
            .collect();
        n
    }

    /// Upstream's TestImageLocalityPriority node and pod fixtures (v1.22 thresholds:
    /// 1000 MiB per container).
    #[test]
    fn upstream_table() {
        let n403002000 = |n: &str| {
            image_node(
                n,
                &[
                    (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
                    (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                    (&["gcr.io/2000:latest"], 2000),
                ],
            )
        };
        let n25010 = |n: &str| {
            image_node(
                n,
                &[
                    (&["gcr.io/250:latest"], 250),
                    (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
                ],
            )
        };
        let n60040900 = |n: &str| {
            image_node(
                n,
                &[
                    (&["gcr.io/600:latest"], 600),
                    (&["gcr.io/40:latest"], 40),
                    (&["gcr.io/900:latest"], 900),
                ],
            )
        };
        let n300600900 = |n: &str| {
            image_node(
                n,
                &[
                    (&["gcr.io/300:latest"], 300),
                    (&["gcr.io/600:latest"], 600),
                    (&["gcr.io/900:latest"], 900),
                ],
            )
        };
        let n400030 = |n: &str| {
            image_node(
                n,
                &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)],
            )
        };
        let n203040 = |n: &str| {
            image_node(
                n,
                &[
                    (&["gcr.io/20:latest"], 20),
                    (&["gcr.io/30:latest"], 30),
                    (&["gcr.io/40:latest"], 40),
                ],
            )
        };
        let bare = |n: &str| image_node(n, &[]);
        let cases: Vec<(&str, Vec<Node>, Pod, Vec<i64>)> = vec![
            (
                "two images spread on two nodes, prefer the larger image one",
                vec![n403002000("node1"), n25010("node2")],
                images_pod(&["gcr.io/40", "gcr.io/250"]),
                vec![0, 5],
            ),
            (
                "two images on one node, prefer this node",
                vec![n403002000("node1"), n25010("node2")],
                images_pod(&["gcr.io/40", "gcr.io/300"]),
                vec![7, 0],
            ),
            (
                "if exceed limit, use limit",
                vec![n400030("node1"), n25010("node2")],
                images_pod(&["gcr.io/10", "gcr.io/4000"]),
                vec![100, 0],
            ),
            (
                "if exceed limit, use limit (with node which has no images present)",
                vec![n400030("node1"), n25010("node2"), bare("node3")],
                images_pod(&["gcr.io/10", "gcr.io/4000"]),
                vec![66, 0, 0],
            ),
            (
                "pod with multiple large images, node2 is preferred",
                vec![n60040900("node1"), n300600900("node2"), bare("node3")],
                images_pod(&["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
                vec![32, 36, 0],
            ),
            (
                "pod with multiple small images",
                vec![n203040("node1"), n400030("node2")],
                images_pod(&["gcr.io/30", "gcr.io/40"]),
                vec![1, 0],
            ),
        ];
        for (name, nodes, p, want) in cases {
            let mut cl = cluster(nodes, vec![]);
            let got: Vec<i64> = run_score(&ImageLocality, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn edge_cases() {
        let big =
            |n: &str| image_node(n, &[(&["registry:5000/app:latest", "app@sha256:abc"], 500)]);
        let mut with_init = images_pod(&["other"]);
        with_init.init_containers.push(Container {
            image: "registry:5000/app".into(),
            ..Container::default()
        });
        let cases: Vec<(&str, Pod, Vec<i64>)> = vec![
            // 500 MiB on 1 of 2 nodes = 250 MiB; one container: (250-23)*100/(1000-23) = 23.
            (
                "an untagged name with a registry port gets :latest",
                images_pod(&["registry:5000/app"]),
                vec![23, 0],
            ),
            (
                "a digest is kept as is",
                images_pod(&["app@sha256:abc"]),
                vec![23, 0],
            ),
            (
                "another tag is another image",
                images_pod(&["registry:5000/app:v2"]),
                vec![0, 0],
            ),
            (
                "init containers do not count (v1.22)",
                with_init,
                vec![0, 0],
            ),
            (
                "a pod without containers scores 0",
                images_pod(&[]),
                vec![0, 0],
            ),
            // Two containers of the same image count twice, against a doubled threshold:
            // (500-23)*100/(2000-23) = 24.
            (
                "the same image twice counts twice",
                images_pod(&["registry:5000/app", "registry:5000/app"]),
                vec![24, 0],
            ),
        ];
        for (name, p, want) in cases {
            let mut cl = cluster(vec![big("a"), image_node("b", &[])], vec![]);
            let got: Vec<i64> = run_score(&ImageLocality, &mut cl, p)
                .into_iter()
                .map(|(_, s)| s)
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn spread_counts_all_nodes_not_just_feasible() {
        let img = |n: &str| image_node(n, &[(&["app:latest"], 1000)]);
        let mut cl = cluster(
            vec![
                img("a"),
                img("b"),
                image_node("c", &[]),
                image_node("d", &[]),
            ],
            vec![],
        );
        let feasible: Vec<_> = ["a"].iter().filter_map(|n| cl.node_by_name(n)).collect();
        // 1000 MiB on 2 of 4 nodes = 500 MiB: (500-23)*100/(1000-23) = 48.
        let got = run_score_on(&ImageLocality, &mut cl, images_pod(&["app"]), &feasible);
        assert_eq!(got, vec![("a".to_string(), 48)]);
    }
}
