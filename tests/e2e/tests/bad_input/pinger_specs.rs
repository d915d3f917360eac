//! Generated Pinger specs (docs/testing.md, "Bad input"): every field is
//! mostly plausible and sometimes hostile, and any field may be left out so
//! that the CRD's defaults apply. Targets name loopback, the cluster's own
//! addresses, or names no DNS server answers: a pinger that runs one of
//! them sends nothing out of the test cluster.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Created by a generated string if it ever reached a shell.
pub const PWNED: &str = "/tmp/kube-combo-pwned-pinger";

/// Strings that have broken tools before: shell metacharacters, newlines
/// and NUL, leading blanks, several KB, non-ASCII.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(format!("$(touch {PWNED})")),
        Just(format!("`touch {PWNED}`")),
        Just(format!("127.0.0.1;touch {PWNED}")),
        Just(format!("127.0.0.1 && touch {PWNED} #")),
        Just(format!("127.0.0.1\ntouch {PWNED}")),
        Just("127.0.0.1\r\n\u{0}".to_string()),
        Just(" 127.0.0.1".to_string()),
        Just("x".repeat(4096)),
        Just(format!("{}:80", "a.".repeat(3000))),
        Just("пинг.example".to_string()),
        Just("例え.テスト:53".to_string()),
        Just("-c 99999 127.0.0.1".to_string()),
        "\\PC{0,24}",
    ]
}

/// A `ping` or `dns` entry the schema's pattern lets through: valid, or
/// one the target parser refuses.
fn host_ok() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop_oneof![
            Just("127.0.0.1".to_string()),
            "127\\.0\\.0\\.[1-9]",
            Just("::1".to_string()),
            Just("localhost".to_string()),
            Just("node-1".to_string()),
            Just("kubernetes.default.svc.cluster.local".to_string()),
            Just("172.31.0.1".to_string()),
            Just(format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61))),
        ],
        1 => prop_oneof![
            Just("10.0.0.300".to_string()),
            Just("999.1.1.1".to_string()),
            Just("-lead.example".to_string()),
            Just("trail-.example".to_string()),
            Just("a..b".to_string()),
            Just("%".to_string()),
            Just(":::".to_string()),
            Just("fe80::1%lo".to_string()),
            Just("12345".to_string()),
            Just(format!("{}.example", "l".repeat(64))),
            Just(format!("{}.x", "a.".repeat(127))),
        ],
    ]
}

/// A `ping` or `dns` entry: mostly [`host_ok`], sometimes [`hostile`].
fn host() -> impl Strategy<Value = String> {
    prop_oneof![29 => host_ok(), 1 => hostile()]
}

/// A port: mostly valid, sometimes 0 or past 65535.
fn port() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (1u32..=65535).prop_map(|p| p.to_string()),
        1 => prop_oneof![
            Just("0".to_string()),
            Just("65536".to_string()),
            Just("99999".to_string()),
            Just("00080".to_string()),
        ],
    ]
}

/// A `tcpPing` or `udpPing` entry.
fn host_port() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => (host_ok(), port()).prop_map(|(h, p)| format!("{h}:{p}")),
        6 => prop_oneof![
            Just("[::1]:53".to_string()),
            Just("[::1]:0".to_string()),
            Just("::1:53".to_string()),
            Just("127.0.0.1".to_string()),
            Just("[fe80::1%lo]:80".to_string()),
            Just("127.0.0.1:1".to_string()),
        ],
        1 => hostile(),
    ]
}

/// A `dnsServers` entry.
fn dns_server() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => prop_oneof![
            Just("127.0.0.1".to_string()),
            Just("127.0.0.1:5353".to_string()),
            Just("[::1]:53".to_string()),
            Just("::1".to_string()),
            Just("172.31.0.1".to_string()),
        ],
        9 => prop_oneof![
            Just("[::1]:0".to_string()),
            Just("ffff".to_string()),
            Just("1.2.3".to_string()),
            Just(":::".to_string()),
            Just("127.0.0.1:99999".to_string()),
        ],
        1 => hostile(),
    ]
}

/// A list of `entry`: mostly a few, sometimes more than a hundred of
/// `long` (entries the schema lets through), or not a list of strings.
fn list(entry: BoxedStrategy<String>, long: BoxedStrategy<String>) -> BoxedStrategy<Value> {
    prop_oneof![
        60 => proptest::collection::vec(entry.clone(), 0..4).prop_map(Value::from),
        2 => proptest::collection::vec(long, 100..120).prop_map(Value::from),
        1 => entry.prop_map(Value::from),
        1 => Just(json!([1, true])),
        1 => Just(Value::Null),
    ]
    .boxed()
}

/// An integer field with the schema range `lo..=hi`: mostly a typical value,
/// sometimes just outside the range, far outside, or of another type.
fn int(lo: i64, hi: i64, typical: std::ops::RangeInclusive<i64>) -> BoxedStrategy<Value> {
    prop_oneof![
        100 => typical.prop_map(Value::from),
        1 => Just(json!(lo - 1)),
        1 => Just(json!(hi + 1)),
        1 => any::<i64>().prop_map(Value::from),
        1 => Just(json!("5")),
        1 => Just(json!(2.5)),
        1 => Just(Value::Null),
    ]
    .boxed()
}

fn boolean() -> BoxedStrategy<Value> {
    prop_oneof![
        40 => any::<bool>().prop_map(Value::from),
        1 => Just(json!("true")),
        1 => Just(json!(1)),
        1 => Just(Value::Null),
    ]
    .boxed()
}

fn image() -> BoxedStrategy<Value> {
    prop_oneof![
        8 => Just(json!("")),
        1 => Just(json!("kube-combo/pinger:dev")),
        1 => "[a-z0-9./:@-]{1,40}".prop_map(Value::from),
        2 => hostile().prop_map(Value::from),
        1 => Just(json!(7)),
    ]
    .boxed()
}

/// Present three times in four; absent, the CRD's default applies.
fn field(s: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(0.75, s)
}

/// One generated Pinger spec.
pub fn spec() -> impl Strategy<Value = Value> {
    // `ping` and `dns`; `tcpPing` and `udpPing`.
    let hosts = || field(list(host().boxed(), host_ok().boxed()));
    let host_ports = || {
        field(list(
            host_port().boxed(),
            host_ok().prop_map(|h| format!("{h}:53")).boxed(),
        ))
    };
    let targets = (
        hosts(),
        host_ports(),
        host_ports(),
        hosts(),
        field(list(
            dns_server().boxed(),
            Just("127.0.0.1".to_string()).boxed(),
        )),
    );
    let numbers = (
        field(int(1, 65535, 1024..=65535)),
        field(int(1, 3600, 1..=10)),
        field(int(1, 60_000, 100..=2000)),
        field(int(1, 100, 1..=5)),
        field(int(0, 100_000, 0..=50)),
        field(int(0, 100, 0..=100)),
        field(int(0, 60_000, 0..=1000)),
    );
    let rest = (
        field(image()),
        field(boolean()),
        field(boolean()),
        field(boolean()),
        field(hostile().prop_map(Value::from).boxed()),
    );
    (targets, numbers, rest).prop_map(
        |(
            (ping, tcp, udp, dns, servers),
            (metrics_port, interval, timeout, count, max_peers, max_loss, max_latency),
            (image, metrics, peers, gateway, unknown),
        )| {
            let fields = [
                ("ping", ping),
                ("tcpPing", tcp),
                ("udpPing", udp),
                ("dns", dns),
                ("dnsServers", servers),
                ("metricsPort", metrics_port),
                ("intervalSeconds", interval),
                ("timeoutMs", timeout),
                ("count", count),
                ("maxPeers", max_peers),
                ("maxLossPercent", max_loss),
                ("maxLatencyMs", max_latency),
                ("image", image),
                ("enableMetrics", metrics),
                ("peers", peers),
                ("gateway", gateway),
                // Not in the schema: the API server prunes it.
                ("shell", unknown),
            ];
            Value::Object(
                fields
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.to_string(), v?)))
                    .collect::<Map<String, Value>>(),
            )
        },
    )
}
