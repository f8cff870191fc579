//! The Services, RCs, ReplicaSets and StatefulSets, in the order they were first added, with
//! an index that finds the ones selecting a pod without matching every selector.
//!
//! Several rules ask, for every pod, which of these objects select it (SelectorSpread and
//! its PodTopologySpread default, ServiceAntiAffinity, ServiceAffinity). A cluster has
//! hundreds to thousands of Services; matching each selector against each pod's labels made
//! that question a scan per rule per pod. Most selectors require a label to have one of a
//! few values (`matchLabels` compiles to `In`), so a selector is filed under each
//! (namespace, key, value) its first `In` requirement accepts: a pod carrying none of those
//! labels cannot match it. The rest (only `Exists`, `NotIn`, or no requirement at all) are
//! checked for every pod of their namespace.

use rustc_hash::FxHashMap;

use crate::labels::{HoldsSymbols, Labels, Sym};
use crate::model::SelectorKind;

use super::SelectorObject;

/// The selector objects and their index (see the module docs).
#[derive(Debug, Default)]
pub(super) struct SelectorObjects {
    objects: Vec<SelectorObject>,
    /// Positions in `objects` by kind and namespace, then name (upserts replace in place;
    /// the names are a map of their own so a lookup by `&str` allocates nothing).
    by_name: FxHashMap<(SelectorKind, Sym), FxHashMap<Box<str>, u32>>,
    /// Positions of objects with an `In` requirement, under every label it accepts.
    by_label: FxHashMap<(Sym, Sym, Sym), Vec<u32>>,
    /// Positions of objects whose selector has requirements but no `In` one, or none at all.
    unindexed: Vec<u32>,
}

impl SelectorObjects {
    /// Every object, in the order they were first added.
    pub fn all(&self) -> &[SelectorObject] {
        &self.objects
    }

    /// Adds `object`, or replaces the one of its kind, namespace and name in place.
    pub fn upsert(&mut self, object: SelectorObject) {
        match self.position(object.kind, object.namespace, &object.name) {
            Some(at) => {
                self.unfile(at);
                self.objects[at as usize] = object;
                self.file(at);
            }
            None => {
                let at = self.objects.len() as u32;
                self.objects.push(object);
                self.name(at);
                self.file(at);
            }
        }
    }

    /// Removes the object of that kind, namespace and name; false when there was none. The
    /// others keep their order (and so move down one position: the index is rebuilt).
    pub fn remove(&mut self, kind: SelectorKind, namespace: Sym, name: &str) -> bool {
        let Some(at) = self.position(kind, namespace, name) else {
            return false;
        };
        self.objects.remove(at as usize);
        self.reindex();
        true
    }

    /// The object of that kind, namespace and name.
    pub fn named(&self, kind: SelectorKind, namespace: Sym, name: &str) -> Option<&SelectorObject> {
        self.position(kind, namespace, name)
            .map(|at| &self.objects[at as usize])
    }

    /// The objects of namespace `namespace` (and of `kind`, if given) whose selector matches
    /// `labels`, in the order they were first added.
    pub fn selecting(
        &self,
        namespace: Sym,
        labels: &Labels,
        kind: Option<SelectorKind>,
    ) -> Vec<&SelectorObject> {
        let mut candidates: Vec<u32> = self.unindexed.clone();
        for (key, value) in labels.iter() {
            if let Some(found) = self.by_label.get(&(namespace, key, value)) {
                candidates.extend_from_slice(found);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates
            .into_iter()
            .map(|at| &self.objects[at as usize])
            .filter(|o| {
                kind.is_none_or(|k| o.kind == k)
                    && o.namespace == namespace
                    && o.selector.as_ref().is_some_and(|s| s.matches(labels))
            })
            .collect()
    }

    /// Lets `f` renumber every symbol the objects hold (the interner's compaction), then
    /// rebuilds the index, whose keys are symbols.
    pub fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for o in &mut self.objects {
            f(&mut o.namespace);
            if let Some(s) = &mut o.selector {
                s.visit_symbols(f);
            }
        }
        self.reindex();
    }

    fn reindex(&mut self) {
        self.by_name.clear();
        self.by_label.clear();
        self.unindexed.clear();
        for at in 0..self.objects.len() as u32 {
            self.name(at);
            self.file(at);
        }
    }

    /// The position of the object of that kind, namespace and name.
    fn position(&self, kind: SelectorKind, namespace: Sym, name: &str) -> Option<u32> {
        self.by_name.get(&(kind, namespace))?.get(name).copied()
    }

    /// Files the object at `at` under its kind, namespace and name.
    fn name(&mut self, at: u32) {
        let o = &self.objects[at as usize];
        self.by_name
            .entry((o.kind, o.namespace))
            .or_default()
            .insert(o.name.clone(), at);
    }

    /// Files the object at `at` in the label index (an object without a selector selects
    /// nothing and is filed nowhere).
    fn file(&mut self, at: u32) {
        let o = &self.objects[at as usize];
        let Some(selector) = &o.selector else { return };
        match selector.index_keys() {
            Some((key, values)) => {
                for value in values {
                    self.by_label
                        .entry((o.namespace, key, *value))
                        .or_default()
                        .push(at);
                }
            }
            None => self.unindexed.push(at),
        }
    }

    /// Takes the object at `at` out of the label index.
    fn unfile(&mut self, at: u32) {
        let o = &self.objects[at as usize];
        let Some(selector) = &o.selector else { return };
        match selector.index_keys() {
            Some((key, values)) => {
                for value in values {
                    let entry = (o.namespace, key, *value);
                    if let Some(list) = self.by_label.get_mut(&entry) {
                        list.retain(|p| *p != at);
                        if list.is_empty() {
                            self.by_label.remove(&entry);
                        }
                    }
                }
            }
            None => self.unindexed.retain(|p| *p != at),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cluster::Cluster;
    use crate::labels::{LabelSelector, Operator, Requirement};
    use crate::model::{Meta, PodSelector};
    use crate::testkit::*;

    use super::*;

    fn object(kind: SelectorKind, name: &str, selector: Option<LabelSelector>) -> PodSelector {
        PodSelector {
            kind,
            meta: Meta {
                name: name.into(),
                namespace: "default".into(),
                ..Meta::default()
            },
            selector,
        }
    }

    fn equal(pairs: &[(&str, &str)]) -> LabelSelector {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LabelSelector::from_map(owned.iter().map(|(k, v)| (k, v)))
    }

    fn exists(key: &str) -> LabelSelector {
        LabelSelector {
            requirements: vec![Requirement {
                key: key.into(),
                operator: Operator::Exists,
                values: Vec::new(),
            }],
        }
    }

    /// The index answers as matching every selector would, in the order the objects were
    /// first added, through replacing, removing and renumbering.
    #[test]
    fn selecting_agrees_with_matching_every_selector() {
        let mut cluster = cluster(vec![node("n").build()], vec![]);
        let objects = [
            object(SelectorKind::Service, "web", Some(equal(&[("app", "web")]))),
            object(
                SelectorKind::ReplicaSet,
                "web-rs",
                Some(equal(&[("app", "web"), ("v", "1")])),
            ),
            object(SelectorKind::Service, "tier", Some(exists("tier"))),
            object(SelectorKind::Service, "all", Some(LabelSelector::default())),
            object(SelectorKind::Service, "none", None),
            object(SelectorKind::Service, "db", Some(equal(&[("app", "db")]))),
        ];
        for o in &objects {
            cluster.upsert_selector_object(o);
        }
        let pods = [
            pod("a").label("app", "web").label("v", "1").build(),
            pod("b").label("app", "web").label("tier", "front").build(),
            pod("c").label("app", "db").build(),
            pod("d").build(),
        ];
        type Expected<'a> = [(&'a str, &'a [&'a str]); 4];
        let check = |cluster: &mut Cluster, expected: &Expected| {
            for (p, (name, names)) in pods.iter().zip(expected) {
                let info = cluster.compile_pod(p.clone());
                let by_scan: Vec<&str> = cluster
                    .selector_objects()
                    .iter()
                    .filter(|o| {
                        o.namespace == info.namespace
                            && o.selector.as_ref().is_some_and(|s| s.matches(&info.labels))
                    })
                    .map(|o| &*o.name)
                    .collect();
                let by_index: Vec<&str> = cluster
                    .selecting(&info, None)
                    .iter()
                    .map(|o| &*o.name)
                    .collect();
                assert_eq!(by_index, by_scan, "pod {name}");
                assert_eq!(by_index, *names, "pod {name}");
            }
        };
        check(
            &mut cluster,
            &[
                ("a", &["web", "web-rs", "all"]),
                ("b", &["web", "tier", "all"]),
                ("c", &["all", "db"]),
                ("d", &["all"]),
            ],
        );
        // Replacing keeps the position; the old selector no longer answers.
        cluster.upsert_selector_object(&object(
            SelectorKind::Service,
            "web",
            Some(equal(&[("app", "db")])),
        ));
        cluster.remove_selector_object(SelectorKind::Service, "default", "all");
        check(
            &mut cluster,
            &[
                ("a", &["web-rs"]),
                ("b", &["tier"]),
                ("c", &["web", "db"]),
                ("d", &[]),
            ],
        );
        assert!(!cluster.remove_selector_object(SelectorKind::Service, "default", "all"));
        let web = cluster.intern("default");
        assert!(
            cluster
                .selector_object(SelectorKind::ReplicaSet, web, "web-rs")
                .is_some()
        );
    }
}
