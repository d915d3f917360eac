//! Whether one resolver passes, from the answers it gave (docs/runner.md,
//! "DNS check (`combo-runner dns`)"). Pure: the queries are in
//! [`super::query`].

/// What one query (one name, one record type) got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The server answered with response code `rcode` and `addresses`
    /// records of the type asked.
    Response { rcode: u16, addresses: usize },
    /// No answer within the time limit.
    Timeout,
    /// The query failed otherwise: the connection broke, the answer did not
    /// parse.
    Failed(String),
}

/// One query and what it got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The name, as printed.
    pub name: String,
    /// `A` or `AAAA`.
    pub rtype: &'static str,
    /// What came back.
    pub answer: Answer,
}

/// What asking one resolver over one transport came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No query could be sent: the TCP connection failed.
    Unreachable(String),
    /// Every query, in the order asked.
    Asked(Vec<Asked>),
}

/// NOERROR.
const NOERROR: u16 = 0;
/// NXDOMAIN.
const NXDOMAIN: u16 = 3;

/// The mnemonic of a DNS response code (RFC 1035, RFC 2136, RFC 6891).
pub fn rcode_name(rcode: u16) -> String {
    let name = match rcode {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        16 => "BADVERS",
        other => return format!("RCODE {other}"),
    };
    name.to_string()
}

/// What is wrong with a resolver, each problem naming the name and type it
/// concerns; empty when it passes.
///
/// An answer other than NOERROR or NXDOMAIN, a timeout or a failed query
/// is a problem. NXDOMAIN is one when the names must exist, and so is a
/// name that must exist and got NOERROR without a single A or AAAA record.
pub fn problems(outcome: &Outcome, must_exist: bool, timeout_ms: u64) -> Vec<String> {
    let asked = match outcome {
        Outcome::Unreachable(e) => return vec![e.clone()],
        Outcome::Asked(asked) => asked,
    };
    let mut found = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for a in asked {
        if !names.contains(&a.name.as_str()) {
            names.push(&a.name);
        }
        let about = format!("for {} {}", a.name, a.rtype);
        match &a.answer {
            Answer::Response { rcode: NOERROR, .. } => {}
            Answer::Response {
                rcode: NXDOMAIN, ..
            } if !must_exist => {}
            Answer::Response { rcode, .. } => found.push(format!("{} {about}", rcode_name(*rcode))),
            Answer::Timeout => found.push(format!("timeout after {timeout_ms}ms {about}")),
            Answer::Failed(e) => found.push(format!("{e} {about}")),
        }
    }
    if must_exist {
        for name in names {
            let of_name: Vec<&Asked> = asked.iter().filter(|a| a.name == name).collect();
            let all_noerror = of_name
                .iter()
                .all(|a| matches!(a.answer, Answer::Response { rcode: NOERROR, .. }));
            let addresses: usize = of_name
                .iter()
                .map(|a| match a.answer {
                    Answer::Response { addresses, .. } => addresses,
                    _ => 0,
                })
                .sum();
            if all_noerror && addresses == 0 {
                let types: Vec<&str> = of_name.iter().map(|a| a.rtype).collect();
                found.push(format!(
                    "NOERROR without an address for {name} {}",
                    types.join(" or ")
                ));
            }
        }
    }
    found
}

/// The script-contract line of `item`: `ok <item>`, or `err <item>` and
/// the problems joined with `; `.
pub fn line(item: &str, problems: &[String]) -> String {
    if problems.is_empty() {
        format!("ok {item}")
    } else {
        format!("err {item} {}", problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "kubernetes.default.svc.cluster.local";

    fn asked(rtype: &'static str, answer: Answer) -> Asked {
        Asked {
            name: NAME.into(),
            rtype,
            answer,
        }
    }

    fn response(rcode: u16, addresses: usize) -> Answer {
        Answer::Response { rcode, addresses }
    }

    #[test]
    fn an_address_for_each_type_passes() {
        let o = Outcome::Asked(vec![
            asked("A", response(0, 1)),
            asked("AAAA", response(0, 2)),
        ]);
        assert!(problems(&o, true, 2000).is_empty());
        assert_eq!(line("dns:10.96.0.10/udp", &[]), "ok dns:10.96.0.10/udp");
    }

    #[test]
    fn servfail_and_refused_are_named_with_the_name_and_type() {
        let o = Outcome::Asked(vec![
            asked("A", response(2, 0)),
            asked("AAAA", response(5, 0)),
        ]);
        let p = problems(&o, false, 2000);
        assert_eq!(
            p,
            vec![
                format!("SERVFAIL for {NAME} A"),
                format!("REFUSED for {NAME} AAAA")
            ]
        );
        assert_eq!(
            line("dns:10.96.0.10/tcp", &p[..1]),
            format!("err dns:10.96.0.10/tcp SERVFAIL for {NAME} A")
        );
    }

    #[test]
    fn nxdomain_fails_only_a_name_that_must_exist() {
        let o = Outcome::Asked(vec![
            asked("A", response(3, 0)),
            asked("AAAA", response(3, 0)),
        ]);
        assert!(
            problems(&o, false, 2000).is_empty(),
            "the resolver answered"
        );
        assert_eq!(
            problems(&o, true, 2000),
            vec![
                format!("NXDOMAIN for {NAME} A"),
                format!("NXDOMAIN for {NAME} AAAA")
            ]
        );
    }

    #[test]
    fn noerror_without_any_address_fails_a_name_that_must_exist() {
        let empty = Outcome::Asked(vec![
            asked("A", response(0, 0)),
            asked("AAAA", response(0, 0)),
        ]);
        assert_eq!(
            problems(&empty, true, 2000),
            vec![format!("NOERROR without an address for {NAME} A or AAAA")]
        );
        assert!(problems(&empty, false, 2000).is_empty());
        // IPv4 only is an address: no AAAA record is normal.
        let v4 = Outcome::Asked(vec![
            asked("A", response(0, 1)),
            asked("AAAA", response(0, 0)),
        ]);
        assert!(problems(&v4, true, 2000).is_empty());
    }

    #[test]
    fn timeouts_failures_and_unknown_codes_are_named() {
        let o = Outcome::Asked(vec![
            asked("A", Answer::Timeout),
            asked("AAAA", Answer::Failed("connection reset".into())),
        ]);
        assert_eq!(
            problems(&o, true, 1500),
            vec![
                format!("timeout after 1500ms for {NAME} A"),
                format!("connection reset for {NAME} AAAA")
            ],
            "no extra NOERROR complaint when the queries failed"
        );
        assert_eq!(rcode_name(4), "NOTIMP");
        assert_eq!(rcode_name(23), "RCODE 23");
        let unreachable = Outcome::Unreachable("tcp connection failed: refused".into());
        assert_eq!(
            problems(&unreachable, false, 1),
            vec!["tcp connection failed: refused".to_string()]
        );
    }
}
