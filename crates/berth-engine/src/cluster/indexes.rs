//! The cluster's indexes over assigned pods and their affinity terms, and the small list
//! and map helpers that keep every index holding only live objects.
//!
//! Depends on the compiled pod and the leaf types only, never on the cluster or node info.

use rustc_hash::FxHashMap;

use crate::labels::{Labels, Sym};
use crate::model;
use crate::podinfo::{AffinityTerm, PodAffinity, PodInfo};
use crate::types::{PodId, TermKind};

/// One affinity term of an assigned pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TermRef {
    /// The pod owning the term.
    pub pod: PodId,
    /// The list the term is in.
    pub kind: TermKind,
    /// Its position in that list.
    pub index: u32,
}

/// Affinity terms of assigned pods, indexed by a label every pod they select must carry (the
/// key and values of the selector's first `In` requirement), so that finding the terms that
/// may select a pod costs one lookup per label of that pod instead of a scan of every term.
/// Terms without an `In` requirement sit in a short unindexed list; terms without a selector
/// select nothing and are left out.
#[derive(Debug, Default)]
pub struct TermIndex {
    pub(super) by_label: FxHashMap<(Sym, Sym), Vec<TermRef>>,
    pub(super) unindexed: Vec<TermRef>,
}

impl TermIndex {
    pub(super) fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        rekey(&mut self.by_label, |(k, v)| {
            f(k);
            f(v);
        });
    }

    fn update(&mut self, r: TermRef, term: &AffinityTerm, add: bool) {
        let Some(selector) = &term.selector else {
            return;
        };
        let Some((key, values)) = selector.index_keys() else {
            if add {
                self.unindexed.push(r);
            } else {
                remove_item(&mut self.unindexed, r);
            }
            return;
        };
        for (i, v) in values.iter().enumerate() {
            // A value listed twice must not yield the term twice.
            if values[..i].contains(v) {
                continue;
            }
            if add {
                self.by_label.entry((key, *v)).or_default().push(r);
            } else if let Some(list) = self.by_label.get_mut(&(key, *v)) {
                remove_item(list, r);
                if list.is_empty() {
                    self.by_label.remove(&(key, *v));
                }
            }
        }
    }

    /// The terms that may select a pod with these labels: a superset (each term appears at
    /// most once), so callers still test each term.
    pub fn candidates<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = TermRef> + 'a {
        labels
            .iter()
            .filter_map(|kv| self.by_label.get(&kv))
            .flatten()
            .chain(&self.unindexed)
            .copied()
    }

    /// Whether the index holds no term.
    pub fn is_empty(&self) -> bool {
        self.by_label.is_empty() && self.unindexed.is_empty()
    }
}

/// Adds (or removes) a pod's terms to (or from) the term indexes: required anti-affinity
/// terms to `anti`, the terms that score other pods to `scoring`.
pub(super) fn index_terms(
    anti: &mut TermIndex,
    scoring: &mut TermIndex,
    pod: PodId,
    affinity: &PodAffinity,
    add: bool,
) {
    use TermKind::*;
    for kind in [AntiRequired, Required, Preferred, AntiPreferred] {
        let index = if kind == AntiRequired {
            &mut *anti
        } else {
            &mut *scoring
        };
        for (i, term) in affinity.terms(kind).iter().enumerate() {
            let r = TermRef {
                pod,
                kind,
                index: i as u32,
            };
            index.update(r, term, add);
        }
    }
}

/// Whether a pod belongs in the `pods_with_volumes` index. Volumes are immutable, so assign
/// and unassign agree on the answer.
pub(super) fn uses_volumes(pod: &PodInfo) -> bool {
    pod.pod
        .volumes
        .iter()
        .any(|v| v.source != model::VolumeSource::Other)
}

/// Counts (`add`) or uncounts the claims `pod`'s volumes name in the claim-users index; a
/// claim and a namespace leave it with their last user.
pub(super) fn count_claims(
    index: &mut FxHashMap<Box<str>, FxHashMap<Box<str>, u32>>,
    pod: &PodInfo,
    add: bool,
) {
    let namespace = pod.pod.meta.namespace.as_str();
    for volume in &pod.pod.volumes {
        let model::VolumeSource::Pvc { claim_name } = &volume.source else {
            continue;
        };
        if add {
            *index
                .entry(namespace.into())
                .or_default()
                .entry(claim_name.as_str().into())
                .or_default() += 1;
            continue;
        }
        let Some(claims) = index.get_mut(namespace) else {
            continue;
        };
        if let Some(n) = claims.get_mut(claim_name.as_str()) {
            *n -= 1;
            if *n == 0 {
                claims.remove(claim_name.as_str());
            }
        }
        if claims.is_empty() {
            index.remove(namespace);
        }
    }
}

/// Removes `item` from the list under `key`, and the list once it is empty, so an index
/// holds only the labels of live objects.
pub(super) fn remove_from_index<K: std::hash::Hash + Eq, T: PartialEq>(
    index: &mut FxHashMap<K, Vec<T>>,
    key: K,
    item: T,
) {
    if let Some(list) = index.get_mut(&key) {
        remove_item(list, item);
        if list.is_empty() {
            index.remove(&key);
        }
    }
}

/// One node fewer has `image`; an image no node has any more leaves the counts.
pub(super) fn uncount_image(counts: &mut FxHashMap<Box<str>, u32>, image: &str) {
    if let Some(c) = counts.get_mut(image) {
        *c -= 1;
        if *c == 0 {
            counts.remove(image);
        }
    }
}

/// Replaces every key of `map` by what `f` makes of it (the map is rebuilt, so it also
/// shrinks to its live entries).
pub(super) fn rekey<K: std::hash::Hash + Eq, V>(
    map: &mut FxHashMap<K, V>,
    mut f: impl FnMut(&mut K),
) {
    *map = std::mem::take(map)
        .into_iter()
        .map(|(mut k, v)| {
            f(&mut k);
            (k, v)
        })
        .collect();
}

pub(super) fn remove_item<T: PartialEq>(v: &mut Vec<T>, item: T) {
    if let Some(i) = v.iter().position(|x| *x == item) {
        v.swap_remove(i);
    }
}
