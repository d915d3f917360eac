//! What a pinger serves of its last minutes: per target, probes sent and
//! lost and the RTT of the answered ones, over a window of whole minutes. The pinger serves it as JSON on
//! [`PATH`] of its metrics port; `kubectl combo mesh` reads it through the
//! API server's pod proxy.
//!
//! docs/pinger.md#the-mesh-view

use serde::{Deserialize, Serialize};

/// Path of the summary on the pinger's metrics port.
pub const PATH: &str = "/recent";

/// Minutes the window spans: the current minute and the ones before it.
pub const WINDOW_MINUTES: u64 = 5;

/// One pinger's summary of its last minutes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recent {
    /// Seconds the window spans.
    pub window_seconds: u64,
    /// Every target probed now, sorted by kind and target.
    pub targets: Vec<RecentTarget>,
}

/// One target's last minutes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentTarget {
    /// `icmp`, `tcp`, `udp` or `dns`.
    pub kind: String,
    /// The target as the metrics label it: an IP for a peer.
    pub target: String,
    /// Probes sent in the window.
    pub sent: u64,
    /// Probes lost in the window (timeout, refused, error).
    pub lost: u64,
    /// Average RTT of the answered probes, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_avg_ms: Option<f64>,
    /// Largest RTT of the answered probes, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_max_ms: Option<f64>,
    /// Whether the last round passed.
    pub up: bool,
}

impl RecentTarget {
    /// Lost probes as a percentage of those sent; 0 when none were sent.
    pub fn loss_percent(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 * 100.0 / self.sent as f64
        }
    }
}
