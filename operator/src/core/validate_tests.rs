use super::*;
use combo_testkit::fixtures::{debugger, pinger, DebuggerBuilder};

/// What validation says of `dbg`, named as its metadata names it, with
/// `found`.
fn verdict(dbg: &Debugger, found: Found) -> Result<RunAt, Rejected> {
    check(&dbg.name_any(), &dbg.spec, found)
}

#[test]
fn default_spec_is_valid() {
    assert!(verdict(&debugger("ops", "a").build(), Found::default()).is_ok());
}

#[test]
fn node_name_with_daemonset_is_invalid_spec() {
    let node = debugger("ops", "a").node_name("node-1");
    let err = verdict(&node.clone().build(), Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(err.to_string().contains("nodeName"));
    let pod = node.workload_type(WorkloadType::Pod).build();
    assert!(verdict(&pod, Found::default()).is_ok());
}

#[test]
fn bad_cron_and_bad_timestamp_are_invalid_spec() {
    for run_at in ["61 * * * *", "2026-13-01T00:00:00Z", "whenever"] {
        let dbg = debugger("ops", "a").run_at(run_at).build();
        let err = verdict(&dbg, Found::default()).unwrap_err();
        assert_eq!(err.reason(), "InvalidSpec", "{run_at}");
        assert!(err.to_string().contains("runAt"), "{err}");
    }
    for run_at in ["0 */6 * * *", "@daily", "2026-11-22T06:00:00Z"] {
        let dbg = debugger("ops", "a").run_at(run_at).build();
        assert!(verdict(&dbg, Found::default()).is_ok(), "{run_at}");
    }
}

#[test]
fn missing_pinger_is_pinger_not_found_and_found_pinger_is_valid() {
    let dbg = debugger("ops", "a").pinger("mesh").build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "PingerNotFound");
    assert!(err.to_string().contains("mesh"));
    assert!(verdict(
        &dbg,
        Found {
            pinger: Some(&pinger("ops", "mesh").build()),
            scripts: false
        }
    )
    .is_ok());
}

#[test]
fn enabled_features_need_their_names() {
    let dbg = debugger("ops", "a")
        .enable_pinger(true)
        .enable_config_map(true)
        .build();
    let msg = verdict(&dbg, Found::default()).unwrap_err().to_string();
    assert!(
        msg.contains("enablePinger") && msg.contains("enableConfigMap"),
        "{msg}"
    );
}

fn answer(code: u16, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, "")
            .with_code(code)
            .boxed(),
    )
}

#[test]
fn a_refused_workload_is_reported_at_once_and_an_outage_once_it_persists() {
    let quota = answer(403, "exceeded quota: q");
    let refused = refusal("DaemonSet", "check", &quota, 0).expect("reported at once");
    assert_eq!(refused.reason(), "WorkloadRefused");
    let msg = refused.to_string();
    assert!(
        msg.contains("DaemonSet check") && msg.contains("exceeded quota: q") && msg.contains("403"),
        "{msg}"
    );
    let psa = answer(
        403,
        "pods \"check-x\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"runner\" must not set securityContext.privileged=true)",
    );
    let msg = refusal("Pod", "check", &psa, 0).unwrap().to_string();
    assert!(
        msg.ends_with("label its namespace pod-security.kubernetes.io/enforce=privileged, or turn enableSys and hostNetwork off"),
        "Pod Security's refusal names the fix: {msg}"
    );
    let token = answer(500, "No API token found for service account");
    assert_eq!(
        refusal("Pod", "p", &token, 0),
        None,
        "a first 500 is retried"
    );
    assert!(
        refusal("Pod", "p", &token, 1).is_some(),
        "a second one is reported"
    );
    for busy in [409, 429] {
        assert_eq!(
            refusal("Pod", "p", &answer(busy, "busy"), 5),
            None,
            "{busy}"
        );
    }
    let unanswered = kube::Error::Service("connection refused".into());
    assert_eq!(refusal("Pod", "p", &unanswered, 5), None);
}

#[test]
fn a_name_over_63_characters_is_invalid_spec_because_labels_cannot_hold_it() {
    let long = debugger("ops", &"a".repeat(70)).build();
    let err = verdict(&long, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(err.to_string().contains("70 characters"), "{err}");
    let longest = debugger("ops", &"a".repeat(63)).build();
    assert!(verdict(&longest, Found::default()).is_ok());
}

#[test]
fn no_categories_is_invalid_spec() {
    let dbg = debugger("ops", "a").categories(&[]).build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert!(err.to_string().contains("categories is empty"), "{err}");
}

#[test]
fn a_summary_named_like_the_scripts_config_map_is_invalid_spec() {
    let scripts = debugger("ops", "a")
        .config_map("scripts")
        .summary_config_map("scripts");
    let found = Found {
        pinger: None,
        scripts: true,
    };
    let err = verdict(&scripts.clone().build(), found).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(
        err.to_string()
            .contains("summary would replace the scripts"),
        "{err}"
    );
    // The default summary name, `<name>-summary`, collides too.
    let default_summary = scripts
        .summary_config_map("")
        .config_map("a-summary")
        .build();
    assert!(verdict(&default_summary, found).is_err());
}

#[test]
fn a_missing_scripts_config_map_is_config_map_not_found() {
    let dbg = debugger("ops", "a").config_map("scripts").build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "ConfigMapNotFound");
    assert!(err.to_string().contains("\"scripts\""), "{err}");
    let found = Found {
        pinger: None,
        scripts: true,
    };
    assert!(verdict(&dbg, found).is_ok());
}

#[test]
fn config_map_names_must_be_valid_kubernetes_names() {
    let dbg = debugger("ops", "a").summary_config_map("Bad_Name").build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(
        err.to_string().starts_with(
            "summaryConfigMap \"Bad_Name\" is not a valid ConfigMap name: it contains 'B'; a name has lowercase letters"
        ),
        "{err}"
    );
    assert_eq!(name_problem("my-scripts.v1"), None);
    assert_eq!(name_problem(""), None);
    assert!(name_problem("-x")
        .unwrap()
        .starts_with("a part between dots is empty or starts or ends with '-'"));
    assert!(name_problem("a..b").is_some());
    assert_eq!(
        name_problem(&"a".repeat(254)).as_deref(),
        Some("it has 254 characters, at most 253")
    );
}

#[test]
fn a_priority_class_name_must_be_a_valid_name() {
    let class = |name: &str| {
        debugger("ops", "a")
            .spec_with(|s| s.priority_class_name = name.into())
            .build()
    };
    assert!(verdict(&class("system-node-critical"), Found::default()).is_ok());
    let err = verdict(&class("Node_Critical"), Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert!(
        err.to_string().starts_with(
            "priorityClassName \"Node_Critical\" is not a PriorityClass name: it contains 'N'"
        ),
        "{err}"
    );
}

#[test]
fn image_pull_secret_names_must_be_valid_secret_names_named_by_their_index() {
    let secrets = |names: &[&str]| debugger("ops", "a").image_pull_secrets(names).build();
    assert!(verdict(&secrets(&["regcred", "ghcr.io-pull"]), Found::default()).is_ok());
    let err = verdict(&secrets(&["regcred", "Reg_Cred", ""]), Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert_eq!(
        err.to_string(),
        "imagePullSecrets[1].name \"Reg_Cred\" is not a valid Secret name: it contains 'R'; a name has lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit; \
         imagePullSecrets[2].name \"\" is not a valid Secret name: it is empty; name a Secret of the Debugger's namespace"
    );
}

/// The message of the verdict on the Debugger `dbg` builds, with nothing
/// found.
fn message(dbg: DebuggerBuilder) -> String {
    verdict(&dbg.build(), Found::default())
        .unwrap_err()
        .to_string()
}

#[test]
fn each_message_names_the_field_and_the_value_as_written() {
    let node = message(debugger("ops", "a").node_name("node-1"));
    assert_eq!(
        node,
        "nodeName \"node-1\" is only allowed with workloadType pod, and this Debugger's is daemonset; leave nodeName empty or set workloadType: pod"
    );
    let pinger = message(debugger("ops", "a").enable_pinger(true));
    assert_eq!(
        pinger,
        "enablePinger is true but pinger is empty; name a Pinger of the Debugger's namespace"
    );
    let scripts = message(debugger("ops", "a").enable_config_map(true));
    assert_eq!(
        scripts,
        "enableConfigMap is true but configMap is empty; name the ConfigMap that holds the scripts"
    );
    let bad = message(debugger("ops", "a").config_map("My.Scripts"));
    assert!(
        bad.starts_with("configMap \"My.Scripts\" is not a valid ConfigMap name: it contains 'M'"),
        "{bad}"
    );
    let missing = message(debugger("ops", "a").pinger("mesh"));
    assert_eq!(
        missing,
        "pinger \"mesh\": Pinger not found in the Debugger's namespace"
    );
    let no_scripts = message(debugger("ops", "a").config_map("scripts"));
    assert_eq!(
        no_scripts,
        "configMap \"scripts\": ConfigMap not found in the Debugger's namespace; pods would wait for it"
    );
}

#[test]
fn a_bad_run_at_is_explained_in_the_form_it_was_written_in() {
    let run_at = |v: &str| message(debugger("ops", "a").run_at(v));
    assert_eq!(
        run_at("61 * * * *"),
        "runAt \"61 * * * *\" is not a valid cron expression: minute 61 is out of range 0-59"
    );
    assert_eq!(
        run_at("2026-13-45T00:00:00Z"),
        "runAt \"2026-13-45T00:00:00Z\" is not a valid RFC 3339 time: month 13 is out of range 1-12"
    );
    assert!(
        run_at("2026-11-22T06:00:00")
            .ends_with("it has no time zone; end it with Z for UTC or an offset such as +01:00"),
        "{}",
        run_at("2026-11-22T06:00:00")
    );
}

#[test]
fn check_settings_of_the_catalogue_with_values_of_their_kind_are_valid() {
    let dbg = debugger("ops", "a")
        .check_setting("DISK_USAGE_MAX_PERCENT", "85")
        .check_setting("DISK_IGNORE_MOUNTS", "/mnt/scratch*")
        .check_setting("NET_DROPS_MAX_PERCENT", "0.5")
        .check_setting("MEM_AVAILABLE_MIN_PERCENT", "5")
        .check_setting("SVC_IGNORE_UNITS", "snapd* apt-daily.service")
        .build();
    assert!(verdict(&dbg, Found::default()).is_ok());
}

#[test]
fn an_unknown_check_setting_is_invalid_spec_naming_it() {
    let dbg = debugger("ops", "a")
        .check_setting("DISK_USAGE_MAX", "85")
        .check_setting("DISK_USAGE_MAX_PERCENT", "85")
        .build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    let msg = err.to_string();
    assert!(
        msg.contains("checkSettings.DISK_USAGE_MAX: unknown setting"),
        "{msg}"
    );
    assert!(
        !msg.contains("DISK_USAGE_MAX_PERCENT"),
        "the valid one is not named: {msg}"
    );
}

#[test]
fn a_reserved_check_setting_is_invalid_spec_naming_it() {
    for name in [
        "HOST_ROOT",
        "STATE_DIR",
        "KERNEL_LOG_FILE",
        "NODE_NAME",
        "PATH",
        "COMBO_RUNNER",
    ] {
        let dbg = debugger("ops", "a").check_setting(name, "/x").build();
        let err = verdict(&dbg, Found::default()).unwrap_err();
        assert_eq!(err.reason(), "InvalidSpec", "{name}");
        assert!(
            err.to_string()
                .contains(&format!("checkSettings.{name}: reserved")),
            "{err}"
        );
    }
}

#[test]
fn a_check_setting_of_the_wrong_kind_is_invalid_spec_naming_it_and_its_kind() {
    let dbg = debugger("ops", "a")
        .check_setting("DISK_USAGE_MAX_PERCENT", "abc")
        .check_setting("NET_STORAGE_TIMEOUT", "3s")
        .build();
    let err = verdict(&dbg, Found::default()).unwrap_err();
    assert_eq!(err.reason(), "InvalidSpec");
    assert_eq!(
        err.to_string(),
        r#"checkSettings.DISK_USAGE_MAX_PERCENT: "abc" is not an integer percent (0-100); checkSettings.NET_STORAGE_TIMEOUT: "3s" is not a number of seconds (an integer, 1 to 86400)"#
    );
}

#[test]
fn thresholds_out_of_one_to_twenty_runs_are_invalid_spec_naming_the_field() {
    let with = |failure: u32, success: u32| {
        debugger("ops", "a")
            .spec_with(|s| {
                s.failure_threshold = failure;
                s.success_threshold = success;
            })
            .build()
    };
    for (failure, success, field) in [
        (0, 1, "failureThreshold 0"),
        (21, 1, "failureThreshold 21"),
        (1, 0, "successThreshold 0"),
        (1, 21, "successThreshold 21"),
    ] {
        let err = verdict(&with(failure, success), Found::default()).unwrap_err();
        assert_eq!(err.reason(), "InvalidSpec", "{field}");
        assert!(err.to_string().starts_with(field), "{err}");
    }
    for (failure, success) in [(1, 1), (20, 20), (1, 20), (20, 1)] {
        let dbg = with(failure, success);
        assert!(
            verdict(&dbg, Found::default()).is_ok(),
            "{failure}, {success}"
        );
    }
}
