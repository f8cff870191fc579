//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, FilterPrep, FilterRule, ScorePrep, ScoreRule};
pub struct EvenPodsSpread;
impl FilterRule for EvenPodsSpread { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
pub struct EvenPodsSpreadPriority;
impl ScoreRule for EvenPodsSpreadPriority { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
