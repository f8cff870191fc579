//! Select: the node with the highest total (upstream's selectHost).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::framework::highest;

/// Which of `ties` tied nodes (in visiting order) to take: one uniform draw, none when
/// one node has the best total.
pub(super) fn draw(rng: &mut ChaCha8Rng, ties: usize) -> usize {
    if ties > 1 {
        rng.random_range(0..ties)
    } else {
        0
    }
}

/// Index of the highest total; ties broken uniformly at random, as upstream's selectHost
/// (which samples a reservoir as it goes). One draw among the ties, counted first, picks
/// the same distribution at a fraction of the cost: nodes of a fresh cluster often all tie.
pub(super) fn select_best(rng: &mut ChaCha8Rng, totals: &[i64]) -> usize {
    let Some(best) = highest(totals) else {
        return 0;
    };
    let ties = totals.iter().filter(|t| **t == best).count();
    let pick = draw(rng, ties);
    totals
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == best)
        .nth(pick)
        .map_or(0, |(i, _)| i)
}
