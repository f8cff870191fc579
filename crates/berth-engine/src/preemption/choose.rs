//! Upstream's choice among preemption candidates.

use crate::cluster::{Cluster, PodId};
use crate::diagnosis::Candidate;

use super::{LostOn, start_time};

/// Upstream's pickOneNodeForPreemption over `candidates` (in the order found): for each, why
/// it lost, None for the chosen one. Each step keeps the candidates with the best value;
/// ties go to the next step.
pub(super) fn choose(cluster: &Cluster, candidates: &[Candidate]) -> Vec<Option<LostOn>> {
    let mut lost: Vec<Option<LostOn>> = vec![None; candidates.len()];
    let priority = |p: &PodId| cluster.pod(*p).pod.priority;
    // Lower is better at every step; the start-time step negates to prefer the latest.
    type Key<'k> = &'k dyn Fn(&Candidate) -> i64;
    let steps: [(LostOn, Key<'_>); 5] = [
        (LostOn::PdbViolations, &|c| c.pdb_violations as i64),
        // Upstream takes the first victim's priority (the list is sorted by importance
        // within its two groups).
        (LostOn::HighestPriority, &|c| {
            i64::from(priority(&c.victims[0]))
        }),
        // Shifted by 2^31 so that more victims of negative priority never sum lower.
        (LostOn::SumOfPriorities, &|c| {
            c.victims
                .iter()
                .map(|p| i64::from(priority(p)) + (1 << 31))
                .sum()
        }),
        (LostOn::NumberOfVictims, &|c| c.victims.len() as i64),
        (LostOn::StartTime, &|c| {
            -earliest_start_of_highest(cluster, &c.victims)
        }),
    ];
    for (step, key) in steps {
        let alive: Vec<usize> = (0..candidates.len())
            .filter(|i| lost[*i].is_none())
            .collect();
        if alive.len() == 1 {
            break;
        }
        let best = alive
            .iter()
            .map(|i| key(&candidates[*i]))
            .min()
            .expect("some candidate is alive");
        for i in alive {
            if key(&candidates[i]) != best {
                lost[i] = Some(step);
            }
        }
    }
    let mut first = true;
    for l in lost.iter_mut().filter(|l| l.is_none()) {
        if !first {
            *l = Some(LostOn::Order);
        }
        first = false;
    }
    lost
}

/// Upstream's GetEarliestPodStartTime: the earliest start among the highest-priority victims.
fn earliest_start_of_highest(cluster: &Cluster, victims: &[PodId]) -> i64 {
    let top = victims
        .iter()
        .map(|p| cluster.pod(*p).pod.priority)
        .max()
        .unwrap_or(0);
    victims
        .iter()
        .map(|p| cluster.pod(*p))
        .filter(|p| p.pod.priority == top)
        .map(start_time)
        .min()
        .unwrap_or(i64::MAX)
}
