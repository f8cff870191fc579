//! PLACEHOLDER: replaced by the helper that owns this rule.
use crate::framework::{CycleContext, FilterPrep, FilterRule};
pub struct MaxVolumeCount;
impl MaxVolumeCount { pub fn ebs() -> Self { MaxVolumeCount } pub fn gce_pd() -> Self { MaxVolumeCount } pub fn azure_disk() -> Self { MaxVolumeCount } pub fn cinder() -> Self { MaxVolumeCount } }
impl FilterRule for MaxVolumeCount { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
pub struct MaxCsiVolumeCount;
impl FilterRule for MaxCsiVolumeCount { fn prepare<'a>(&'a self, _: CycleContext<'a>) -> FilterPrep<'a> { todo!("placeholder") } }
