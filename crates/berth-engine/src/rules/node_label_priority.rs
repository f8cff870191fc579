//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, ScorePrep, ScoreRule};
pub struct NodeLabelPriority;
impl NodeLabelPriority { pub fn new(_: String, _: bool) -> Self { NodeLabelPriority } }
impl ScoreRule for NodeLabelPriority { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
