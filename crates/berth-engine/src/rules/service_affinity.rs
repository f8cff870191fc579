//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, FilterPrep, FilterRule};
pub struct CheckServiceAffinity;
impl CheckServiceAffinity { pub fn new(_: Vec<String>) -> Self { CheckServiceAffinity } }
impl FilterRule for CheckServiceAffinity { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
