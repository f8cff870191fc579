//! Cost-aware score: prefers cheaper nodes, and spot capacity over on-demand, from node
//! labels. A node's cost is its hourly price label (or `defaultPrice`), times `spotFactor`
//! on spot nodes; the host normalises in reverse so the cheapest node scores highest.
//!
//! Config (all optional): `{"priceLabel": "berth.dev/hourly-price",
//! "capacityTypeLabel": "karpenter.sh/capacity-type", "spotValue": "spot",
//! "spotFactor": 0.7, "defaultPrice": 1.0}`.

use std::collections::HashMap;

use berth_plugin::{Nodes, Normalize, Pod, Score, Symbol, score_plugin};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    price_label: String,
    capacity_type_label: String,
    spot_value: String,
    spot_factor: f64,
    default_price: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            price_label: "berth.dev/hourly-price".into(),
            capacity_type_label: "karpenter.sh/capacity-type".into(),
            spot_value: "spot".into(),
            spot_factor: 0.7,
            default_price: 1.0,
        }
    }
}

struct CostAware {
    config: Config,
    prices: Vec<u32>,
    capacity: Vec<u32>,
}

impl Score for CostAware {
    type Config = Config;

    fn new(config: Config) -> Result<Self, String> {
        for (field, value) in [
            ("spotFactor", config.spot_factor),
            ("defaultPrice", config.default_price),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!(
                    "config.{field}: expected a non-negative number, got {value}"
                ));
            }
        }
        Ok(CostAware {
            config,
            prices: Vec::new(),
            capacity: Vec::new(),
        })
    }

    fn normalize(&self) -> Normalize {
        Normalize::ReduceReverse
    }

    fn score(&mut self, _pod: &Pod, nodes: &Nodes, scores: &mut [i64]) -> Result<(), String> {
        let c = &self.config;
        nodes.label_column(Symbol::of(&c.price_label), &mut self.prices);
        nodes.label_column(Symbol::of(&c.capacity_type_label), &mut self.capacity);
        let spot = Symbol::of(&c.spot_value).map_or(0, Symbol::raw);
        // Few distinct prices exist: parse each once per call.
        let mut parsed: HashMap<u32, f64> = HashMap::new();
        for (i, score) in scores.iter_mut().enumerate() {
            let price = match self.prices[i] {
                0 => c.default_price,
                id => *parsed.entry(id).or_insert_with(|| {
                    Symbol::from_raw(id)
                        .and_then(|s| s.text().parse::<f64>().ok())
                        .filter(|p| p.is_finite() && *p >= 0.0)
                        .unwrap_or(c.default_price)
                }),
            };
            let factor = if spot != 0 && self.capacity[i] == spot {
                c.spot_factor
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

#[cfg(test)]
mod tests {
    use super::*;
    use berth_plugin::testing::{CallError, FakeNode, FakePod, TestHost};

    const PRICE: &str = "berth.dev/hourly-price";
    const CAPACITY: &str = "karpenter.sh/capacity-type";

    fn node(name: &str, price: Option<&str>, capacity: Option<&str>) -> FakeNode {
        let mut n = FakeNode::new(name);
        if let Some(p) = price {
            n = n.label(PRICE, p);
        }
        if let Some(c) = capacity {
            n = n.label(CAPACITY, c);
        }
        n
    }

    #[test]
    fn raw_cost_per_node() {
        // (node, price label, capacity label, raw score in micro-dollars, with defaultPrice 2)
        let cases = [
            ("on-demand", Some("1.5"), Some("on-demand"), 1_500_000),
            ("spot", Some("1.5"), Some("spot"), 1_050_000),
            ("unpriced", None, None, 2_000_000),
            ("unpriced-spot", None, Some("spot"), 1_400_000),
            ("garbage-price", Some("cheap"), None, 2_000_000),
            ("negative-price", Some("-1"), None, 2_000_000),
            ("free", Some("0"), None, 0),
        ];
        let host = TestHost::new()
            .config(r#"{"defaultPrice": 2}"#)
            .nodes(cases.iter().map(|(n, p, c, _)| node(n, *p, *c)));
        let result = host.score::<CostAware>(&FakePod::new("p")).expect("score");
        assert_eq!(result.normalize, Normalize::ReduceReverse);
        for (name, _, _, want) in cases {
            assert_eq!(result.raw(name), Some(want), "{name}");
        }
    }

    #[test]
    fn cheapest_node_scores_highest() {
        let host = TestHost::new().nodes([
            node("expensive", Some("4"), None),
            node("cheap-spot", Some("2"), Some("spot")),
            node("mid", Some("2"), None),
        ]);
        for chunk in [1, 2, 3] {
            let result = host
                .clone()
                .chunk_size(chunk)
                .score::<CostAware>(&FakePod::new("p"))
                .expect("score");
            assert_eq!(
                result.normalized(),
                [
                    ("expensive".to_string(), 0),
                    ("cheap-spot".to_string(), 65),
                    ("mid".to_string(), 50)
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn custom_labels_and_spot_value() {
        let host = TestHost::new()
            .config(r#"{"priceLabel": "price", "capacityTypeLabel": "kind", "spotValue": "preemptible", "spotFactor": 0.5}"#)
            .nodes([
                FakeNode::new("a").label("price", "3").label("kind", "preemptible"),
                FakeNode::new("b").label("price", "3").label("kind", "spot"),
            ]);
        let result = host.score::<CostAware>(&FakePod::new("p")).expect("score");
        assert_eq!(result.raw("a"), Some(1_500_000));
        assert_eq!(result.raw("b"), Some(3_000_000));
    }

    #[test]
    fn bad_config_is_rejected_naming_the_field() {
        let cases = [
            (
                r#"{"spotFactor": -1}"#,
                "config.spotFactor: expected a non-negative number, got -1",
            ),
            (
                r#"{"defaultPrice": "2"}"#,
                "config.defaultPrice: invalid type: string \"2\", expected f64",
            ),
            (
                r#"{"priceLabel": null}"#,
                "config.priceLabel: invalid type: null, expected a string",
            ),
            (
                r#"{"spot": 1}"#,
                "config.spot: unknown field `spot`, expected one of `priceLabel`, `capacityTypeLabel`, `spotValue`, `spotFactor`, `defaultPrice`",
            ),
        ];
        for (config, want) in cases {
            let got = TestHost::new()
                .config(config)
                .score_instance::<CostAware>()
                .err();
            assert_eq!(got, Some(CallError::Failed(want.into())), "{config}");
        }
    }
}
