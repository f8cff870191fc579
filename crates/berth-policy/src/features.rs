//! kube-scheduler v1.22's feature gates that change what a Policy means, set as upstream sets
//! them (`--feature-gates=Name=true|false,...`), with v1.22's defaults.

use std::fmt;

/// The gates Berth honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `DefaultPodTopologySpread` (beta, on by default in v1.22): SelectorSpreadPriority is
    /// served by PodTopologySpread with the system default constraints instead of
    /// SelectorSpread.
    pub default_pod_topology_spread: bool,
}

impl Default for FeatureGates {
    /// v1.22's defaults.
    fn default() -> Self {
        FeatureGates {
            default_pod_topology_spread: true,
        }
    }
}

/// The gate names accepted.
pub const GATES: &[&str] = &["DefaultPodTopologySpread"];

/// A `--feature-gates` value Berth cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--feature-gates: {0}")]
pub struct FeatureGateError(String);

impl FeatureGates {
    /// Applies a `--feature-gates` value (`Name=true,Other=false`) over v1.22's defaults.
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(FeatureGateError(format!("{item:?} is not Name=true|false")));
            };
            let value = match value.trim() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(FeatureGateError(format!(
                        "{name}: expected true or false, got {other:?}"
                    )));
                }
            };
            match name.trim() {
                "DefaultPodTopologySpread" => gates.default_pod_topology_spread = value,
                other => {
                    return Err(FeatureGateError(format!(
                        "unknown gate {other:?}; Berth honours: {}",
                        GATES.join(", ")
                    )));
                }
            }
        }
        Ok(gates)
    }
}

impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DefaultPodTopologySpread={}",
            self.default_pod_topology_spread
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let on = FeatureGates::default();
        let off = FeatureGates {
            default_pod_topology_spread: false,
        };
        let cases: &[(&str, Result<FeatureGates, &str>)] = &[
            ("", Ok(on)),
            ("DefaultPodTopologySpread=false", Ok(off)),
            (" DefaultPodTopologySpread = true ,", Ok(on)),
            (
                "DefaultPodTopologySpread=false,DefaultPodTopologySpread=true",
                Ok(on),
            ),
            (
                "DefaultPodTopologySpread",
                Err("--feature-gates: \"DefaultPodTopologySpread\" is not Name=true|false"),
            ),
            (
                "DefaultPodTopologySpread=no",
                Err(
                    "--feature-gates: DefaultPodTopologySpread: expected true or false, got \"no\"",
                ),
            ),
            (
                "PodOverhead=true",
                Err(
                    "--feature-gates: unknown gate \"PodOverhead\"; Berth honours: DefaultPodTopologySpread",
                ),
            ),
        ];
        for (spec, want) in cases {
            let got = FeatureGates::parse(spec).map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{spec:?}");
        }
    }
}
