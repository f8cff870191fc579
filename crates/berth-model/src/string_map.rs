//! [`StringMap`]: labels, annotations and node selectors, a few string pairs each.

use std::fmt;

/// A map of strings kept as a sorted vector of pairs, with the part of `BTreeMap`'s interface
/// the model's users call. Most objects carry one to a dozen labels; a `BTreeMap` allocates a
/// node with room for eleven pairs (some 540 bytes) even for one, which at 50,000 bound pods
/// was a sixth of the scheduler's memory. Iteration is in key order, as a `BTreeMap`'s.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StringMap {
    /// Sorted by key, keys unique.
    pairs: Vec<(String, String)>,
}

impl StringMap {
    /// An empty map (allocates nothing).
    pub const fn new() -> Self {
        StringMap { pairs: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.pairs.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&String> {
        self.find(key).ok().map(|i| &self.pairs[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`, returning the value it replaced.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.pairs[i].1, value)),
            Err(i) => {
                self.pairs.insert(i, (key, value));
                None
            }
        }
    }

    pub fn clear(&mut self) {
        self.pairs.clear();
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        self.find(key).ok().map(|i| self.pairs.remove(i).1)
    }

    /// The pairs in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.pairs.iter(),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.pairs.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &String> + ExactSizeIterator {
        self.pairs.iter().map(|(_, v)| v)
    }
}

/// The pairs of a [`StringMap`] in key order, as references (as `BTreeMap::iter`).
#[derive(Clone)]
pub struct Iter<'a> {
    inner: std::slice::Iter<'a, (String, String)>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a String);

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a StringMap {
    type Item = (&'a String, &'a String);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for StringMap {
    type Item = (String, String);
    type IntoIter = std::vec::IntoIter<(String, String)>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.into_iter()
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for StringMap {
    /// As `BTreeMap`'s: a key given twice keeps its last value.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut pairs: Vec<(String, String)> = iter
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // Stable, so equal keys stay in the order given; the last of each run is kept.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(String, String)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match kept.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => kept.push(pair),
            }
        }
        StringMap { pairs: kept }
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for StringMap {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.into(), v.into());
        }
    }
}

impl<K: Into<String>, V: Into<String>, const N: usize> From<[(K, V); N]> for StringMap {
    fn from(pairs: [(K, V); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl std::ops::Index<&str> for StringMap {
    type Output = String;

    /// The value of `key`; panics when it is absent, as `BTreeMap`'s index does (for tests
    /// and keys known present).
    fn index(&self, key: &str) -> &String {
        self.get(key)
            .unwrap_or_else(|| panic!("no key {key:?} in the map"))
    }
}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::StringMap;

    #[test]
    fn keeps_pairs_sorted_and_unique_as_a_btreemap() {
        let steps: &[(&str, &str)] = &[
            ("zone", "a"),
            ("app", "web"),
            ("tier", "1"),
            ("app", "db"),
            ("", "empty key"),
            ("zone", "b"),
        ];
        let mut map = StringMap::new();
        let mut reference = std::collections::BTreeMap::new();
        for (k, v) in steps {
            assert_eq!(
                map.insert(k.to_string(), v.to_string()),
                reference.insert(k.to_string(), v.to_string())
            );
            assert!(map.iter().eq(reference.iter()));
        }
        assert_eq!(map.get("app"), Some(&"db".to_string()));
        assert_eq!(map.get("missing"), None);
        assert!(map.contains_key(""));
        assert_eq!(map.remove("tier"), reference.remove("tier"));
        assert_eq!(map.remove("tier"), None);
        assert!(map.keys().eq(reference.keys()));
        assert!(map.values().eq(reference.values()));
        assert_eq!(map.len(), reference.len());
    }

    #[test]
    fn collecting_keeps_the_last_value_of_a_repeated_key() {
        let map: StringMap = [("b", "1"), ("a", "2"), ("b", "3"), ("b", "4")].into();
        let reference: std::collections::BTreeMap<_, _> =
            [("b", "1"), ("a", "2"), ("b", "3"), ("b", "4")].into();
        assert!(
            map.iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .eq(reference.into_iter())
        );
        assert_eq!(format!("{map:?}"), r#"{"a": "2", "b": "4"}"#);
    }
}
