//! The scripts' state between runs through the built `combo-runner --once`
//! (docs/runner.md, "State between runs").

mod support;

use support::{once_yaml, Tree};

fn once(scripts: &Tree, state: &Tree) -> (i32, serde_yaml::Value) {
    let (code, y, _) = once_yaml(
        scripts.path(),
        &["--state-dir", state.path().to_str().unwrap()],
    );
    (code, y)
}

/// A counter check as the convention has it: the first run records a
/// baseline and says so with a skip; later runs report the change since.
const COUNTER: &str = r#"
now=$(cat "$COUNTER_FILE")
if [ ! -f "$STATE_DIR/baseline" ]; then
    echo "$now" > "$STATE_DIR/baseline"
    echo "skip events baseline recorded; counting from the next run"
    exit 0
fi
was=$(cat "$STATE_DIR/baseline")
echo "$now" > "$STATE_DIR/baseline"
if [ $((now - was)) -gt 0 ]; then
    echo "err events $((now - was)) since run $PREVIOUS_RUN_ID"
else
    echo "ok events"
fi
"#;

#[test]
fn a_counter_check_counts_from_its_previous_run() {
    let (scripts, state, data) = (Tree::new("st-s"), Tree::new("st-d"), Tree::new("st-c"));
    let counter = data.join("counter");
    std::fs::write(&counter, "10").unwrap();
    scripts.script(
        "net/counters.sh",
        &format!("COUNTER_FILE={}\n{COUNTER}", counter.display()),
    );
    let (code, y) = once(&scripts, &state);
    assert_eq!(code, 0, "a baseline is no failure: {y:?}");
    assert_eq!(
        y["net"]["events"]["skip"].as_str(),
        Some("baseline recorded; counting from the next run")
    );
    let first_run = y["runAt"].as_str().unwrap().replace(['-', ':'], "");
    assert_eq!(state.read("net/counters.sh/baseline"), "10\n");
    assert_eq!(state.read("last-run-id").trim(), first_run);

    let (code, y) = once(&scripts, &state);
    assert_eq!(code, 0, "{y:?}");
    assert_eq!(
        y["net"]["events"],
        serde_yaml::Value::Mapping(Default::default())
    );

    std::fs::write(&counter, "13").unwrap();
    let (code, y) = once(&scripts, &state);
    assert_eq!(code, 1);
    let msg = y["net"]["events"]["err"].as_str().unwrap();
    assert!(msg.starts_with("3 since run 20"), "{msg}");
}

#[test]
fn scripts_get_their_own_state_dir_the_previous_run_and_the_runner_binary() {
    let (scripts, state) = (Tree::new("st-env-s"), Tree::new("st-env-d"));
    let show = r#"echo "err env $STATE_DIR|$PREVIOUS_RUN_ID|$COMBO_RUNNER"
[ -d "$STATE_DIR" ] && [ -w "$STATE_DIR" ] && echo "ok writable"
"$COMBO_RUNNER" --version >/dev/null && echo "ok callable""#;
    scripts
        .script("disk/a.sh", show)
        .script("custom/disk.b.sh", show);
    let (_, y) = once(&scripts, &state);
    let env = |item: &str| -> Vec<String> {
        y["disk"][item]["err"]
            .as_str()
            .unwrap_or_else(|| panic!("{item}: {y:?}"))
            .split('|')
            .map(String::from)
            .collect()
    };
    let a = env("env");
    assert_eq!(a[0], state.join("disk/a.sh").to_str().unwrap());
    assert_eq!(a[1], "", "no previous run yet");
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_combo-runner")).unwrap();
    assert_eq!(std::fs::canonicalize(&a[2]).unwrap(), exe);
    assert!(std::path::Path::new(&a[2]).is_absolute());
    let b = env("b/env");
    assert_eq!(
        b[0],
        state.join("custom/disk.b.sh").to_str().unwrap(),
        "a ConfigMap key keeps state apart from the category's own scripts"
    );
    for item in ["writable", "callable", "b/writable", "b/callable"] {
        assert!(y["disk"].get(item).is_some(), "{item}: {y:?}");
    }
    let first_run = y["runAt"].as_str().unwrap().replace(['-', ':'], "");
    let (_, y) = once(&scripts, &state);
    let again: Vec<String> = y["disk"]["env"]["err"]
        .as_str()
        .unwrap()
        .split('|')
        .map(String::from)
        .collect();
    assert_eq!(again[1], first_run, "PREVIOUS_RUN_ID is the last run's id");
}

#[test]
fn a_state_dir_over_the_bound_is_reset_and_reported_once() {
    let (scripts, state) = (Tree::new("st-big-s"), Tree::new("st-big-d"));
    scripts.script(
        "mem/hoard.sh",
        r#"[ -f "$STATE_DIR/marker" ] && echo "ok had-state"
touch "$STATE_DIR/marker"
if [ ! -f "$STATE_DIR/done-once" ]; then
    head -c 2000000 /dev/zero > "$STATE_DIR/big"
    mkdir -p "$STATE_DIR/sub" && echo x > "$STATE_DIR/sub/small"
fi
echo "ok hoard""#,
    );
    let (code, y) = once(&scripts, &state);
    assert_eq!(code, 1, "{y:?}");
    let msg = y["mem"]["hoard/state"]["err"].as_str().unwrap();
    assert!(
        msg.contains("over the bound of 1048576 bytes and was reset"),
        "{msg}"
    );
    assert!(state.list("mem/hoard.sh").is_empty(), "emptied");
    assert_eq!(
        scripts.list("mem/errlog").len(),
        1,
        "the reset is a failure with an errlog"
    );

    // Within the bound the state is kept, and no item is added.
    std::fs::write(state.join("mem/hoard.sh/done-once"), "").unwrap();
    let (code, y) = once(&scripts, &state);
    assert_eq!(code, 0, "{y:?}");
    assert!(y["mem"].get("hoard/state").is_none());
    let (_, y) = once(&scripts, &state);
    assert!(y["mem"].get("had-state").is_some(), "{y:?}");
}

#[test]
fn state_variables_the_runner_inherited_never_reach_a_script() {
    let (scripts, state) = (Tree::new("st-inh-s"), Tree::new("st-inh-d"));
    scripts.script("svc/a.sh", r#"echo "err env $PREVIOUS_RUN_ID|$STATE_DIR""#);
    let out = support::runner(
        &[
            "--once",
            "--output",
            "json",
            "--scripts",
            scripts.path().to_str().unwrap(),
            "--state-dir",
            state.path().to_str().unwrap(),
        ],
        &[("PREVIOUS_RUN_ID", "bogus"), ("STATE_DIR", "/etc")],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["svc"]["env"]["err"].as_str().unwrap(),
        format!("|{}", state.join("svc/a.sh").display())
    );
}
