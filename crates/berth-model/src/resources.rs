//! Resource quantities in integer units: milli-CPU, bytes, counts.
//!
//! Every quantity fits an `i64` (the converter refuses larger ones), but sums of them need
//! not: two pods asking for 7Ei each. A pod's sums saturate at the `i64` bounds, as an
//! absurd request is clamped (it fits no node either way); a node's sum over its pods is
//! kept exact ([`RequestSum`]), so removing a pod restores the true remainder.

use std::ops::Deref;

/// The resource name of CPU.
pub const CPU: &str = "cpu";
/// The resource name of memory.
pub const MEMORY: &str = "memory";
/// The resource name of local ephemeral storage.
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
/// The resource name of the pod count.
pub const PODS: &str = "pods";
/// The CPU a container without a CPU request is taken to use when scoring (milli-CPU).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The memory a container without a memory request is taken to use when scoring (bytes).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// A list of named quantities as written in an object, already converted to integers:
/// `cpu` in milli-CPU, everything else in base units (rounded up, as Kubernetes does).
pub type ResourceList = Vec<(String, i64)>;

/// Quantities of the first-class resources plus any extended (scalar) resources, in this
/// order (`repr(C)`: a node's CPU, memory and ephemeral storage share a cache line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Resources {
    /// Milli-CPU.
    pub milli_cpu: i64,
    /// Memory bytes.
    pub memory: i64,
    /// Ephemeral storage bytes.
    pub ephemeral_storage: i64,
    /// Extended resources (`example.com/gpu`, `hugepages-2Mi`, `attachable-volumes-*`), sorted by name.
    pub scalars: Vec<(Box<str>, i64)>,
}

impl Resources {
    /// Builds from a resource list, ignoring `pods` (tracked separately).
    pub fn from_list(list: &[(String, i64)]) -> Self {
        let mut r = Resources::default();
        for (name, v) in list {
            r.add_named(name, *v);
        }
        r
    }

    /// Adds `v` to the named quantity, saturating at the `i64` bounds.
    #[inline]
    fn add_named(&mut self, name: &str, v: i64) {
        if let Some(q) = self.slot(name) {
            *q = q.saturating_add(v);
        }
    }

    /// Sets the named quantity.
    #[inline]
    pub fn set_named(&mut self, name: &str, v: i64) {
        if let Some(q) = self.slot(name) {
            *q = v;
        }
    }

    /// The named quantity, created at 0 if it is an absent extended resource; None for
    /// `pods`, which is tracked separately.
    #[inline]
    fn slot(&mut self, name: &str) -> Option<&mut i64> {
        match name {
            CPU => Some(&mut self.milli_cpu),
            MEMORY => Some(&mut self.memory),
            EPHEMERAL_STORAGE => Some(&mut self.ephemeral_storage),
            PODS => None,
            _ => {
                let i = match self.scalars.binary_search_by(|(n, _)| (**n).cmp(name)) {
                    Ok(i) => i,
                    Err(i) => {
                        self.scalars.insert(i, (name.into(), 0));
                        i
                    }
                };
                Some(&mut self.scalars[i].1)
            }
        }
    }

    /// The quantity of an extended resource (0 when absent).
    #[inline]
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalars
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .map_or(0, |i| self.scalars[i].1)
    }

    /// The quantity of any named resource (0 when absent).
    #[inline]
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            _ => self.scalar(name),
        }
    }

    /// Adds `other` into `self`, each quantity saturating at the `i64` bounds (a pod's
    /// containers asking for more than `i64::MAX` in all ask for `i64::MAX`). Not undone by
    /// subtracting once saturated: sums that shrink again are [`RequestSum`]s.
    #[inline]
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        for (n, v) in &other.scalars {
            self.add_named(n, *v);
        }
    }

    /// Per resource, the larger of the two (init containers run one at a time).
    #[inline]
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (n, v) in &other.scalars {
            if *v > self.scalar(n) {
                self.set_named(n, *v);
            }
        }
    }

    /// Whether every quantity is zero.
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalars.iter().all(|(_, v)| *v == 0)
    }
}

/// `v` clamped to the `i64` range.
#[inline]
pub fn clamp_i64(v: i128) -> i64 {
    v.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

/// A sum of many pods' requests (a node's), exact however large it grows: an `i128` cannot
/// overflow adding `i64` quantities. Reads as a [`Resources`] clamped to `i64`, so the rules
/// compare saturated totals, and removing a pod from a sum that passed `i64::MAX` gives the
/// true remainder (a saturating sum would drop below it, and below zero as pods leave).
///
/// The clamped sum comes first (`repr(C)`): it is what the rules read, on the hot path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RequestSum {
    clamped: Resources,
    milli_cpu: i128,
    memory: i128,
    ephemeral_storage: i128,
    scalars: Vec<(Box<str>, i128)>,
}

impl RequestSum {
    /// Adds a pod's requests.
    #[inline]
    pub fn add(&mut self, r: &Resources) {
        self.apply(r, 1);
    }

    /// Removes a pod's requests (the inverse of [`RequestSum::add`]).
    #[inline]
    pub fn sub(&mut self, r: &Resources) {
        self.apply(r, -1);
    }

    #[inline]
    fn apply(&mut self, r: &Resources, sign: i128) {
        for (exact, v) in [
            (&mut self.milli_cpu, r.milli_cpu),
            (&mut self.memory, r.memory),
            (&mut self.ephemeral_storage, r.ephemeral_storage),
        ] {
            *exact += sign * i128::from(v);
        }
        self.clamped.milli_cpu = clamp_i64(self.milli_cpu);
        self.clamped.memory = clamp_i64(self.memory);
        self.clamped.ephemeral_storage = clamp_i64(self.ephemeral_storage);
        for (name, v) in &r.scalars {
            let exact = match self.scalars.binary_search_by(|(n, _)| n.cmp(name)) {
                Ok(i) => &mut self.scalars[i].1,
                Err(i) => {
                    self.scalars.insert(i, (name.clone(), 0));
                    &mut self.scalars[i].1
                }
            };
            *exact += sign * i128::from(*v);
            let total = clamp_i64(*exact);
            self.clamped.set_named(name, total);
        }
    }
}

#[cfg(feature = "testkit")]
impl RequestSum {
    /// The same sum without extended resources at zero: a sum that went back to zero keeps
    /// its entry (as upstream's NodeInfo does), and every reader takes a missing one as zero,
    /// so two sums over the same pods may differ only in those entries.
    pub fn without_zeros(&self) -> RequestSum {
        let mut sum = self.clone();
        sum.scalars.retain(|(_, v)| *v != 0);
        sum.clamped.scalars.retain(|(_, v)| *v != 0);
        sum
    }
}

/// The sum as the rules read it, each quantity clamped to `i64`.
impl Deref for RequestSum {
    type Target = Resources;

    #[inline]
    fn deref(&self) -> &Resources {
        &self.clamped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clamped_sum_leads() {
        assert_eq!(std::mem::offset_of!(RequestSum, clamped), 0);
        assert_eq!(std::mem::offset_of!(Resources, milli_cpu), 0);
        assert_eq!(std::mem::offset_of!(Resources, ephemeral_storage), 16);
    }

    fn list(items: &[(&str, i64)]) -> ResourceList {
        items.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    }

    #[test]
    fn add_sub_max() {
        let mut a =
            Resources::from_list(&list(&[("cpu", 100), ("example.com/gpu", 1), ("pods", 3)]));
        let b = Resources::from_list(&list(&[
            ("cpu", 50),
            ("memory", 10),
            ("example.com/gpu", 2),
        ]));
        a.add(&b);
        assert_eq!(
            (a.milli_cpu, a.memory, a.scalar("example.com/gpu")),
            (150, 10, 3)
        );
        let mut a =
            Resources::from_list(&list(&[("cpu", 100), ("example.com/gpu", 1), ("pods", 3)]));
        a.max_with(&b);
        assert_eq!(
            (a.milli_cpu, a.memory, a.scalar("example.com/gpu")),
            (100, 10, 2)
        );
        assert_eq!(a.get("pods"), 0);
        assert!(Resources::default().is_zero());
    }

    const EI: i64 = 1 << 60;

    /// Sums past `i64::MAX` saturate in a pod's requests and stay exact in a node's.
    #[test]
    fn sums_beyond_i64() {
        let gpu = "example.com/gpu";
        struct Case {
            name: &'static str,
            pods: Vec<ResourceList>,
            /// A pod's requests summed ([`Resources::add`]): cpu, memory, gpu.
            saturated: (i64, i64, i64),
        }
        let cases = [
            Case {
                name: "two 7Ei of memory",
                pods: vec![list(&[("memory", 7 * EI)]), list(&[("memory", 7 * EI)])],
                saturated: (0, i64::MAX, 0),
            },
            Case {
                name: "i64::MAX cpu twice",
                pods: vec![list(&[("cpu", i64::MAX)]), list(&[("cpu", i64::MAX)])],
                saturated: (i64::MAX, 0, 0),
            },
            Case {
                name: "an extended resource one past i64::MAX",
                pods: vec![list(&[(gpu, i64::MAX)]), list(&[(gpu, 1)])],
                saturated: (0, 0, i64::MAX),
            },
            Case {
                name: "small sums are exact",
                pods: vec![list(&[("cpu", 5), (gpu, 2)]), list(&[("cpu", 7), (gpu, 1)])],
                saturated: (12, 0, 3),
            },
        ];
        for c in cases {
            let requests: Vec<Resources> = c.pods.iter().map(|p| Resources::from_list(p)).collect();
            let mut sum = Resources::default();
            for r in &requests {
                sum.add(r);
            }
            let read = |r: &Resources| (r.milli_cpu, r.memory, r.scalar(gpu));
            assert_eq!(read(&sum), c.saturated, "{}: Resources::add", c.name);
            // A node's sum reads the same, and taking the pods off again gives back each
            // remainder exactly, down to zero.
            let mut node = RequestSum::default();
            for r in &requests {
                node.add(r);
            }
            assert_eq!(read(&node), c.saturated, "{}: RequestSum", c.name);
            node.sub(&requests[1]);
            assert_eq!(read(&node), read(&requests[0]), "{}: one pod left", c.name);
            node.sub(&requests[0]);
            assert_eq!(read(&node), (0, 0, 0), "{}: none left", c.name);
        }
    }
}
