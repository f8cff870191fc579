//! Resource quantities in integer units: milli-CPU, bytes, counts.

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

/// Quantities of the first-class resources plus any extended (scalar) resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

    fn add_named(&mut self, name: &str, v: i64) {
        match name {
            CPU => self.milli_cpu += v,
            MEMORY => self.memory += v,
            EPHEMERAL_STORAGE => self.ephemeral_storage += v,
            PODS => {}
            _ => match self.scalars.binary_search_by(|(n, _)| (**n).cmp(name)) {
                Ok(i) => self.scalars[i].1 += v,
                Err(i) => self.scalars.insert(i, (name.into(), v)),
            },
        }
    }

    /// The quantity of an extended resource (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalars
            .binary_search_by(|(n, _)| (**n).cmp(name))
            .map_or(0, |i| self.scalars[i].1)
    }

    /// The quantity of any named resource (0 when absent).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            _ => self.scalar(name),
        }
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        for (n, v) in &other.scalars {
            self.add_named(n, *v);
        }
    }

    /// Subtracts `other` from `self` (the inverse of [`Resources::add`]).
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        for (n, v) in &other.scalars {
            self.add_named(n, -*v);
        }
    }

    /// Per resource, the larger of the two (init containers run one at a time).
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (n, v) in &other.scalars {
            let cur = self.scalar(n);
            if *v > cur {
                self.add_named(n, *v - cur);
            }
        }
    }

    /// Whether every quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalars.iter().all(|(_, v)| *v == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        a.sub(&b);
        assert_eq!(
            (a.milli_cpu, a.memory, a.scalar("example.com/gpu")),
            (100, 0, 1)
        );
        a.max_with(&b);
        assert_eq!(
            (a.milli_cpu, a.memory, a.scalar("example.com/gpu")),
            (100, 10, 2)
        );
        assert_eq!(a.get("pods"), 0);
        assert!(Resources::default().is_zero());
    }
}
