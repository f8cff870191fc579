//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, FilterPrep, FilterRule};
pub struct MatchInterPodAffinity;
impl FilterRule for MatchInterPodAffinity { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
