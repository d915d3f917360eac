//! The standalone binary: output, summary and exit codes.

mod support;

use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

fn pinger(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_combo-pinger"))
        .args(args)
        .env_remove("PINGER_NAME")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("combo-pinger runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn all_targets_answering_prints_a_line_per_round_and_exits_zero() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = listener.local_addr().unwrap().to_string();
    let udp = support::udp_echo("127.0.0.1:0".parse().unwrap(), Duration::ZERO, 100).to_string();
    let dns = support::dns_server("127.0.0.1:0".parse().unwrap(), 100).to_string();
    let (code, stdout, stderr) = pinger(&[
        "--ping",
        "127.0.0.1",
        "--ping",
        "::1",
        "--tcp",
        &tcp,
        "--udp",
        &udp,
        "--dns",
        "answer.test",
        "--dns-server",
        &dns,
        "--interval",
        "1",
        "--rounds",
        "2",
        "--count",
        "2",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let rounds: Vec<&str> = stdout.lines().filter(|l| l.contains(" round ")).collect();
    assert_eq!(rounds.len(), 10, "{stdout}");
    assert!(
        rounds.iter().all(|l| l.contains(": ok 2/2 received")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!(
        "tcp {tcp}: 2/2 rounds passed, 4/4 probes answered"
    )));
    assert!(
        stdout.ends_with("all 5 targets passed every round\n"),
        "{stdout}"
    );
}

#[test]
fn a_refused_target_fails_its_rounds_and_exits_one() {
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (code, stdout, _) = pinger(&[
        "--ping",
        "127.0.0.1",
        "--tcp",
        &closed,
        "--interval",
        "1",
        "--rounds",
        "1",
        "--count",
        "1",
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains(&format!(
        "round 1 tcp {closed}: FAIL 0/1 received, loss 100%, rtt min/avg/max - (loss 100% > 0%, refused)"
    )));
    assert!(stdout.contains("round 1 icmp 127.0.0.1: ok 1/1 received"));
    assert!(stdout.ends_with("1 of 2 targets failed\n"), "{stdout}");
}

#[test]
fn usage_errors_exit_two() {
    for args in [
        &["--ping", "not a host"][..],
        &["--tcp", "127.0.0.1"],
        &["--ping", "127.0.0.1", "--dns-server", "dns.example"],
        &["--ping", "127.0.0.1", "--interval", "0"],
        &["--bogus"],
        &[],
    ] {
        let (code, stdout, stderr) = pinger(args);
        assert_eq!(code, 2, "{args:?}: {stdout} {stderr}");
        assert!(!stderr.is_empty());
    }
}

#[test]
fn metrics_are_served_while_probing() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_combo-pinger"))
        .args([
            "--ping",
            "127.0.0.1",
            "--interval",
            "1",
            "--count",
            "1",
            "--rounds",
            "0",
            "--metrics-addr",
            &addr,
        ])
        .env_remove("PINGER_NAME")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut body = String::new();
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(250));
        if let Ok(text) = http_get(&addr, "/metrics") {
            if text.contains("combo_pinger_target_up{") {
                body = text;
                break;
            }
        }
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(
        body.contains(r#"combo_pinger_probes_total{kind="icmp",target="127.0.0.1",result="ok"}"#),
        "{body}"
    );
    assert!(body.contains(r#"combo_pinger_rtt_seconds_bucket{"#));
    assert!(body.contains(r#"combo_pinger_target_up{kind="icmp",target="127.0.0.1"} 1"#));
    assert_eq!(
        status.code(),
        Some(0),
        "SIGTERM ends with the summary's verdict"
    );
}

fn http_get(addr: &str, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)?;
    write!(s, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n")?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

#[test]
fn usage_errors_are_one_line_naming_the_binary_and_exit_two() {
    for (args, starts) in [
        (
            &["--bogus"][..],
            "combo-pinger: unexpected argument '--bogus' found",
        ),
        (
            &["--ping", "127.0.0.1", "--interval", "0"][..],
            "combo-pinger: invalid value '0' for '--interval <INTERVAL>'",
        ),
        (&["--tcp", "127.0.0.1"][..], "combo-pinger: "),
        (
            &["--ping", "127.0.0.1", "--metrics-addr", "203.0.113.1:1"][..],
            "combo-pinger: ",
        ),
    ] {
        let (code, _, stderr) = pinger(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(starts), "{args:?}: {stderr}");
    }
}
