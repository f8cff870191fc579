//! `simulate --output table`: text for a terminal of 100 columns.
//!
//! Without `--explain`, one row per pod. With it, one block per pod: the scored nodes best
//! first with each one's gap to the chosen node, the priorities that vary between them as
//! columns and those that do not folded into one note (the bundled policy's
//! NodePreferAvoidPodsPriority x10000 adds 1,000,000 to every total), then the rejected nodes
//! grouped by the rule and reason that rejected them.

use berth_engine::simulation::{Outcome, PreemptionReport};
use berth_engine::{Decision, Explanation, NodeExplanation, RejectedBy};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

use super::RuleKinds;

/// The width every table and note is laid out for.
pub(super) const WIDTH: usize = 100;
/// Indent of a pod's details under its heading.
const INDENT: &str = "  ";
/// Node names listed per group of rejected nodes before "and N more".
const NAMES_PER_GROUP: usize = 4;
/// Longest line of a priority's name in a column header, split at its words.
const HEADER_LINE: usize = 16;

/// One row per pod: where it went, or why nowhere.
pub(super) fn summary(outcomes: &[Outcome]) -> String {
    let mut table = new_table(WIDTH);
    table.set_header(["POD", "NODE", "MESSAGE"]);
    for o in outcomes {
        let node = o.node.as_deref().unwrap_or("<none>");
        table.add_row([o.pod.as_str(), node, &message(o)]);
    }
    pad_columns(&mut table);
    format!("{}\n", table.trim_fmt())
}

/// One pod's decision in detail.
pub(super) fn explained(o: &Outcome, rules: &RuleKinds, seed: u64) -> String {
    let mut out = format!("{} -> {}\n", o.pod, o.node.as_deref().unwrap_or("<none>"));
    let message = message(o);
    if !message.is_empty() {
        out.push_str(&wrap(&message, INDENT, INDENT));
    }
    if let Some(p) = &o.preemption {
        out.push_str(&preemption(p));
    }
    if let Some(e) = o.decision.as_ref().and_then(Decision::explanation) {
        out.push_str(&scores(e, o.node.as_deref(), seed));
        out.push_str(&rejected(e, rules));
        if e.not_evaluated > 0 {
            let why = match NotEvaluated::of(e) {
                NotEvaluated::NominatedNode => {
                    "the pod's nominated node was tried first and fits, so no other node was \
                     asked (as kube-scheduler does)"
                }
                NotEvaluated::Sampling => {
                    "enough feasible nodes were found first (--percentage-of-nodes-to-score)"
                }
            };
            out.push_str(&wrap(
                &format!("{} node(s) not evaluated: {why}", e.not_evaluated),
                INDENT,
                INDENT,
            ));
        }
    }
    out
}

/// Why a cycle left nodes unvisited.
pub(super) enum NotEvaluated {
    /// The pod's nominated node (after a preemption, or `status.nominatedNodeName`) was
    /// tried alone first and fits, so the cycle asked no other node (upstream's
    /// evaluateNominatedNode).
    NominatedNode,
    /// Enough feasible nodes were found (`--percentage-of-nodes-to-score`).
    Sampling,
}

impl NotEvaluated {
    /// Sampling never stops before 100 feasible nodes (or all of them, in a smaller
    /// cluster), so a cycle that visited one feasible node and left others is the
    /// nominated-node shortcut.
    pub(super) fn of(e: &Explanation) -> Self {
        if e.not_evaluated > 0 && e.nodes.len() == 1 && e.nodes[0].feasible() {
            NotEvaluated::NominatedNode
        } else {
            NotEvaluated::Sampling
        }
    }

    /// As the JSON and the report name it.
    pub(super) fn key(&self) -> &'static str {
        match self {
            NotEvaluated::NominatedNode => "nominatedNode",
            NotEvaluated::Sampling => "percentageOfNodesToScore",
        }
    }
}

/// The FitError or extender error, and the preemption, in one sentence.
fn message(o: &Outcome) -> String {
    let message = o.message().unwrap_or_default();
    let Some(nominated) = &o.nominated_node else {
        return message;
    };
    let preempted = format!("preempted {} on {nominated}", o.victims.join(", "));
    if message.is_empty() {
        preempted
    } else {
        format!("{message} ({preempted})")
    }
}

/// A borderless table laid out for `width` columns, wrapping cells that do not fit.
fn new_table(width: usize) -> Table {
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    table
}

/// Two spaces between columns, none at the edges (the table is indented as a whole).
fn pad_columns(table: &mut Table) {
    for c in table.column_iter_mut() {
        c.set_padding((0, 2));
    }
}

/// The table's lines, each indented.
fn indented(table: &Table) -> String {
    table
        .trim_fmt()
        .lines()
        .map(|l| format!("{INDENT}{l}\n"))
        .collect()
}

/// The scored nodes, best first: marker (`*` chosen, `=` tied with it), node, total, gap to
/// the chosen node, and a column per priority that differs between them; then one note for
/// the priorities that do not, and one for a tie.
fn scores(e: &Explanation, chosen: Option<&str>, seed: u64) -> String {
    let mut scored: Vec<&NodeExplanation> = e.nodes.iter().filter(|n| n.total.is_some()).collect();
    if scored.is_empty() {
        let feasible = e.nodes.iter().filter(|n| n.feasible()).count();
        return match (chosen, feasible) {
            (Some(node), 1) if matches!(NotEvaluated::of(e), NotEvaluated::NominatedNode) => wrap(
                &format!("{node} is the pod's nominated node and fits: chosen without scoring"),
                INDENT,
                INDENT,
            ),
            (Some(node), 1) => wrap(
                &format!("{node} is the only feasible node: chosen without scoring"),
                INDENT,
                INDENT,
            ),
            _ => String::new(),
        };
    }
    // Stable: equal totals stay in visiting order.
    scored.sort_by_key(|n| std::cmp::Reverse(n.total));
    let best = scored[0].total.unwrap_or_default();
    let chosen_total = scored
        .iter()
        .find(|n| Some(n.node.as_str()) == chosen)
        .and_then(|n| n.total)
        .unwrap_or(best);
    let (varying, constant): (Vec<usize>, Vec<usize>) = (0..e.score_rules.len()).partition(|&i| {
        let first = scored[0].scores[i].normalized;
        scored.iter().any(|n| n.scores[i].normalized != first)
    });
    let mut table = new_table(WIDTH - INDENT.len());
    let mut header = vec![String::new(), "NODE".into(), "TOTAL".into(), "GAP".into()];
    header.extend(varying.iter().map(|&i| {
        let (name, weight) = &e.score_rules[i];
        format!("{} x{weight}", split_words(name, HEADER_LINE))
    }));
    table.set_header(header);
    for n in &scored {
        let total = n.total.unwrap_or_default();
        let marker = if Some(n.node.as_str()) == chosen {
            "*"
        } else if total == chosen_total {
            "="
        } else {
            ""
        };
        let mut row = vec![
            marker.to_string(),
            n.node.clone(),
            total.to_string(),
            total.saturating_sub(chosen_total).to_string(),
        ];
        row.extend(varying.iter().map(|&i| {
            let s = n.scores[i];
            let mut cell = s.normalized.to_string();
            if s.raw != s.normalized {
                cell.push_str(&format!(" (raw {})", s.raw));
            }
            if e.score_rules[i].1 != 1 {
                cell.push_str(&format!(" ={}", s.weighted));
            }
            cell
        }));
        table.add_row(row);
    }
    pad_columns(&mut table);
    for column in [2, 3] {
        if let Some(c) = table.column_mut(column) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = indented(&table);
    if !constant.is_empty() {
        let parts: Vec<String> = constant
            .iter()
            .map(|&i| {
                let (name, weight) = &e.score_rules[i];
                let raws: Vec<i64> = scored.iter().map(|n| n.scores[i].raw).collect();
                let s = scored[0].scores[i];
                let mut part = format!("{name} {}", s.normalized);
                let (low, high) = (raws.iter().min(), raws.iter().max());
                if low != high {
                    part.push_str(&format!(
                        " (raw {}..{})",
                        low.unwrap_or(&0),
                        high.unwrap_or(&0)
                    ));
                } else if s.raw != s.normalized {
                    part.push_str(&format!(" (raw {})", s.raw));
                }
                if *weight != 1 {
                    part.push_str(&format!(" x{weight} = {}", s.weighted));
                }
                part
            })
            .collect();
        let sum = constant
            .iter()
            .fold(0i64, |t, &i| t.saturating_add(scored[0].scores[i].weighted));
        out.push_str(&wrap(
            &format!(
                "same on all {} scored nodes, {sum} of each total: {}",
                scored.len(),
                parts.join(", ")
            ),
            INDENT,
            "    ",
        ));
    }
    let tied = scored
        .iter()
        .filter(|n| n.total == Some(chosen_total))
        .count();
    if tied > 1 {
        out.push_str(&wrap(
            &format!(
                "{tied} nodes share the best total ({chosen_total}, marked * and =): \
                 one chosen at random, seeded (--seed {seed})"
            ),
            INDENT,
            INDENT,
        ));
    }
    out
}

/// The rejected nodes grouped by rule and reason, most nodes first. A node rejected for
/// several reasons counts under each, as in the FitError.
fn rejected(e: &Explanation, rules: &RuleKinds) -> String {
    let mut groups: Vec<(&RejectedBy, &str, Vec<&str>)> = Vec::new();
    let mut rejected_nodes = 0;
    for n in &e.nodes {
        if !n.feasible() {
            rejected_nodes += 1;
        }
        for r in &n.rejections {
            match groups
                .iter_mut()
                .find(|(by, reason, _)| **by == r.by && *reason == r.reason)
            {
                Some((_, _, nodes)) => nodes.push(&n.node),
                None => groups.push((&r.by, &r.reason, vec![&n.node])),
            }
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    // Stable: equal counts stay in order of first appearance.
    groups.sort_by_key(|(_, _, nodes)| std::cmp::Reverse(nodes.len()));
    let mut table = new_table(WIDTH - INDENT.len());
    table.set_header(["NODES", "RULE", "REASON", "WHICH"]);
    for (by, reason, nodes) in &groups {
        let rule = match rules.kind(by) {
            "predicate" => by.name().to_string(),
            kind => format!("{kind} {}", by.name()),
        };
        let mut which = nodes
            .iter()
            .take(NAMES_PER_GROUP)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if nodes.len() > NAMES_PER_GROUP {
            which.push_str(&format!(" and {} more", nodes.len() - NAMES_PER_GROUP));
        }
        table.add_row([nodes.len().to_string(), rule, reason.to_string(), which]);
    }
    pad_columns(&mut table);
    if let Some(c) = table.column_mut(0) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    let evaluated = e.nodes.len();
    format!(
        "{INDENT}rejected {rejected_nodes} of {evaluated} evaluated node(s):\n{}",
        indented(&table)
    )
}

/// The preemption attempt of a pod that fit nowhere.
fn preemption(p: &PreemptionReport) -> String {
    let mut lines = Vec::new();
    if let Some(why) = &p.not_eligible {
        lines.push(format!("preemption: not attempted: {why}"));
    } else {
        if p.candidates.is_empty() {
            lines.push("preemption: no node can be freed for the pod".to_string());
        }
        for (pod, why) in &p.victims {
            lines.push(format!("victim {pod}: {why}"));
        }
        for c in &p.candidates {
            let verdict = c
                .lost_on
                .as_deref()
                .map_or("chosen".to_string(), |l| format!("lost: {l}"));
            lines.push(format!(
                "candidate {}: victims [{}], {} PDB violation(s): {verdict}",
                c.node,
                c.victims.join(", "),
                c.pdb_violations
            ));
        }
        for (node, why) in &p.rejected {
            lines.push(format!("not a candidate {node}: {why}"));
        }
        if p.unresolvable > 0 {
            lines.push(format!(
                "{} node(s) not tried: removing pods cannot help there",
                p.unresolvable
            ));
        }
        if !p.extenders.is_empty() {
            lines.push(format!(
                "candidates and victims as extender(s) {} answered",
                p.extenders.join(", ")
            ));
        }
    }
    lines.iter().map(|l| wrap(l, INDENT, "    ")).collect()
}

/// `name` split into lines of at most `max` characters at its words (CamelCase humps and
/// `+` between folded entries), so a column can be narrower than the name without cutting
/// a word; a longer word stays whole.
fn split_words(name: &str, max: usize) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in name.chars() {
        let hump = c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase());
        if (hump || previous == Some('+')) && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.push(c);
        previous = Some(c);
    }
    words.push(current);
    let mut lines: Vec<String> = Vec::new();
    for word in words {
        match lines.last_mut() {
            Some(line) if line.chars().count() + word.chars().count() <= max => {
                line.push_str(&word)
            }
            _ => lines.push(word),
        }
    }
    lines.join("\n")
}

/// `text` wrapped at spaces to [`WIDTH`] columns, the first line after `first`, the others
/// after `rest`; a word longer than a line stays whole.
pub(super) fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_at_their_words() {
        let cases = [
            ("Zone", 16, "Zone"),
            ("LeastRequestedPriority", 16, "LeastRequested\nPriority"),
            (
                "BalancedResourceAllocation",
                16,
                "BalancedResource\nAllocation",
            ),
            (
                "NodePreferAvoidPodsPriority",
                16,
                "NodePreferAvoid\nPodsPriority",
            ),
            ("extender http://x", 16, "extender http://x"),
            ("MaxEBSVolumeCount+Other", 12, "MaxEBSVolume\nCount+Other"),
            ("Averyveryverylongword", 5, "Averyveryverylongword"),
        ];
        for (name, max, want) in cases {
            assert_eq!(split_words(name, max), want, "{name}");
        }
    }

    #[test]
    fn wrapping_keeps_lines_within_the_width() {
        let text = "word ".repeat(60);
        let wrapped = wrap(&text, "  ", "    ");
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines.len() > 2);
        assert!(lines.iter().all(|l| l.len() <= WIDTH), "{wrapped}");
        assert!(lines[0].starts_with("  word") && lines[1].starts_with("    word"));
        assert_eq!(
            wrapped.split_whitespace().count(),
            60,
            "no word lost or split"
        );
        let long = "x".repeat(WIDTH + 10);
        assert_eq!(wrap(&long, "", ""), format!("{long}\n"));
    }
}
