use super::*;

#[test]
fn hosts_parse_as_addresses_or_names() {
    assert_eq!(
        parse_host("10.16.0.1"),
        Ok(Host::Ip("10.16.0.1".parse().unwrap()))
    );
    assert_eq!(parse_host("::1"), Ok(Host::Ip("::1".parse().unwrap())));
    assert_eq!(
        parse_host("Gateway.Example."),
        Ok(Host::Name("gateway.example".into()))
    );
    assert!(parse_host("10.0.0.300").is_err());
    assert!(parse_host("bad host").is_err());
    assert!(parse_host("-x.example").is_err());
    assert!(parse_host("").is_err());
}

#[test]
fn host_ports_need_a_port_and_brackets_for_v6() {
    assert_eq!(
        parse_host_port("10.96.0.1:443"),
        Ok((Host::Ip("10.96.0.1".parse().unwrap()), 443))
    );
    assert_eq!(
        parse_host_port("[::1]:53"),
        Ok((Host::Ip("::1".parse().unwrap()), 53))
    );
    assert_eq!(
        parse_host_port("kubernetes.default:443"),
        Ok((Host::Name("kubernetes.default".into()), 443))
    );
    assert!(matches!(
        parse_host_port("::1:53"),
        Err(TargetError::BadHostPort(_))
    ));
    assert!(matches!(
        parse_host_port("host:0"),
        Err(TargetError::BadPort(_))
    ));
    assert!(matches!(
        parse_host_port("host:70000"),
        Err(TargetError::BadPort(_))
    ));
    assert!(matches!(
        parse_host_port("host"),
        Err(TargetError::BadHostPort(_))
    ));
}

#[test]
fn dns_servers_default_to_port_53() {
    assert_eq!(
        parse_dns_server("10.96.0.10"),
        Ok("10.96.0.10:53".parse().unwrap())
    );
    assert_eq!(
        parse_dns_server("[::1]:5353"),
        Ok("[::1]:5353".parse().unwrap())
    );
    assert!(parse_dns_server("dns.example").is_err());
}

#[test]
fn invalid_targets_lists_every_bad_entry() {
    let spec = PingerSpec {
        ping: vec!["1.2.3.4".into(), "no way".into()],
        tcp_ping: vec!["x:0".into()],
        ..PingerSpec::default()
    };
    let bad = spec.invalid_targets();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(PingerSpec::default().invalid_targets().is_empty());
    assert!(PingerSpec::default().peers);
    assert_eq!(PingerSpec::default().metrics_port, 8080);
    assert_eq!(PingerSpec::default().max_peers, 20);
    assert_eq!(PingerSpec::default().max_loss_percent, 50);
}

#[test]
fn a_dns_entry_that_is_an_address_is_invalid_because_nothing_is_looked_up() {
    let spec = PingerSpec {
        dns: vec!["172.31.0.101".into(), "kubernetes.default".into()],
        ..PingerSpec::default()
    };
    assert_eq!(
        spec.invalid_targets(),
        ["dns: \"172.31.0.101\" is an address, not a name to resolve"]
    );
}
