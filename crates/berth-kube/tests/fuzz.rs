//! Fuzzing with proptest: cluster files (mutated fixtures, arbitrary text, deep nesting) and
//! quantities must give a result or an error, never a panic, a hang or an unbounded
//! allocation. The test command runs a short sample (proptest's default 256 cases each); a
//! longer run is `PROPTEST_CASES=100000 cargo test -p berth-kube --release --test fuzz`.

use berth_kube::quantity;
use berth_kube::{parse_cluster, snapshot};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use proptest::prelude::*;

const LIST: &str = include_str!("fixtures/list.yaml");
const MULTI: &str = include_str!("fixtures/multi.yaml");
const JSON: &str = include_str!("fixtures/nodelist.json");

/// `text` with `cut` characters at `at` replaced by `insert`, on character boundaries.
fn mutate(text: &str, at: usize, cut: usize, insert: &str) -> String {
    let start = (0..=at.min(text.len()))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let end = (start + cut..=text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    format!("{}{insert}{}", &text[..start], &text[end..])
}

/// Reads `text` as a cluster file and, if that works, converts it into a snapshot.
fn read_and_convert(text: &str) {
    if let Ok(objects) = parse_cluster(text, "fuzz.yaml") {
        let _ = snapshot(&objects);
    }
}

proptest! {
    #[test]
    fn arbitrary_text_does_not_panic(text in "\\PC{0,300}") {
        read_and_convert(&text);
    }

    #[test]
    fn mutated_cluster_files_do_not_panic(
        which in 0usize..3,
        at in 0usize..4000,
        cut in 0usize..12,
        insert in "[-0-9a-zA-Z{}\\[\\]\"':.,#&*!|> \n]{0,6}",
    ) {
        let base = [LIST, MULTI, JSON][which];
        read_and_convert(&mutate(base, at % base.len(), cut, &insert));
    }

    #[test]
    fn mutated_quantities_do_not_panic(text in "[-+]?[0-9]{0,30}(\\.[0-9]{0,30})?([eE][-+]?[0-9]{0,25}|[numkMGTPE]i?)?") {
        let q = Quantity(text);
        let _ = quantity::value(&q);
        let _ = quantity::cpu_millis(&q);
    }

    #[test]
    fn arbitrary_quantities_do_not_panic(text in "\\PC{0,40}") {
        let q = Quantity(text);
        let _ = quantity::value(&q);
        let _ = quantity::cpu_millis(&q);
    }

    /// Whole numbers round-trip exactly, with and without a suffix.
    #[test]
    fn integers_round_trip(n in 0i64..(1 << 40), suffix in 0usize..4) {
        let (text, want) = match suffix {
            0 => (n.to_string(), n),
            1 => (format!("{n}Ki"), n << 10),
            2 => (format!("{n}k"), n * 1000),
            _ => (format!("{n}000m"), n),
        };
        prop_assert_eq!(quantity::value(&Quantity(text)), Ok(want));
    }
}

/// Nesting far beyond any real object is refused up front, whatever the syntax: flow YAML,
/// JSON, and brackets that a parser would first have to decide are inside strings.
#[test]
fn deep_nesting_is_refused_up_front() {
    let depth = 100_000;
    let cases = [
        (
            "json",
            format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
        ),
        (
            "yaml",
            format!("items: {}1{}", "[".repeat(depth), "]".repeat(depth)),
        ),
        (
            "mapping",
            format!("a: {}1{}", "{b: ".repeat(depth), "}".repeat(depth)),
        ),
    ];
    for (what, text) in cases {
        let error = parse_cluster(&text, "deep.yaml")
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("nested deeper than 256 levels of [ and {"),
            "{what}: {error}"
        );
    }
}
