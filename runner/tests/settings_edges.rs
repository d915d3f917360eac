//! Every value the operator accepts in `checkSettings` is one the scripts
//! can use: each setting at the edges of its kind (smallest, largest,
//! zero, a fraction, empty text...) through every default script that
//! reads it, against this machine, twice (the baseline, then the judging
//! run). No script may exit non-zero or complain of a number
//! (`Illegal number`, `integer expression expected`, ...).

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use combo_api::settings::{check, Setting, SETTINGS};
use support::scripts::{default_scripts, scripts_dir, state, CLEARED};
use support::Tree;

/// What a shell, `[`, `test`, `expr` or awk print for a number they cannot read.
const NUMBER_COMPLAINTS: [&str; 8] = [
    "Illegal number",
    "integer expression expected",
    "syntax error",
    "arithmetic",
    "invalid number",
    "bad number",
    "value too great",
    "invalid time interval",
];

/// Every default script, as `<category>/<file>`, with its text.
fn scripts() -> Vec<(String, String)> {
    default_scripts()
        .into_iter()
        .map(|rel| {
            let text = std::fs::read_to_string(scripts_dir().join(&rel)).unwrap();
            (rel, text)
        })
        .collect()
}

/// The settings each script reads: those its text names, and those only
/// the library it sources names (`CHECK_COMMAND_TIMEOUT`).
fn readers() -> BTreeMap<String, Vec<Setting>> {
    let common = std::fs::read_to_string(scripts_dir().join("lib/common.sh")).unwrap();
    let scripts = scripts();
    let mut map: BTreeMap<String, Vec<Setting>> = BTreeMap::new();
    for s in SETTINGS {
        let named: Vec<&String> = scripts
            .iter()
            .filter(|(_, text)| text.contains(s.name))
            .map(|(rel, _)| rel)
            .collect();
        let readers: Vec<&String> = if named.is_empty() && common.contains(s.name) {
            scripts.iter().map(|(rel, _)| rel).collect()
        } else {
            named
        };
        assert!(!readers.is_empty(), "no script reads {}", s.name);
        for rel in readers {
            map.entry(rel.clone()).or_default().push(*s);
        }
    }
    map
}

/// Runs `rel` against this machine with `env`; what is wrong with the run.
fn problem(rel: &str, env: &[(&str, &str)]) -> Option<String> {
    let mut cmd = Command::new(scripts_dir().join(rel));
    for v in CLEARED {
        cmd.env_remove(v);
    }
    let out = cmd
        .env("HOST_ROOT", "/")
        .envs(env.iter().copied())
        .output()
        .expect("script runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let complaint = NUMBER_COMPLAINTS
        .iter()
        .find(|c| stderr.contains(*c) || stdout.contains(*c));
    (!out.status.success() || complaint.is_some()).then(|| {
        format!(
            "{rel} with {env:?}: {}\nstderr: {stderr}stdout: {stdout}",
            out.status
        )
    })
}

#[test]
fn every_edge_value_is_one_the_operator_accepts() {
    for s in SETTINGS {
        for v in s.kind.edges() {
            assert_eq!(check(s.name, v), None, "{}={v:?}", s.name);
        }
    }
    // Just past the edges: refused, so the edges above are the edges.
    for s in SETTINGS {
        for v in s.kind.past_edges() {
            assert!(check(s.name, v).is_some(), "{}={v:?} was accepted", s.name);
        }
    }
}

#[test]
fn every_setting_at_every_edge_of_its_kind_runs_through_the_scripts_that_read_it() {
    // Nameservers from a loopback-only file: the DNS checks reach no other address.
    let t = Tree::new("settings-edges");
    t.file("resolv.conf", "nameserver 127.0.0.1\n", 0o644);
    let conf = t.join("resolv.conf");
    let conf = conf.to_str().unwrap();
    let mut problems = Vec::new();
    let mut runs = 0;
    for (rel, settings) in readers() {
        let profiles = settings.iter().map(|s| s.kind.edges().len()).max().unwrap();
        for i in 0..profiles {
            // Profile i: every setting the script reads at its kind's i-th edge.
            let mut env: Vec<(&str, &str)> = settings
                .iter()
                .map(|s| {
                    let values = s.kind.edges();
                    (s.name, values[i % values.len()])
                })
                .collect();
            if !settings.iter().any(|s| s.name == "NET_RESOLV_CONF") {
                env.push(("NET_RESOLV_CONF", conf));
            }
            let st = state(&t, &format!("{}-{i}", rel.replace('/', "_")));
            env.push(("STATE_DIR", &st));
            for _round in 0..2 {
                runs += 1;
                problems.extend(problem(&rel, &env));
            }
        }
    }
    assert!(runs > 100, "only {runs} runs: the scripts were not found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_number_the_scripts_shell_cannot_read_is_caught_by_this_test() {
    // The value of the report this test answers, which the operator now refuses.
    let t = Tree::new("settings-octal");
    let st = state(&t, "available");
    let p = problem(
        "mem/available.sh",
        &[("MEM_AVAILABLE_MIN_PERCENT", "08"), ("STATE_DIR", &st)],
    );
    assert!(p.is_some_and(|p| p.contains("Illegal number")));
}
