//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, ScorePrep, ScoreRule};
pub struct MostRequested;
impl ScoreRule for MostRequested { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
