//! Rules in the test cluster's network namespaces: a table of nftables
//! rules that goes away with the test, whatever its outcome.

use std::process::Command;

use anyhow::{bail, Context as _, Result};

/// An nftables ruleset loaded into a network namespace the test cluster
/// made (`ip netns exec <netns> nft -f -`); its table is deleted when
/// dropped, so a failing test leaves no rule behind.
pub struct NftTable {
    netns: String,
    table: String,
}

impl NftTable {
    /// Loads `table inet <name> { <body> }` into `netns`.
    pub fn load(netns: &str, name: &str, body: &str) -> Result<Self> {
        use std::io::Write as _;
        let mut nft = Command::new("ip")
            .args(["netns", "exec", netns, "nft", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        nft.stdin
            .take()
            .context("nft stdin")?
            .write_all(format!("table inet {name} {{\n{body}\n}}\n").as_bytes())?;
        let out = nft.wait_with_output()?;
        if !out.status.success() {
            bail!("nft in {netns}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(NftTable {
            netns: netns.to_string(),
            table: name.to_string(),
        })
    }

    /// Cuts a namespace off: everything but loopback is dropped both ways.
    pub fn cut_off(netns: &str, name: &str) -> Result<Self> {
        Self::load(
            netns,
            name,
            "chain input { type filter hook input priority 0; policy drop; iifname \"lo\" accept; }\n\
             chain output { type filter hook output priority 0; policy drop; oifname \"lo\" accept; }",
        )
    }

    /// Cuts one link: in `netns` (a node's, which forwards its pods'
    /// traffic), ICMP echo requests to `ip` are dropped; everything else,
    /// and the other direction, still passes.
    pub fn drop_echo_requests_to(netns: &str, name: &str, ip: &str) -> Result<Self> {
        let family = if ip.contains(':') {
            "ip6 daddr {ip} icmpv6 type echo-request"
        } else {
            "ip daddr {ip} icmp type echo-request"
        };
        Self::load(
            netns,
            name,
            &format!(
                "chain drop_peer {{ type filter hook forward priority 0; {} drop; }}",
                family.replace("{ip}", ip)
            ),
        )
    }
}

impl Drop for NftTable {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.netns,
                "nft",
                "delete",
                "table",
                "inet",
            ])
            .arg(&self.table)
            .output();
    }
}
