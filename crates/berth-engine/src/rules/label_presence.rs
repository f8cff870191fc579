//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, FilterPrep, FilterRule};
pub struct CheckNodeLabelPresence;
impl CheckNodeLabelPresence { pub fn new(_: Vec<String>, _: bool) -> Self { CheckNodeLabelPresence } }
impl FilterRule for CheckNodeLabelPresence { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
