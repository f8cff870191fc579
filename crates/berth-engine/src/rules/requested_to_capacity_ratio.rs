//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, ScorePrep, ScoreRule};
use berth_policy::{ResourceWeight, ShapePoint};
pub struct RequestedToCapacityRatio;
impl RequestedToCapacityRatio { pub fn new(_: &[ShapePoint], _: &[ResourceWeight]) -> Self { RequestedToCapacityRatio } }
impl ScoreRule for RequestedToCapacityRatio { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
