//! Cost-aware score: prefers cheaper nodes, and spot capacity over on-demand, from node
//! labels. A node's cost is its hourly price label (or `defaultPrice`), times `spotFactor`
//! on spot nodes; the host normalises in reverse so the cheapest node scores highest.
//!
//! Config (all optional): `{"priceLabel": "berth.dev/hourly-price",
//! "capacityTypeLabel": "karpenter.sh/capacity-type", "spotValue": "spot",
//! "spotFactor": 0.7, "defaultPrice": 1.0}`.

use std::collections::HashMap;

use berth_plugin::{Nodes, Normalize, Pod, Score, Symbol, score_plugin};

struct CostAware {
    price_label: String,
    capacity_label: String,
    spot_value: String,
    spot_factor: f64,
    default_price: f64,
    prices: Vec<u32>,
    capacity: Vec<u32>,
}

impl Score for CostAware {
    fn new(config: &str) -> Result<Self, String> {
        let config: serde_json::Value =
            serde_json::from_str(config).map_err(|e| format!("config: {e}"))?;
        let text = |key: &str, default: &str| config[key].as_str().unwrap_or(default).to_owned();
        let number = |key: &str, default: f64| match &config[key] {
            serde_json::Value::Null => Ok(default),
            v => v
                .as_f64()
                .filter(|x| *x >= 0.0)
                .ok_or(format!("config.{key}: expected a non-negative number")),
        };
        Ok(CostAware {
            price_label: text("priceLabel", "berth.dev/hourly-price"),
            capacity_label: text("capacityTypeLabel", "karpenter.sh/capacity-type"),
            spot_value: text("spotValue", "spot"),
            spot_factor: number("spotFactor", 0.7)?,
            default_price: number("defaultPrice", 1.0)?,
            prices: Vec::new(),
            capacity: Vec::new(),
        })
    }

    fn normalize(&self) -> Normalize {
        Normalize::ReduceReverse
    }

    fn score(&mut self, _pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String> {
        nodes.label_column(Symbol::of(&self.price_label), &mut self.prices);
        nodes.label_column(Symbol::of(&self.capacity_label), &mut self.capacity);
        let spot = Symbol::of(&self.spot_value).map_or(0, Symbol::raw);
        // Few distinct prices exist: parse each once per call.
        let mut parsed: HashMap<u32, f64> = HashMap::new();
        for (i, score) in scores.iter_mut().enumerate() {
            let price = match self.prices[i] {
                0 => self.default_price,
                id => *parsed.entry(id).or_insert_with(|| {
                    Symbol::from_raw(id)
                        .and_then(|s| s.text().parse::<f64>().ok())
                        .filter(|p| p.is_finite() && *p >= 0.0)
                        .unwrap_or(self.default_price)
                }),
            };
            let factor = if spot != 0 && self.capacity[i] == spot {
                self.spot_factor
            } else {
                1.0
            };
            // Micro-dollars per hour: integers keep the host's normalisation exact.
            *score = (price * factor * 1_000_000.0).round() as i64;
        }
        Ok(())
    }
}

score_plugin!(CostAware);
