//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, ScorePrep, ScoreRule};
pub struct InterPodAffinityPriority;
impl InterPodAffinityPriority { pub fn new(_: i32) -> Self { InterPodAffinityPriority } }
impl ScoreRule for InterPodAffinityPriority { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
