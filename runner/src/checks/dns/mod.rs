//! `combo-runner dns` (docs/runner.md, "DNS check (`combo-runner dns`)"):
//! asks each resolver, over UDP and over TCP, for the A and AAAA records
//! of the given names, and prints one script-contract line per resolver
//! and transport, for a script to pass on.

pub mod node;
pub mod query;
pub mod verdict;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hickory_net::proto::rr::Name;

use query::Transport;

/// The DNS port.
const PORT: u16 = 53;

/// Asks DNS resolvers for the A and AAAA records of names, over UDP and
/// TCP, and prints one `ok`/`err` line per resolver and transport (item
/// `dns:<server>/<udp|tcp>`); exits 0 whatever they answer.
#[derive(clap::Args, Debug, Clone)]
#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "the flags' help shows [IPv6]:PORT as the user types it"
)]
pub struct DnsArgs {
    /// A name to ask for (repeatable), asked as given: absolute, without
    /// search domains.
    #[arg(long = "name", value_name = "NAME", required = true, value_parser = parse_name)]
    pub names: Vec<Name>,

    /// A resolver to ask, IP[:PORT] ([IPv6]:PORT), port 53 when omitted
    /// (repeatable); without it, the nameservers of --resolv-conf.
    #[arg(long = "server", value_name = "IP[:PORT]", value_parser = parse_server)]
    pub servers: Vec<SocketAddr>,

    /// The resolv.conf whose nameservers are asked when no --server is
    /// given (default: $HOST_ROOT/etc/resolv.conf).
    #[arg(long, value_name = "FILE")]
    pub resolv_conf: Option<PathBuf>,

    /// The node's network namespace, where the nameservers of the
    /// resolv.conf are asked when it is the node's, that is when
    /// --host-root is not / (default: $HOST_ROOT/proc/1/ns/net, the node's
    /// PID 1's). Where it cannot be entered, a loopback nameserver is
    /// skipped and the others are asked here.
    #[arg(long, value_name = "FILE")]
    pub node_netns: Option<PathBuf>,

    /// systemd-resolved's list of upstream servers, asked too when the
    /// resolv.conf names its stub 127.0.0.53 or 127.0.0.54 (default:
    /// $HOST_ROOT/run/systemd/resolve/resolv.conf).
    #[arg(long, value_name = "FILE")]
    pub resolved_conf: Option<PathBuf>,

    /// Time limit of each query, and of a TCP connection, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..=60000))]
    pub timeout_ms: u64,

    /// Ask over UDP (with neither --udp nor --tcp: both).
    #[arg(long)]
    pub udp: bool,

    /// Ask over TCP (with neither --udp nor --tcp: both).
    #[arg(long)]
    pub tcp: bool,

    /// The names must exist: NXDOMAIN, and NOERROR without an A or AAAA
    /// record, are errors too.
    #[arg(long)]
    pub must_exist: bool,
}

impl DnsArgs {
    fn transports(&self) -> Vec<Transport> {
        match (self.udp, self.tcp) {
            (true, false) => vec![Transport::Udp],
            (false, true) => vec![Transport::Tcp],
            _ => vec![Transport::Udp, Transport::Tcp],
        }
    }
}

fn parse_name(s: &str) -> Result<Name, String> {
    let mut name = Name::from_utf8(s.trim()).map_err(|e| format!("not a DNS name: {e}"))?;
    if name.num_labels() == 0 {
        return Err("not a DNS name: empty".into());
    }
    name.set_fqdn(true);
    Ok(name)
}

/// `IP`, `IP:PORT` or `[IPv6]:PORT`; port 53 when omitted.
pub fn parse_server(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, PORT));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not IP, IP:PORT or [IPv6]:PORT"))
}

/// How a resolver appears in its item: the address alone on port 53, else
/// with its port (`10.0.0.1:5353`, `[fd00::1]:5353`).
pub fn label(server: SocketAddr) -> String {
    if server.port() == PORT {
        server.ip().to_string()
    } else {
        server.to_string()
    }
}

/// The `nameserver` entries of a resolv.conf, in order, each an address on
/// port 53 or, when it is not an IP address, the text as written. An
/// IPv6 zone (`fe80::1%eth0`) is dropped.
pub fn nameservers(conf: &str) -> Vec<Result<SocketAddr, String>> {
    conf.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next())?
        })
        .map(|raw| {
            let ip = raw.split('%').next().unwrap_or(raw);
            ip.parse::<IpAddr>()
                .map(|ip| SocketAddr::new(ip, PORT))
                .map_err(|_| raw.to_string())
        })
        .collect()
}

/// Runs the check and prints its lines; `host_root` places the default
/// resolv.conf.
pub async fn run(args: DnsArgs, host_root: &str) -> ExitCode {
    for line in lines(&args, host_root).await {
        println!("{line}");
    }
    ExitCode::SUCCESS
}

/// The lines the check prints: the nameservers of the resolv.conf (and
/// of systemd-resolved's upstream list when it names resolved's stub), or
/// the `--server`s, each asked where it answers ([`node`]).
pub async fn lines(args: &DnsArgs, host_root: &str) -> Vec<String> {
    let asking = Asking {
        names: args.names.clone(),
        transports: args.transports(),
        must_exist: args.must_exist,
        timeout_ms: args.timeout_ms,
    };
    if !args.servers.is_empty() {
        let servers = unique(args.servers.clone());
        return asking.ask(&servers).await.concat();
    }
    let root = Path::new(host_root);
    let file = args
        .resolv_conf
        .clone()
        .unwrap_or_else(|| root.join("etc/resolv.conf"));
    let (mut servers, mut out) = match read_nameservers(&file) {
        Ok(found) => found,
        Err(line) => return vec![line],
    };
    if servers.iter().any(|s| node::is_resolved_stub(*s)) {
        let upstream = args
            .resolved_conf
            .clone()
            .unwrap_or_else(|| root.join(node::RESOLVED_CONF));
        // A stub without resolved's list (another resolver on that
        // address) leaves the stub alone to ask.
        if let Ok((more, _)) = read_nameservers(&upstream) {
            servers.extend(more);
        }
    }
    let servers = unique(servers);
    if root.as_os_str().is_empty() || root == Path::new("/") {
        // The resolv.conf is this process's own: its servers answer here.
        out.extend(asking.ask(&servers).await.concat());
        return out;
    }
    let netns = args
        .node_netns
        .clone()
        .unwrap_or_else(|| root.join(node::NODE_NETNS));
    out.extend(asking.ask_as_the_node(&servers, &netns).await.concat());
    out
}

/// The nameservers of the resolv.conf `file`, and an err line for each
/// entry that is not an address; `Err` the one line of a file that cannot
/// be read or names none.
fn read_nameservers(file: &Path) -> Result<(Vec<SocketAddr>, Vec<String>), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("err dns cannot read {}: {e}", file.display()))?;
    let mut servers = Vec::new();
    let mut out = Vec::new();
    for entry in nameservers(&text) {
        match entry {
            Ok(addr) => servers.push(addr),
            Err(raw) => out.push(format!(
                "err dns:{raw} nameserver in {} is not an IP address",
                file.display()
            )),
        }
    }
    if servers.is_empty() && out.is_empty() {
        return Err(format!("err dns no nameserver in {}", file.display()));
    }
    Ok((servers, out))
}

/// `servers` in order, each once.
fn unique(mut servers: Vec<SocketAddr>) -> Vec<SocketAddr> {
    let mut seen = Vec::new();
    servers.retain(|s| {
        let new = !seen.contains(s);
        seen.push(*s);
        new
    });
    servers
}

/// What each resolver is asked, owned, so that a thread in another
/// network namespace can ask it too.
#[derive(Clone, Debug)]
struct Asking {
    names: Vec<Name>,
    transports: Vec<Transport>,
    must_exist: bool,
    timeout_ms: u64,
}

impl Asking {
    /// The lines of each of `servers`, in its order, asked from this
    /// thread's network namespace.
    async fn ask(&self, servers: &[SocketAddr]) -> Vec<Vec<String>> {
        let timeout = Duration::from_millis(self.timeout_ms);
        let per_server = servers.iter().map(|server| async move {
            let checks = self.transports.iter().map(|t| async move {
                let outcome = query::ask(*server, *t, &self.names, timeout).await;
                let problems = verdict::problems(&outcome, self.must_exist, self.timeout_ms);
                verdict::line(&item(*server, *t), &problems)
            });
            futures::future::join_all(checks).await
        });
        futures::future::join_all(per_server).await
    }

    /// The lines of each of the node's `servers`, asked in the node's
    /// network namespace `netns`. Where that cannot be entered, a
    /// loopback server is skipped, with what would let it run, and the
    /// others are asked here.
    async fn ask_as_the_node(&self, servers: &[SocketAddr], netns: &Path) -> Vec<Vec<String>> {
        let why = match node::open(netns) {
            node::NodeNetns::Here => return self.ask(servers).await,
            node::NodeNetns::Elsewhere(ns) => {
                let asking = self.clone();
                let list = servers.to_vec();
                let inside = node::run_in(ns, netns, move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map(|rt| rt.block_on(asking.ask(&list)))
                })
                .await;
                match inside {
                    Ok(Ok(lines)) => return lines,
                    Ok(Err(e)) => format!("no runtime in the node's namespace: {e}"),
                    Err(why) => why,
                }
            }
            node::NodeNetns::Closed(why) => why,
        };
        let reachable: Vec<SocketAddr> = servers
            .iter()
            .copied()
            .filter(|s| !node::is_loopback(*s))
            .collect();
        let mut asked = self.ask(&reachable).await.into_iter();
        servers
            .iter()
            .map(|s| {
                if node::is_loopback(*s) {
                    self.transports
                        .iter()
                        .map(|t| format!(
                            "skip {} a loopback nameserver of the node answers only in the node's network namespace, and {why}: it needs enableSys (hostPID, privileged) or hostNetwork",
                            item(*s, *t)
                        ))
                        .collect()
                } else {
                    asked.next().unwrap_or_default()
                }
            })
            .collect()
    }
}

/// `dns:<server>/<udp|tcp>`.
fn item(server: SocketAddr, t: Transport) -> String {
    format!("dns:{}/{}", label(server), t.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_take_port_53_unless_given_and_print_it_only_then() {
        let s = |t: &str| parse_server(t).unwrap();
        assert_eq!(s("10.96.0.10"), "10.96.0.10:53".parse().unwrap());
        assert_eq!(s("10.96.0.10:5353"), "10.96.0.10:5353".parse().unwrap());
        assert_eq!(s("fd00::10"), "[fd00::10]:53".parse().unwrap());
        assert_eq!(s("[fd00::10]:5353"), "[fd00::10]:5353".parse().unwrap());
        assert!(parse_server("dns.example").is_err());
        assert!(parse_server("10.0.0.1:x").is_err());
        assert_eq!(label(s("10.96.0.10")), "10.96.0.10");
        assert_eq!(label(s("fd00::10")), "fd00::10");
        assert_eq!(label(s("127.0.0.1:5353")), "127.0.0.1:5353");
        assert_eq!(label(s("[::1]:5353")), "[::1]:5353");
    }

    #[test]
    fn resolv_conf_nameservers_are_read_in_order() {
        let conf = "# generated\nsearch svc.cluster.local\nnameserver 10.96.0.10\n\
                    nameserver   fe80::1%eth0\n;nameserver 1.1.1.1\nnameserver bogus\n\
                    nameserver\noptions ndots:5\n";
        assert_eq!(
            nameservers(conf),
            vec![
                Ok("10.96.0.10:53".parse().unwrap()),
                Ok("[fe80::1]:53".parse().unwrap()),
                Err("bogus".to_string()),
            ]
        );
    }

    #[test]
    fn names_are_absolute_and_must_be_names() {
        let n = parse_name("kubernetes.default.svc.cluster.local").unwrap();
        assert!(n.is_fqdn());
        assert_eq!(n.to_string(), "kubernetes.default.svc.cluster.local.");
        assert!(parse_name("").is_err());
        assert!(
            parse_name(&"a".repeat(64)).is_err(),
            "a label is at most 63"
        );
    }
}
