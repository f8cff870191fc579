//! EqualPriority: every node scores 1 (a tie-breaker-only policy; dropped upstream in v1.18).

use crate::framework::{CycleContext, ScorePrep, ScoreRule};

/// The rule.
pub struct EqualPriority;

impl ScoreRule for EqualPriority {
    fn prepare<'a>(&'a self, _ctx: CycleContext<'a>) -> ScorePrep<'a> {
        ScorePrep::Constant(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn every_node_scores_one() {
        let mut cl = cluster(vec![node("a").build(), node("b").cpu(0).build()], vec![]);
        let got: Vec<i64> = run_score(&EqualPriority, &mut cl, pod("p").build())
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(got, vec![1, 1]);
    }
}
