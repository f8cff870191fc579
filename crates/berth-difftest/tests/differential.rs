//! Berth against the real kube-scheduler v1.22.17 on seeded random clusters and policies,
//! and against kube-scheduler v1.36.3 (default profile) on clusters using the fields v1.22
//! never knew (`sample_v136`, `long_v136`; `BERTH_DIFFTEST_V136_SEEDS=FROM..TO` replaces
//! their seeds)
//! (see the crate docs and docs/fidelity.md). Needs the reference scheduler:
//! `scripts/control-plane.sh --with-reference-scheduler`.
//!
//! The bounded sample (a few minutes):
//!   cargo test -p berth-difftest --test differential -- --ignored --nocapture sample
//! The long run (its figures are in the README):
//!   cargo test -p berth-difftest --test differential -- --ignored --nocapture long
//! Each run has random scenarios and preemption scenarios (nodes full of pods of several
//! priorities, PodDisruptionBudgets, preemptors). `BERTH_DIFFTEST_SEEDS=FROM..TO` and
//! `BERTH_DIFFTEST_PREEMPTION_SEEDS=FROM..TO` replace either run's seeds of each kind (to
//! reproduce one preemption seed: `BERTH_DIFFTEST_SEEDS=0..0
//! BERTH_DIFFTEST_PREEMPTION_SEEDS=17..18`); `BERTH_DIFFTEST_OUT=DIR` writes each
//! disagreement's policy and cluster file for `berth simulate --policy P --cluster C
//! --explain`.

use std::ops::Range;
use std::time::Duration;

use berth_difftest::v136::{self, V136Options};
use berth_difftest::{DefaultPodTopologySpread, RunOptions, run};

fn seeds(variable: &str, default: Range<u64>) -> Vec<u64> {
    let Ok(text) = std::env::var(variable) else {
        return default.collect();
    };
    let parsed = text
        .split_once("..")
        .and_then(|(a, b)| Some(a.trim().parse().ok()?..b.trim().parse().ok()?));
    match parsed {
        Some(range) => range.collect(),
        None => panic!("{variable}={text:?}: expected FROM..TO, e.g. 0..40"),
    }
}

async fn run_and_check(random: Range<u64>, preempting: Range<u64>, lifetime: Duration) {
    let options = RunOptions {
        seeds: seeds("BERTH_DIFFTEST_SEEDS", random),
        preemption_seeds: seeds("BERTH_DIFFTEST_PREEMPTION_SEEDS", preempting),
        gates: DefaultPodTopologySpread::BOTH.to_vec(),
        max_lifetime: lifetime,
    };
    let report = run(&options).await.expect("the differential run failed");
    println!("{report}");
    assert!(
        report.all_agree(),
        "Berth disagrees with kube-scheduler v1.22.17:\n{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample() {
    run_and_check(0..12, 0..4, Duration::from_secs(15 * 60)).await;
}

#[ignore = "long run (tens of minutes); its figures are in docs/fidelity.md"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long() {
    run_and_check(1000..1100, 1000..1060, Duration::from_secs(3 * 60 * 60)).await;
}

/// Against kube-scheduler v1.36.3 (default profile) on clusters using the fields v1.22
/// never knew; see `berth_difftest::v136` and docs/fidelity.md.
async fn run_and_check_v136(seeds_default: Range<u64>, lifetime: Duration) {
    let options = V136Options {
        seeds: seeds("BERTH_DIFFTEST_V136_SEEDS", seeds_default),
        max_lifetime: lifetime,
    };
    let report = v136::run(&options)
        .await
        .expect("the v1.36 differential run failed");
    println!("{report}");
    assert!(
        report.all_agree(),
        "Berth disagrees with kube-scheduler v1.36.3:\n{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_v136() {
    run_and_check_v136(0..30, Duration::from_secs(15 * 60)).await;
}

#[ignore = "long run (tens of minutes); its figures are in docs/fidelity.md"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_v136() {
    run_and_check_v136(1000..1300, Duration::from_secs(45 * 60)).await;
}
