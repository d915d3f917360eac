//! A node's summary made to fit a size: the steps that cut messages and
//! fold items until its YAML fits
//! (docs/runner.md, "Reports: the summary ConfigMap").

use std::collections::BTreeMap;

use super::{
    cut, failures_of, omitted_failures, untaken_failures, ItemResult, NodeSummary, Verdict,
    FIRST_MESSAGE_LIMIT, OMITTED, SHORTEST_MESSAGE, SKIP_REASON_LIMIT,
};

impl NodeSummary {
    /// This summary made to fit in `max` bytes of YAML.
    ///
    /// Each step is taken only while the summary does not fit yet. Err
    /// messages and skip reasons longer than [`FIRST_MESSAGE_LIMIT`] are
    /// cut (ending with [`CUT_MARKER`](super::CUT_MARKER)); then skip reasons, to the longest
    /// that fits but not below [`SKIP_REASON_LIMIT`]. If that is not enough,
    /// healthy items are folded into one item `(N healthy items omitted)`
    /// per category instead, and only then are all messages (skip reasons
    /// back to [`FIRST_MESSAGE_LIMIT`]) cut to the longest that fits, not
    /// below [`SHORTEST_MESSAGE`], so they take the room the healthy items
    /// left. Then skipped items are folded into one item
    /// `(N skipped items omitted)` (still skipped), and as a last resort
    /// failed items beyond what fits become one item
    /// `(N failed items omitted)` per category that still carries an err, so
    /// a reader never mistakes a cut summary for a healthy one. Failed items
    /// are dropped round-robin over the categories: the first failed item
    /// of each category is the last to go (see [`NodeSummary::bounded_by`]).
    pub fn bounded(&self, max: usize) -> NodeSummary {
        self.bounded_by(max, |_, _| ())
    }

    /// [`NodeSummary::bounded`], with failed items grouped by their category
    /// and `source(category, item)` (the script that reported them, for
    /// the runner): when failed items must go, distinct failures stay. Each
    /// item ranks by its place within its group (the first of every group
    /// ranks 0), and the items of the highest rank go first, from the end,
    /// so one failure of each group is kept before a second of any, and so
    /// on: 140 failures of one script do not push out the one failure of
    /// another. A script's `<script>/output` item standing for the err
    /// lines past the runner's limit (see [`failures_of`]) ranks 0 too.
    pub fn bounded_by<K: Ord>(&self, max: usize, source: impl Fn(&str, &str) -> K) -> NodeSummary {
        self.bound(max, None, source)
    }

    /// [`NodeSummary::bounded_by`] for a value that lists items before it
    /// says much about each: when cutting messages to
    /// [`FIRST_MESSAGE_LIMIT`] and skip reasons to [`SKIP_REASON_LIMIT`] is
    /// not enough, err messages are cut to the longest that fits, not
    /// below `floor` bytes, before any item is folded; only then does it
    /// go on as [`NodeSummary::bounded_by`] (a DebuggerReport: docs/runner.md,
    /// "Reports: the summary ConfigMap").
    pub fn bounded_keeping_items_by<K: Ord>(
        &self,
        max: usize,
        floor: usize,
        source: impl Fn(&str, &str) -> K,
    ) -> NodeSummary {
        self.bound(max, Some(floor), source)
    }

    fn bound<K: Ord>(
        &self,
        max: usize,
        item_floor: Option<usize>,
        source: impl Fn(&str, &str) -> K,
    ) -> NodeSummary {
        if self.to_yaml().len() <= max {
            return self.clone();
        }
        let fits = |s: &NodeSummary| s.to_yaml().len() <= max;
        let mut s = self.clone();
        s.cut_messages(FIRST_MESSAGE_LIMIT, Cut::All);
        if fits(&s) {
            return s;
        }
        if let Some(fit) = s.longest_cut_that_fits(SKIP_REASON_LIMIT, Cut::SkipReasons, max) {
            return fit;
        }
        if let Some(floor) = item_floor {
            let mut kept = s.clone();
            kept.cut_messages(SKIP_REASON_LIMIT, Cut::SkipReasons);
            if let Some(fit) = kept.longest_cut_that_fits(floor, Cut::Errs, max) {
                return fit;
            }
        }
        // The healthy items go; the skip reasons get their bytes back and
        // share the room that leaves with the err messages.
        for items in s.categories.values_mut() {
            fold(items, Verdict::Healthy);
        }
        if fits(&s) {
            return s;
        }
        if let Some(fit) = s.longest_cut_that_fits(SHORTEST_MESSAGE, Cut::All, max) {
            return fit;
        }
        s.cut_messages(SHORTEST_MESSAGE, Cut::All);
        for items in s.categories.values_mut() {
            fold(items, Verdict::Skipped);
        }
        if fits(&s) {
            return s;
        }
        // (rank within its group, place, category, item) of every failed item.
        let mut seen: BTreeMap<(&str, K), usize> = BTreeMap::new();
        let mut order: Vec<(usize, usize, String, String)> = Vec::new();
        for (c, items) in &self.categories {
            for (i, r) in items {
                if r.err.is_none() || !s.categories[c].contains_key(i) {
                    continue;
                }
                // A shortened summary's own omitted row is never dropped:
                // the failures dropped now are added to it.
                if omitted_failures(i).is_some() {
                    continue;
                }
                // An item standing for many failures, or for a script's
                // err lines past the runner's limit, ranks as the first of
                // a group of its own: its count goes last.
                let untaken = r.err.as_deref().and_then(|m| untaken_failures(i, m));
                if failures_of(i, r) > 1 || untaken.is_some() {
                    order.push((0, order.len(), c.clone(), i.clone()));
                    continue;
                }
                let rank = seen.entry((c.as_str(), source(c, i))).or_insert(0);
                order.push((*rank, order.len(), c.clone(), i.clone()));
                *rank += 1;
            }
        }
        // The highest rank first, and within a rank the last item first.
        order.sort_by_key(|o| std::cmp::Reverse((o.0, o.1)));
        // The summary with the first `k` items of `order` dropped.
        let dropped = |k: usize| {
            let mut d = s.clone();
            let mut omitted: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, _, cat, item) in &order[..k] {
                let items = d.categories.get_mut(cat).expect("the item's category");
                let gone = items.remove(item).unwrap_or_default();
                let n = omitted.entry(cat).or_insert_with(|| {
                    items
                        .keys()
                        .filter_map(|k| omitted_failures(k))
                        .map(|n| n as usize)
                        .sum()
                });
                items.retain(|k, _| !k.ends_with("failed items omitted)"));
                *n += (failures_of(item, &gone) as usize).max(1);
                items.insert(
                    format!("({n} failed items omitted)"),
                    ItemResult::err(OMITTED),
                );
            }
            d
        };
        let all = dropped(order.len());
        if all.to_yaml().len() > max {
            return all;
        }
        // Each drop shrinks the value by an item (a category's first adds
        // its stand-in), so the fewest drops that fit are found by halving
        // between a count that does not fit and one that does: one YAML
        // rendering per halving, not one per dropped item.
        let (mut too_few, mut enough) = (0, order.len());
        while enough - too_few > 1 {
            let mid = too_few + (enough - too_few) / 2;
            if dropped(mid).to_yaml().len() <= max {
                enough = mid;
            } else {
                too_few = mid;
            }
        }
        dropped(enough)
    }

    /// This summary with the messages `which` names cut to the longest
    /// limit from `shortest` to [`FIRST_MESSAGE_LIMIT`] that makes it fit
    /// in `max` bytes, or `None` when even `shortest` is too long.
    fn longest_cut_that_fits(
        &self,
        shortest: usize,
        which: Cut,
        max: usize,
    ) -> Option<NodeSummary> {
        let cut_to = |limit: usize| {
            let mut s = self.clone();
            s.cut_messages(limit, which);
            s
        };
        let fitting = cut_to(shortest);
        if fitting.to_yaml().len() > max {
            return None;
        }
        // The summary grows with the limit: the longest limit that fits is
        // found by halving the range between one that fits and one that
        // does not.
        let (mut fits, mut best, mut too_long) = (shortest, fitting, FIRST_MESSAGE_LIMIT + 1);
        while too_long - fits > 1 {
            let mid = fits + (too_long - fits) / 2;
            let s = cut_to(mid);
            if s.to_yaml().len() <= max {
                (fits, best) = (mid, s);
            } else {
                too_long = mid;
            }
        }
        Some(best)
    }

    fn cut_messages(&mut self, limit: usize, which: Cut) {
        for items in self.categories.values_mut() {
            for r in items.values_mut() {
                let err = r.err.as_mut().filter(|_| which != Cut::SkipReasons);
                let skip = r.skip.as_mut().filter(|_| which != Cut::Errs);
                for msg in [err, skip].into_iter().flatten() {
                    cut(msg, limit);
                }
            }
        }
    }
}

/// Which messages a step of [`NodeSummary::bounded_by`] cuts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Err messages and skip reasons.
    All,
    /// Skip reasons only.
    SkipReasons,
    /// Err messages only.
    Errs,
}

/// Folds the items of `items` whose verdict is `verdict` (healthy or
/// skipped), when there are two or more, into one item
/// `(N healthy items omitted)` or `(N skipped items omitted)` of that
/// verdict.
fn fold(items: &mut BTreeMap<String, ItemResult>, verdict: Verdict) {
    let (word, stand_in) = match verdict {
        Verdict::Healthy => ("healthy", ItemResult::ok()),
        Verdict::Skipped => ("skipped", ItemResult::skip(OMITTED)),
        Verdict::Failed => return,
    };
    let folded: Vec<String> = items
        .iter()
        .filter(|(_, r)| r.verdict() == verdict)
        .map(|(k, _)| k.clone())
        .collect();
    if folded.len() > 1 {
        for k in &folded {
            items.remove(k);
        }
        items.insert(format!("({} {word} items omitted)", folded.len()), stand_in);
    }
}
