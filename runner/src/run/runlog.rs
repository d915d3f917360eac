//! A run's results in the pod log (docs/runner.md, "Flags and logs"): one
//! line per failed or skipped item, then the run's counts, so that
//! `kubectl logs` shows what went wrong and not only how much.

use combo_api::summary::Verdict;
use combo_api::{NodeSummary, RunId};

/// Most item lines logged for one run; the rest are counted in one line.
/// The DebuggerReport and the errlog hold them all.
pub const MAX_ITEM_LINES: usize = 200;

/// One failed or skipped item, as logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Its category.
    pub category: &'a str,
    /// The item.
    pub item: &'a str,
    /// Failed or skipped.
    pub verdict: Verdict,
    /// The err message or the skip reason.
    pub text: &'a str,
}

/// The run's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Healthy items.
    pub ok: usize,
    /// Failed items.
    pub failed: usize,
    /// Skipped items.
    pub skipped: usize,
}

/// The failed items, then the skipped ones, each in summary order, and the
/// counts of all items.
pub fn entries(summary: &NodeSummary) -> (Vec<Entry<'_>>, Counts) {
    let failed = summary.failed().map(|(category, item, text)| Entry {
        category,
        item,
        verdict: Verdict::Failed,
        text,
    });
    let skipped = summary.skipped().map(|(category, item, text)| Entry {
        category,
        item,
        verdict: Verdict::Skipped,
        text,
    });
    let all: Vec<Entry> = failed.chain(skipped).collect();
    let total: usize = summary.categories.values().map(|items| items.len()).sum();
    let mut counts = Counts::default();
    let mut listed_failed = 0;
    for e in &all {
        match e.verdict {
            Verdict::Failed => listed_failed += 1,
            _ => counts.skipped += 1,
        }
    }
    counts.ok = total - listed_failed - counts.skipped;
    // A script's err lines past the item limit count each (docs/runner.md, "Scripts").
    counts.failed = summary.failed_count();
    (all, counts)
}

/// Logs, at level info, one line per failed or skipped item of `summary`
/// (up to [`MAX_ITEM_LINES`]), then `run finished` with the counts.
pub fn log(run_id: RunId, summary: &NodeSummary, scripts: usize) {
    let (entries, counts) = entries(summary);
    for e in entries.iter().take(MAX_ITEM_LINES) {
        match e.verdict {
            Verdict::Failed => tracing::info!(run_id = %run_id, category = e.category,
                item = e.item, err = e.text, "item failed"),
            _ => tracing::info!(run_id = %run_id, category = e.category,
                item = e.item, reason = e.text, "item skipped"),
        }
    }
    if entries.len() > MAX_ITEM_LINES {
        tracing::info!(run_id = %run_id, more = entries.len() - MAX_ITEM_LINES,
            "more failed or skipped items not logged; the DebuggerReport counts them and the errlog lists the failures");
    }
    tracing::info!(run_id = %run_id, ok = counts.ok, failed = counts.failed,
        skipped = counts.skipped, scripts, "run finished");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use combo_api::ItemResult;

    fn summary() -> NodeSummary {
        let mut s = NodeSummary {
            run_at: "2026-11-22T06:00:00Z".into(),
            ..Default::default()
        };
        let disk = s.categories.entry("disk".into()).or_default();
        disk.insert("sda".into(), ItemResult::ok());
        disk.insert(
            "smart/sdb".into(),
            ItemResult::skip("smartctl is not installed"),
        );
        disk.insert("sdc".into(), ItemResult::err("disk full (97% used)"));
        let net = s.categories.entry("net".into()).or_default();
        net.insert("eth0".into(), ItemResult::err("link down"));
        net.insert("eth1".into(), ItemResult::ok());
        s
    }

    /// What `f` logs at level info, as plain text lines.
    fn captured(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let out = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || out.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = buf.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn failures_come_first_then_skips_and_everything_is_counted() {
        let s = summary();
        let (entries, counts) = entries(&s);
        let brief: Vec<(&str, &str, Verdict)> = entries
            .iter()
            .map(|e| (e.category, e.item, e.verdict))
            .collect();
        assert_eq!(
            brief,
            vec![
                ("disk", "sdc", Verdict::Failed),
                ("net", "eth0", Verdict::Failed),
                ("disk", "smart/sdb", Verdict::Skipped),
            ]
        );
        assert_eq!(
            counts,
            Counts {
                ok: 2,
                failed: 2,
                skipped: 1
            }
        );
    }

    #[test]
    fn each_failed_and_skipped_item_is_one_log_line_and_the_counts_close_the_run() {
        let run: RunId = "20261122T060000Z".parse().unwrap();
        let text = captured(|| log(run, &summary(), 4));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        for (line, want) in lines.iter().zip([
            [
                "INFO",
                "item failed",
                "category=\"disk\"",
                "item=\"sdc\"",
                "err=\"disk full (97% used)\"",
            ],
            [
                "INFO",
                "item failed",
                "category=\"net\"",
                "item=\"eth0\"",
                "err=\"link down\"",
            ],
            [
                "INFO",
                "item skipped",
                "category=\"disk\"",
                "item=\"smart/sdb\"",
                "reason=\"smartctl is not installed\"",
            ],
            ["INFO", "run finished", "ok=2", "failed=2", "skipped=1"],
        ]) {
            for w in want {
                assert!(line.contains(w), "{w:?} not in {line:?}");
            }
            assert!(line.contains("run_id=20261122T060000Z"), "{line}");
        }
        assert!(
            !text.contains("sda"),
            "healthy items are counted, not listed"
        );
    }

    #[test]
    fn a_run_with_very_many_failures_logs_a_bounded_number_of_lines() {
        let mut s = summary();
        let disk = s.categories.get_mut("disk").unwrap();
        for i in 0..500 {
            disk.insert(format!("item-{i:03}"), ItemResult::err("broken"));
        }
        let run: RunId = "20261122T060000Z".parse().unwrap();
        let text = captured(|| log(run, &s, 1));
        assert_eq!(text.lines().count(), MAX_ITEM_LINES + 2);
        assert!(text.contains("more=303"), "{text}");
        assert!(text.contains("failed=502"), "{text}");
    }
}
