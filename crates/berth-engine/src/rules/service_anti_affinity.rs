//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, ScorePrep, ScoreRule};
pub struct ServiceAntiAffinity;
impl ServiceAntiAffinity { pub fn new(_: String) -> Self { ServiceAntiAffinity } }
impl ScoreRule for ServiceAntiAffinity { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> ScorePrep<'a> { todo!("placeholder") } }
