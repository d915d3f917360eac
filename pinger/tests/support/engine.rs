//! Engine settings for the tests that probe inside their own namespaces.

use std::sync::Arc;
use std::time::Duration;

use combo_pinger::engine::Settings;
use combo_pinger::probe::{dns::Dns, Probers};
use combo_pinger::round::Thresholds;

/// Rounds every `interval_ms` of `count` probes, each given `timeout_ms`;
/// no loss or latency limit, so a round's outcome is what was measured.
pub fn settings(interval_ms: u64, timeout_ms: u64, count: u32) -> Settings {
    Settings {
        interval: Duration::from_millis(interval_ms),
        timeout: Duration::from_millis(timeout_ms),
        count,
        limits: Thresholds {
            max_loss_percent: 100,
            max_latency_ms: 0,
        },
        probers: Probers {
            dns: Arc::new(Dns::new(
                &["127.0.0.1:53".parse().unwrap()],
                Duration::from_secs(1),
            )),
        },
    }
}
