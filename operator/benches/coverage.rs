//! Coverage at 5,000 pods, without a cluster: for the default bounds
//! (maxPeers 20, minProbers 3) and for a small maxPeers (2) under the same
//! minProbers, the fewest probers any pod has, the longest list, and how
//! many pods' lists one pod joining or leaving rewrites. Panics when a pod
//! has fewer than minProbers probers. Prints;
//! `cargo bench -p combo-operator --bench coverage`
//! (docs/benchmarks.md#peer-coverage-at-5000-pods).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

use combo_api::peers;
use combo_operator::pinger::mesh::Mesh;

const PODS: u32 = 5000;

fn ip(i: u32) -> IpAddr {
    IpAddr::from((0x0a00_0000u32 + i).to_be_bytes())
}

/// The fewest and most probers of any pod, and the longest list.
fn coverage(m: &Mesh, names: &[String]) -> (usize, usize, usize) {
    let mut probers: BTreeMap<IpAddr, usize> = BTreeMap::new();
    let mut longest = 0;
    for n in names {
        let Some(list) = m.list(n) else { continue };
        let ips = peers::parse(&list).0;
        longest = longest.max(ips.len());
        for ip in ips {
            *probers.entry(ip).or_default() += 1;
        }
    }
    let live = names.iter().filter(|n| m.list(n).is_some()).count();
    let least = if probers.len() < live {
        0
    } else {
        *probers.values().min().unwrap()
    };
    (least, *probers.values().max().unwrap(), longest)
}

fn run(max: usize, min: usize) {
    let mut names: Vec<String> = (0..PODS).map(|i| format!("node-check-{i:05x}")).collect();
    let start = Instant::now();
    let mut m = Mesh::with_pods(
        max,
        min,
        names
            .iter()
            .zip(0..)
            .map(|(n, i)| (n.as_str(), vec![ip(i)])),
    );
    let built = start.elapsed();
    let (least, most, longest) = coverage(&m, &names);
    assert!(least >= min, "a pod has {least} probers, minProbers {min}");
    let start = Instant::now();
    let joined = m.set("node-check-new", vec![ip(PODS)]).len();
    let join = start.elapsed();
    names.push("node-check-new".into());
    let start = Instant::now();
    let left = m.remove("node-check-00017").len();
    let leave = start.elapsed();
    let (after, _, _) = coverage(&m, &names);
    assert!(
        after >= min,
        "after a join and a leave a pod has {after} probers"
    );
    println!(
        "maxPeers {max:>2}, minProbers {min}: probers per pod {least}..{most}, longest list {longest}; \
         all lists {built:.2?}; a join rewrites {joined} lists ({join:.2?}), a leave {left} ({leave:.2?})"
    );
}

fn main() {
    println!("{PODS} Ready pods");
    run(20, 0);
    run(20, 3);
    run(2, 0);
    run(2, 3);
}
