//! The settings of the default checks: the environment variables the
//! scripts under `scripts/` read (their `# Environment:` headers, the
//! thresholds of docs/checks.md), each with the kind of value it takes.
//! A Debugger's `checkSettings` may set only these, and only to a value
//! of their kind; the operator checks them ([`check`]) and passes them to
//! the runner container as environment variables. A test keeps
//! [`SETTINGS`] and [`RESERVED`] equal to the scripts' headers.
//!
//! A new variable in a script is one line in [`SETTINGS`] (or in
//! [`RESERVED`] when the runner sets it).

/// The Debugger field that holds the settings.
pub const FIELD: &str = "checkSettings";

/// Largest integer of the kinds [`Kind::Count`], [`Kind::Millis`] and the
/// integer part of [`Kind::Decimal`]: nine digits. The scripts' shell
/// compares and computes in 64 bits; `18446744073709551615` is an
/// `Illegal number` to it and a count times 1024 must not wrap.
pub const INTEGER_MAX: u64 = 999_999_999;

/// Largest [`Kind::Seconds`]: a day, longer than any script may run
/// (`scriptTimeoutSeconds` is at most 3600).
pub const SECONDS_MAX: u64 = 86_400;

/// The kind of value a setting takes, as the scripts use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer from 0 to 100.
    Percent,
    /// A number of percent from 0 to 100, decimals allowed (`0.5`).
    DecimalPercent,
    /// An integer from 0 to [`INTEGER_MAX`]: a count, a size or a limit in
    /// the unit its name gives (`_MIB`, `_MBPS`, `_CELSIUS`, `_MTU`).
    Count,
    /// A number from 0 to [`INTEGER_MAX`], decimals allowed.
    Decimal,
    /// Whole seconds, 1 to [`SECONDS_MAX`].
    Seconds,
    /// Whole milliseconds, 1 to [`INTEGER_MAX`].
    Millis,
    /// Space-separated words, each a shell glob or a plain name.
    Globs,
    /// A DNS name.
    Hostname,
    /// An absolute path.
    Path,
    /// `true` or `false`.
    Bool,
    /// Any text; empty when the check says so.
    Text,
}

impl Kind {
    /// What a value of this kind is, in words: "is not {description}".
    pub fn description(self) -> &'static str {
        match self {
            Kind::Percent => "an integer percent (0-100)",
            Kind::DecimalPercent => "a percent (0-100, decimals allowed)",
            Kind::Count => "an integer count (0 to 999999999)",
            Kind::Decimal => "a number (0 to 999999999, decimals allowed)",
            Kind::Seconds => "a number of seconds (an integer, 1 to 86400)",
            Kind::Millis => "a number of milliseconds (an integer, 1 to 999999999)",
            Kind::Globs => "a space-separated list of shell globs",
            Kind::Hostname => "a DNS name",
            Kind::Path => "an absolute path",
            Kind::Bool => "true or false",
            Kind::Text => "text without control characters",
        }
    }

    /// The CRD schema's `pattern` for a value of this kind, so that the API
    /// server refuses a malformed value at apply. It says what
    /// [`Kind::accepts`] says, except the length of a [`Kind::Hostname`]
    /// (the schema's `maxLength` allows a trailing dot on 253 characters
    /// and nothing more precise), which only the operator checks.
    pub fn pattern(self) -> &'static str {
        match self {
            Kind::Percent => r"^(0|[1-9][0-9]?|100)$",
            Kind::DecimalPercent => r"^((0|[1-9][0-9]?)(\.[0-9]+)?|100(\.0+)?)$",
            Kind::Count => r"^(0|[1-9][0-9]{0,8})$",
            Kind::Decimal => r"^(0|[1-9][0-9]{0,8})(\.[0-9]+)?$",
            Kind::Seconds => {
                r"^([1-9][0-9]{0,3}|[1-7][0-9]{4}|8[0-5][0-9]{3}|86[0-3][0-9]{2}|86400)$"
            }
            Kind::Millis => r"^[1-9][0-9]{0,8}$",
            Kind::Globs | Kind::Text => r"^[^\x00-\x1f\x7f-\x9f]*$",
            Kind::Hostname => {
                r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$"
            }
            Kind::Path => r"^/[^\x00-\x1f\x7f-\x9f]*$",
            Kind::Bool => r"^(true|false)$",
        }
    }

    /// Whether `value` is of this kind.
    pub fn accepts(self, value: &str) -> bool {
        if value.chars().any(char::is_control) {
            return false;
        }
        match self {
            Kind::Percent => integer(value).is_some_and(|n| n <= 100),
            Kind::DecimalPercent => decimal(value).is_some_and(|n| n <= 100.0),
            Kind::Count => integer(value).is_some(),
            Kind::Decimal => decimal(value).is_some(),
            Kind::Seconds => integer(value).is_some_and(|n| (1..=SECONDS_MAX).contains(&n)),
            Kind::Millis => integer(value).is_some_and(|n| n >= 1),
            Kind::Globs | Kind::Text => true,
            Kind::Hostname => is_hostname(value),
            Kind::Path => value.starts_with('/'),
            Kind::Bool => value == "true" || value == "false",
        }
    }

    /// Values of this kind at its edges (its smallest and largest, zero,
    /// a fraction, empty text) and forms between: what the tests give the
    /// scripts and the API server, each of which must take them all.
    pub fn edges(self) -> &'static [&'static str] {
        match self {
            Kind::Percent => &["0", "100", "1", "50"],
            Kind::DecimalPercent => &["0", "100", "0.5", "99.99", "100.0", "7"],
            Kind::Count => &["0", "999999999", "1", "9000"],
            Kind::Decimal => &["0", "999999999.5", "0.25", "2"],
            Kind::Seconds => &["1", "86400", "30"],
            Kind::Millis => &["1", "999999999", "250"],
            Kind::Globs => &["", "*", "nothing-matches* x?"],
            Kind::Hostname => &["localhost", "example.invalid.", "a_b-c"],
            Kind::Path => &["/", "/nonexistent/file"],
            Kind::Bool => &["true", "false"],
            Kind::Text => &["", "08", "x y"],
        }
    }

    /// Values just past this kind's edges, each refused: a leading zero,
    /// one more than the largest, one less than the smallest, a control
    /// character.
    pub fn past_edges(self) -> &'static [&'static str] {
        match self {
            Kind::Percent => &["101", "08", "-1", "1.5"],
            Kind::DecimalPercent => &["100.5", "05.5", ".5", "5."],
            Kind::Count => &["1000000000", "00", "-1"],
            Kind::Decimal => &["1000000000", "00.5", "1e3"],
            Kind::Seconds => &["86401", "0", "07"],
            Kind::Millis => &["1000000000", "0", "010"],
            Kind::Globs | Kind::Text => &["a\nb", "\u{7f}"],
            Kind::Hostname => &["a..b", "-a", "not a name", ""],
            Kind::Path => &["relative/file", "", "/a\tb"],
            Kind::Bool => &["True", "yes", ""],
        }
    }

    fn is_number(self) -> bool {
        matches!(
            self,
            Kind::Percent
                | Kind::DecimalPercent
                | Kind::Count
                | Kind::Decimal
                | Kind::Seconds
                | Kind::Millis
        )
    }
}

/// `0`, `85`: decimal digits without a leading zero (the scripts' shell
/// reads `08` as octal), at most [`INTEGER_MAX`].
fn integer(s: &str) -> Option<u64> {
    let plain = s == "0" || (!s.is_empty() && !s.starts_with('0'));
    (plain && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
        .filter(|n| *n <= INTEGER_MAX)
}

/// `12`, `0.5`: an [`integer`] with, after a point, at least one digit.
fn decimal(s: &str) -> Option<f64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    integer(int)?;
    (!frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `08` -> `8`, `00` -> `0`, `05.5` -> `5.5`: the number written without
/// its leading zeros, when `s` is digits (and a fraction) that have some.
fn without_leading_zeros(s: &str) -> Option<String> {
    let (int, frac) = s.split_once('.').map_or((s, None), |(i, f)| (i, Some(f)));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || int.len() < 2 || !int.starts_with('0') || !frac.is_none_or(digits) {
        return None;
    }
    let trimmed = int.trim_start_matches('0');
    let int = if trimmed.is_empty() { "0" } else { trimmed };
    Some(match frac {
        Some(f) => format!("{int}.{f}"),
        None => int.to_string(),
    })
}

/// Letters, digits, `-` and `_` in labels of 1 to 63 between dots, at most
/// 253 in all; one trailing dot allowed.
fn is_hostname(s: &str) -> bool {
    let name = s.strip_suffix('.').unwrap_or(s);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// One setting: the variable and the kind of value it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Its kind of value.
    pub kind: Kind,
}

const fn s(name: &'static str, kind: Kind) -> Setting {
    Setting { name, kind }
}

/// Every setting of the default checks, by category (docs/checks.md
/// gives each one's default and what it changes).
pub const SETTINGS: &[Setting] = {
    use Kind::*;
    &[
        // every category: the time limit of one command a check runs
        s("CHECK_COMMAND_TIMEOUT", Seconds),
        // disk
        s("DISK_USAGE_MAX_PERCENT", Percent),
        s("DISK_INODES_MAX_PERCENT", Percent),
        s("DISK_FSTYPES", Globs),
        s("DISK_IGNORE_MOUNTS", Globs),
        s("DISK_EXCLUDE_MOUNTS", Globs),
        s("DISK_RO_IGNORE", Globs),
        s("DISK_IO_ERRORS_MAX", Count),
        s("DISK_FS_ERRORS_MAX", Count),
        s("DISK_IO_IGNORE_DEVICES", Globs),
        s("DISK_DEVICES", Globs),
        s("DISK_BUSY_MAX_PERCENT", Percent),
        s("DISK_AWAIT_MAX_MS", Millis),
        s("DISK_AWAIT_MIN_IOS", Count),
        s("DISK_SSD_WEAR_MAX_PERCENT", Percent),
        s("DISK_BAD_SECTORS_MAX", Count),
        s("DISK_DEV_DIR", Path),
        s("DISK_PSI_IO_MAX_PERCENT", Percent),
        // net
        s("NET_IGNORE_IFACES", Globs),
        s("NET_ERRORS_MAX", Count),
        s("NET_DROPS_MIN", Count),
        s("NET_DROPS_MAX_PERCENT", DecimalPercent),
        s("NET_DNS_NAME", Hostname),
        s("NET_RESOLV_CONF", Path),
        s("NET_CLUSTER_DNS", Text),
        s("NET_DNS_TRANSPORTS", Globs),
        s("NET_MTU_IFACES", Globs),
        s("NET_EXPECTED_MTU", Count),
        s("NET_SPEED_MIN_MBPS", Count),
        s("NET_BOND_MIN_SLAVES", Count),
        s("NET_BOND_MODE", Text),
        s("NET_ARPING_TIMEOUT", Seconds),
        s("NET_CONNTRACK_MAX_PERCENT", Percent),
        s("NET_CONNTRACK_FULL_MAX", Count),
        s("NET_UNREGISTER_MAX", Count),
        s("NET_TX_TIMEOUTS_MAX", Count),
        s("NET_NEIGHBOUR_FULL_MAX", Count),
        s("NET_STORAGE_TARGETS", Text),
        s("NET_STORAGE_TIMEOUT", Seconds),
        s("NET_STORAGE_MAX_MS", Millis),
        // mem
        s("MEM_AVAILABLE_MIN_PERCENT", Percent),
        s("MEM_SWAP_MAX_PERCENT", Percent),
        s("MEM_OOM_KILLS_MAX", Count),
        s("MEM_OOM_POD_CGROUPS", Globs),
        s("MEM_PSI_MAX_PERCENT", Percent),
        s("MEM_DIMM_VENDORS_MAX", Count),
        s("MEM_EXPECTED_MIB", Count),
        s("MEM_SIZE_TOLERANCE_PERCENT", Percent),
        s("MEM_ECC_UE_MAX", Count),
        s("MEM_ECC_CE_MAX", Count),
        s("MEM_MEMORY_ERRORS_MAX", Count),
        s("MEM_MEMORY_FAILURE_MAX", Count),
        s("MEM_ALLOC_FAILURES_MAX", Count),
        // svc
        s("SVC_IGNORE_UNITS", Globs),
        s("SVC_KUBELET_UNIT", Text),
        s("SVC_RUNTIME_UNITS", Globs),
        s("SVC_KUBELET_HEALTHZ", Text),
        s("SVC_HTTP_TIMEOUT", Seconds),
        s("SVC_RUNTIME_SOCKETS", Globs),
        s("SVC_RESTARTS_MAX", Count),
        s("SVC_CLOCK_MAX_OFFSET_MS", Millis),
        s("SVC_HUNG_TASKS_MAX", Count),
        s("SVC_SOFT_LOCKUPS_MAX", Count),
        s("SVC_OOPS_MAX", Count),
        s("SVC_RCU_STALLS_MAX", Count),
        s("SVC_HARDWARE_ERRORS_MAX", Count),
        s("SVC_CPU_USAGE_MAX_PERCENT", Percent),
        s("SVC_CPU_MIN_SECONDS", Seconds),
        s("SVC_LOAD_MAX_PER_CPU", Decimal),
        s("SVC_CPU_MODEL", Text),
        s("SVC_TEMP_MAX_CELSIUS", Count),
        s("SVC_PIDS_MAX_PERCENT", Percent),
        s("SVC_FILES_MAX_PERCENT", Percent),
        s("SVC_PSI_CPU_MAX_PERCENT", Percent),
    ]
};

/// Variables the runner or the operator sets itself, or that the scripts
/// read but a Debugger must not change: the script contract's
/// (docs/runner.md), the operator's (`keys::env`, `HOST_ROOT`), and the
/// shell's.
pub const RESERVED: &[&str] = &[
    "HOST_ROOT",
    "STATE_DIR",
    "KERNEL_LOG_FILE",
    "RUN_ID",
    "PREVIOUS_RUN_ID",
    "CATEGORY",
    "PATH",
    "HOME",
    "SHELL",
    "IFS",
    "LANG",
    "TMPDIR",
];

/// Prefixes of reserved variables: the runner's own (`COMBO_RUNNER`,
/// `COMBO_HOST_NETWORK`), the operator's (`keys::env`: `NODE_NAME`,
/// `POD_NAME`, `DEBUGGER_NAME`, ... and those it may add), the kubelet's
/// service links (`KUBERNETES_SERVICE_HOST`, which the `apiserver` check
/// reads), and the dynamic loader's and locale's.
pub const RESERVED_PREFIXES: &[&str] = &[
    "COMBO_",
    "NODE_",
    "POD_",
    "DEBUGGER_",
    "PINGER_",
    "KUBERNETES_",
    "LD_",
    "LC_",
];

/// The setting called `name`, if the default checks have one.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// Whether `name` is set by the runner or the operator, never by a Debugger.
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name) || RESERVED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Why `name: value` is not a valid setting, as a message that names it
/// (`checkSettings.DISK_USAGE_MAX_PERCENT: "abc" is not an integer percent
/// (0-100)`); `None` when it is one.
pub fn check(name: &str, value: &str) -> Option<String> {
    if is_reserved(name) {
        return Some(format!(
            "{FIELD}.{name}: reserved, the runner or the operator sets it; a Debugger may set only the settings of docs/checks.md"
        ));
    }
    let Some(setting) = setting(name) else {
        return Some(format!(
            "{FIELD}.{name}: unknown setting; the default checks read only the variables of docs/checks.md"
        ));
    };
    (!setting.kind.accepts(value)).then(|| {
        match without_leading_zeros(value).filter(|_| setting.kind.is_number()) {
            Some(plain) => format!(
                "{FIELD}.{name}: {value:?} has a leading zero, which the checks' shell reads as an octal number; write {plain:?}"
            ),
            None => format!(
                "{FIELD}.{name}: {value:?} is not {}",
                setting.kind.description()
            ),
        }
    })
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
