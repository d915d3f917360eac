//! A busy node's result, the one the memory test and the reports
//! benchmark both hand the operator: 150 items with names of about 40
//! bytes over the four categories, 30 of them failed with kernel lines of
//! 160 bytes.

use combo_api::{ItemResult, NodeSummary};

/// Node `node`'s busy result of the run scheduled at `run_at`, finished
/// at `finished_at`.
pub fn busy_result(node: usize, run_at: &str, finished_at: &str) -> NodeSummary {
    let mut s = NodeSummary {
        run_at: run_at.into(),
        finished_at: finished_at.into(),
        ..Default::default()
    };
    for i in 0..150 {
        let cat = ["disk", "net", "mem", "svc"][i % 4];
        let item = format!("check-{:02}/a-longer-item-name-number-{i:03}", i % 15);
        let r = if i % 5 == 0 {
            let mut line = format!(
                "[{node:>7}.{i:06}] blk_update_request: I/O error, dev nvme{i}n1, sector 1953525168 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0"
            );
            while line.len() < 160 {
                line.push_str(" (more)");
            }
            line.truncate(160);
            ItemResult::err(line)
        } else {
            ItemResult::ok()
        };
        s.categories.entry(cat.into()).or_default().insert(item, r);
    }
    s
}
