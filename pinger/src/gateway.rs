//! The default gateways of this network namespace, from `/proc/net/route` and
//! `/proc/net/ipv6_route`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Default gateways of the current network namespace (IPv4 first).
pub fn default_gateways() -> Vec<IpAddr> {
    let v4 = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let v6 = std::fs::read_to_string("/proc/net/ipv6_route").unwrap_or_default();
    let mut gws: Vec<IpAddr> = parse_v4(&v4).into_iter().map(IpAddr::V4).collect();
    gws.extend(parse_v6(&v6).into_iter().map(IpAddr::V6));
    gws.dedup();
    gws
}

const RTF_UP: u32 = 0x1;
const RTF_GATEWAY: u32 = 0x2;

/// Gateways of the IPv4 default routes in `/proc/net/route` text.
pub fn parse_v4(text: &str) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Iface Destination Gateway Flags RefCnt Use Metric Mask ...
        if f.len() < 8 || f[1] != "00000000" || f[7] != "00000000" {
            continue;
        }
        let flags = u32::from_str_radix(f[3], 16).unwrap_or(0);
        if flags & (RTF_UP | RTF_GATEWAY) != RTF_UP | RTF_GATEWAY {
            continue;
        }
        if let Ok(gw) = u32::from_str_radix(f[2], 16) {
            // The kernel prints the address in host (little-endian) order.
            let ip = Ipv4Addr::from(gw.swap_bytes());
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

/// Gateways of the IPv6 default routes in `/proc/net/ipv6_route` text.
pub fn parse_v6(text: &str) -> Vec<Ipv6Addr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // dest dest_len src src_len next_hop metric refcnt use flags iface
        if f.len() < 10 || f[1] != "00" || f[0].bytes().any(|b| b != b'0') {
            continue;
        }
        let flags = u32::from_str_radix(f[8], 16).unwrap_or(0);
        if flags & (RTF_UP | RTF_GATEWAY) != RTF_UP | RTF_GATEWAY {
            continue;
        }
        if let Ok(hop) = u128::from_str_radix(f[4], 16) {
            let ip = Ipv6Addr::from(hop);
            if !ip.is_unspecified() && !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ipv4_default_route_gives_its_gateway() {
        let text =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t0110100A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t0010100A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(parse_v4(text), vec![Ipv4Addr::new(10, 16, 16, 1)]);
        assert!(parse_v4("Iface\tDestination\n").is_empty());
    }

    #[test]
    fn the_ipv6_default_route_gives_its_next_hop() {
        let text = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eth0\n\
fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 eth0\n";
        assert_eq!(parse_v6(text), vec!["fe80::1".parse::<Ipv6Addr>().unwrap()]);
    }
}
