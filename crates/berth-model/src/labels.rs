//! Interned labels and compiled label selectors.
//!
//! Every label key and value the engine sees is interned once into a [`Sym`], so matching a
//! selector against a node or pod compares integers instead of strings. Selectors are compiled
//! against the interner when a pod or object enters the cluster, never on the scheduling path.
//!
//! Interning only adds, so in a long-running scheduler the strings of objects long gone
//! (each rollout's `pod-template-hash`, each Job's UID) would pile up. The cluster compacts
//! its interner now and then (`Cluster::compact_interner`): every holder of symbols is
//! visited through [`HoldsSymbols`], once to mark what is live and once to renumber it.

use lasso::{Key, Rodeo, Spur};

/// An interned string: a label key or value, a namespace, a topology value.
pub type Sym = Spur;

/// The cluster-wide string interner. A symbol stays valid until the cluster compacts the
/// interner, which renumbers every symbol the cluster and the holders it is given keep.
#[derive(Debug, Default)]
pub struct Interner(Rodeo);

/// Whatever keeps symbols of the cluster's interner: a compaction visits each of them to
/// mark it live, then again to renumber it.
pub trait HoldsSymbols {
    /// Calls `f` on every symbol held; `f` may replace it.
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym));
}

impl Interner {
    /// Interns `s`, returning its symbol.
    pub fn intern(&mut self, s: &str) -> Sym {
        self.0.get_or_intern(s)
    }

    /// The symbol of `s` if it is interned; a string no object uses matches no label.
    #[inline]
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.0.get(s)
    }

    /// The text of a symbol.
    #[inline]
    pub fn resolve(&self, sym: Sym) -> &str {
        self.0.resolve(&sym)
    }

    /// The text of a symbol that may not come from this interner (a plugin hands symbols
    /// back): None instead of a panic.
    #[inline]
    pub fn try_resolve(&self, sym: Sym) -> Option<&str> {
        self.0.try_resolve(&sym)
    }

    /// How many strings are interned.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The dense index of a symbol of this interner, for tables indexed by symbol.
    #[inline]
    pub fn index(sym: Sym) -> usize {
        sym.into_usize()
    }

    /// Keeps only the strings whose symbols `live` marks (indexed by [`Interner::index`]),
    /// renumbered densely in their old order, so lists sorted by symbol stay sorted. Returns
    /// each old symbol's new one (None for a dropped string).
    pub fn retain(&mut self, live: &[bool]) -> Vec<Option<Sym>> {
        let mut kept = Rodeo::new();
        let renumbered = self
            .0
            .iter()
            .map(|(sym, text)| {
                live.get(sym.into_usize())
                    .copied()
                    .unwrap_or(false)
                    .then(|| kept.get_or_intern(text))
            })
            .collect();
        self.0 = kept;
        renumbered
    }

    /// Whether nothing is interned.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses a node selector written as `key=value,key2=value2` (spaces around items allowed),
/// as namespace annotations and the policy's default namespace selector give it. Empty means
/// no restriction.
pub fn parse_node_selector(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.contains('=') => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(format!(
                "invalid node selector item {item:?} in {text:?} (expected comma-separated key=value pairs)"
            )),
        })
        .collect()
}

/// A label set, sorted by key for binary search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(Box<[(Sym, Sym)]>);

impl Labels {
    /// Interns and sorts a list of key/value pairs.
    pub fn intern<'a>(
        interner: &mut Interner,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let mut v: Vec<(Sym, Sym)> = pairs
            .into_iter()
            .map(|(k, val)| (interner.intern(k), interner.intern(val)))
            .collect();
        v.sort_unstable_by_key(|(k, _)| *k);
        v.dedup_by_key(|(k, _)| *k);
        Labels(v.into_boxed_slice())
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: Sym) -> Option<Sym> {
        self.0
            .binary_search_by_key(&key, |(k, _)| *k)
            .ok()
            .map(|i| self.0[i].1)
    }

    /// Whether `key` is present.
    #[inline]
    pub fn has(&self, key: Sym) -> bool {
        self.get(key).is_some()
    }

    /// The key/value pairs, sorted by key symbol.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (Sym, Sym)> + '_ {
        self.0.iter().copied()
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl HoldsSymbols for Labels {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for (k, v) in self.0.iter_mut() {
            f(k);
            f(v);
        }
    }
}

/// The operator of one selector requirement (label selectors and node selector terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// The label's value is one of the values.
    In,
    /// The label is absent or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label's value, as an integer, is greater than the single value (node affinity only).
    Gt,
    /// The label's value, as an integer, is less than the single value (node affinity only).
    Lt,
}

/// One requirement of a selector, as written in an object (strings, not yet interned).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values (empty for Exists / DoesNotExist).
    pub values: Vec<String>,
}

/// A label selector as written in an object: requirements ANDed together. Empty matches all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    /// The requirements; `matchLabels` entries become `In` requirements with one value.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// A selector requiring each key to equal its value (Service and RC selectors).
    pub fn from_map<'a>(pairs: impl IntoIterator<Item = (&'a String, &'a String)>) -> Self {
        LabelSelector {
            requirements: pairs
                .into_iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    operator: Operator::In,
                    values: vec![v.clone()],
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    In(Box<[Sym]>),
    NotIn(Box<[Sym]>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
    /// A Gt/Lt requirement whose bound is not an integer: it matches no label.
    Never,
}

impl Test {
    #[inline]
    fn holds(&self, value: Option<Sym>, interner: Option<&Interner>) -> bool {
        let number = || {
            value
                .zip(interner)
                .and_then(|(v, i)| i.resolve(v).parse::<i64>().ok())
        };
        match self {
            Test::In(vals) => value.is_some_and(|v| vals.contains(&v)),
            Test::NotIn(vals) => value.is_none_or(|v| !vals.contains(&v)),
            Test::Exists => value.is_some(),
            Test::DoesNotExist => value.is_none(),
            Test::Gt(bound) => number().is_some_and(|n| n > *bound),
            Test::Lt(bound) => number().is_some_and(|n| n < *bound),
            Test::Never => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct CompiledReq {
    key: Sym,
    test: Test,
}

/// A selector compiled against the interner: requirements ANDed. Empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    reqs: Box<[CompiledReq]>,
}

impl HoldsSymbols for Selector {
    fn visit_symbols(&mut self, f: &mut dyn FnMut(&mut Sym)) {
        for r in self.reqs.iter_mut() {
            f(&mut r.key);
            if let Test::In(values) | Test::NotIn(values) = &mut r.test {
                values.iter_mut().for_each(&mut *f);
            }
        }
    }
}

impl Selector {
    /// Compiles a selector, interning every key and value it names.
    pub fn compile(interner: &mut Interner, sel: &LabelSelector) -> Self {
        Self::compile_reqs(interner, &sel.requirements)
    }

    /// Compiles a list of requirements (ANDed).
    pub fn compile_reqs(interner: &mut Interner, reqs: &[Requirement]) -> Self {
        let reqs = reqs
            .iter()
            .map(|r| {
                let syms: Box<[Sym]> = r.values.iter().map(|v| interner.intern(v)).collect();
                let int_bound = || {
                    if r.values.len() == 1 {
                        r.values[0].parse::<i64>().ok()
                    } else {
                        None
                    }
                };
                let test = match r.operator {
                    Operator::In => Test::In(syms),
                    Operator::NotIn => Test::NotIn(syms),
                    Operator::Exists => Test::Exists,
                    Operator::DoesNotExist => Test::DoesNotExist,
                    Operator::Gt => int_bound().map_or(Test::Never, Test::Gt),
                    Operator::Lt => int_bound().map_or(Test::Never, Test::Lt),
                };
                CompiledReq {
                    key: interner.intern(&r.key),
                    test,
                }
            })
            .collect();
        Selector { reqs }
    }

    /// A selector requiring each key to have the given value.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Sym, Sym)>) -> Self {
        Selector {
            reqs: pairs
                .into_iter()
                .map(|(key, v)| CompiledReq {
                    key,
                    test: Test::In(Box::new([v])),
                })
                .collect(),
        }
    }

    /// The key and values of the first `In` requirement: pods matching the selector must carry
    /// one of these labels, which lets the cluster narrow candidates through its label index.
    #[inline]
    pub fn index_keys(&self) -> Option<(Sym, &[Sym])> {
        self.reqs.iter().find_map(|r| match &r.test {
            Test::In(vals) => Some((r.key, &vals[..])),
            _ => None,
        })
    }

    /// Whether carrying one of [`Selector::index_keys`]' labels is the whole selector (a
    /// single `In` requirement): then every pod the label index gives for it matches.
    #[inline]
    pub fn indexed_exactly(&self) -> bool {
        matches!(
            &self.reqs[..],
            [CompiledReq {
                test: Test::In(_),
                ..
            }]
        )
    }

    /// Whether the selector has no requirement (and so matches every label set).
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Whether `labels` satisfy every requirement. Gt/Lt requirements (node affinity only)
    /// never match here; use [`Selector::matches_with_numbers`] for those.
    #[inline]
    pub fn matches(&self, labels: &Labels) -> bool {
        self.reqs
            .iter()
            .all(|r| r.test.holds(labels.get(r.key), None))
    }

    /// Like [`Selector::matches`], also evaluating Gt/Lt by parsing the label value as an integer.
    #[inline]
    pub fn matches_with_numbers(&self, labels: &Labels, interner: &Interner) -> bool {
        self.reqs
            .iter()
            .all(|r| r.test.holds(labels.get(r.key), Some(interner)))
    }

    /// Whether the selector uses Gt/Lt, which needs [`Selector::matches_with_numbers`].
    #[inline]
    pub fn needs_numbers(&self) -> bool {
        self.reqs
            .iter()
            .any(|r| matches!(r.test, Test::Gt(_) | Test::Lt(_)))
    }
}
