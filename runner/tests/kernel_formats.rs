//! The kernel's own words against every check that reads the kernel log.
//!
//! `runner/tests/kernel-formats/*.tsv` hold lines rendered from the format
//! strings of the kernel's source, one row per line shape, with the kernel
//! versions whose source prints it and the file it comes from
//! (docs/testing.md, "Kernel formats"). Each row is logged on its own, in
//! both forms a node can give the checks: `/dev/kmsg` records (with their
//! `SUBSYSTEM=`/`DEVICE=` dictionary lines) and `dmesg` text. A fault row
//! must turn exactly its item red, in its script, and nothing else; a
//! near-miss row (`green`) must turn nothing red.

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use support::scripts::{run_full, Items, KLOG_SCRIPTS};
use support::Tree;

/// The kernel versions whose sources the fixtures were rendered from.
const VERSIONS: [&str; 9] = [
    "4.14", "4.19", "5.4", "5.10", "5.15", "6.1", "6.6", "6.8", "6.19",
];

/// The record that both logs start with, logged before the baseline run.
const BOOT_LINE: &str = "Linux version 6.8.0 (gcc 13.2.0) #1 SMP PREEMPT_DYNAMIC";

/// One row of a fixture file.
struct Row {
    /// `file:line` of the row, for messages.
    at: String,
    /// The file's stem: the class of faults it holds.
    class: String,
    /// Kernel versions (or `npd` for node-problem-detector's samples).
    versions: Vec<String>,
    /// The source file the line comes from.
    source: String,
    /// The format string the kernel prints it with.
    format: String,
    /// `Some((script, item))` for a fault, `None` for a near-miss.
    expect: Option<(String, String)>,
    /// The records of the line, as /dev/kmsg escapes each one.
    records: Vec<String>,
    /// The records' dictionary, `KEY=value` pairs.
    dict: Vec<String>,
}

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel-formats")
}

/// Every row of every fixture file; panics on a malformed row, naming it.
fn rows() -> Vec<Row> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(formats_dir())
        .expect("runner/tests/kernel-formats")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixture file in {:?}", formats_dir());
    let mut rows = Vec::new();
    for f in files {
        let class = f.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let at = format!("{}:{}", f.file_name().unwrap().to_string_lossy(), n + 1);
            rows.push(parse_row(at, &class, line));
        }
    }
    rows
}

fn parse_row(at: String, class: &str, line: &str) -> Row {
    let cols: Vec<&str> = line.split('\t').collect();
    assert!(
        (5..=6).contains(&cols.len()),
        "{at}: a row has 5 or 6 tab-separated columns (versions, source, format, expect, line[, dict]), this one {}",
        cols.len()
    );
    let versions: Vec<String> = cols[0].split(',').map(|v| v.trim().to_string()).collect();
    for v in &versions {
        assert!(
            VERSIONS.contains(&v.as_str()) || v == "npd",
            "{at}: unknown kernel version {v:?} (one of {VERSIONS:?}, or npd)"
        );
    }
    assert!(!cols[1].is_empty(), "{at}: no source file");
    assert!(!cols[2].is_empty(), "{at}: no format string");
    let expect = match cols[3] {
        "green" => None,
        e => {
            let (script, item) = e
                .split_once(' ')
                .unwrap_or_else(|| panic!("{at}: expect is `green` or `<script> <item>`: {e:?}"));
            assert!(
                KLOG_SCRIPTS.contains(&script),
                "{at}: {script} is not a kernel-log script ({KLOG_SCRIPTS:?})"
            );
            Some((script.to_string(), item.to_string()))
        }
    };
    let records: Vec<String> = cols[4].split("\\n").map(str::to_string).collect();
    assert!(
        records.iter().all(|r| !r.is_empty()),
        "{at}: an empty record"
    );
    let dict = cols
        .get(5)
        .map(|d| d.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Row {
        at,
        class: class.to_string(),
        versions,
        source: cols[1].to_string(),
        format: cols[2].to_string(),
        expect,
        records,
        dict,
    }
}

/// The two forms of the kernel log a check reads.
#[derive(Clone, Copy, Debug)]
enum Form {
    Kmsg,
    Dmesg,
}

/// The log after the boot line: `records`, each with `dict`, in `form`.
fn render(form: Form, records: &[String], dict: &[String]) -> String {
    let mut out = match form {
        Form::Kmsg => format!("6,0,0,-;{BOOT_LINE}\n"),
        Form::Dmesg => format!("[    0.000000] {BOOT_LINE}\n"),
    };
    for (i, r) in records.iter().enumerate() {
        let usec = 100_000_000 + 1_000 * (i as u64 + 1);
        match form {
            Form::Kmsg => {
                writeln!(out, "3,{},{usec},-;{r}", i + 1).unwrap();
                for kv in dict {
                    writeln!(out, " {kv}").unwrap();
                }
            }
            Form::Dmesg => {
                // dmesg prints a record's own newlines as lines indented
                // under the message.
                let stamp = format!("[{:>5}.{:06}] ", usec / 1_000_000, usec % 1_000_000);
                let text = r.replace("\\x0a", &format!("\n{}", " ".repeat(stamp.len())));
                writeln!(out, "{stamp}{text}").unwrap();
            }
        }
    }
    out
}

/// A fixture tree with, per script, the state its baseline run left for a
/// log holding only the boot line in `form`.
struct Baseline {
    tree: Tree,
    form: Form,
}

impl Baseline {
    fn new(form: Form) -> Baseline {
        let tree = Tree::new(&format!("klog-formats-{form:?}"));
        tree.file("log", &render(form, &[], &[]), 0o644);
        let log = tree.join("log");
        for script in KLOG_SCRIPTS {
            let state = tree.join(&format!("baseline/{}", script.replace('/', "-")));
            std::fs::create_dir_all(&state).unwrap();
            let (items, skips) = run_full(
                script,
                tree.path(),
                &[
                    ("STATE_DIR", state.to_str().unwrap()),
                    ("KERNEL_LOG_FILE", log.to_str().unwrap()),
                ],
            );
            assert!(
                items.is_empty() && !skips.is_empty(),
                "{script} ({form:?}): the first run records the baseline: {items:?}"
            );
        }
        Baseline { tree, form }
    }

    /// The err items, as (script, item, message), of every kernel-log
    /// script's run after `row` was logged.
    fn errs_after(&self, row: &Row, slot: usize) -> Vec<(String, String, String)> {
        let dir = self.tree.join(&format!("row-{slot}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        std::fs::write(&log, render(self.form, &row.records, &row.dict)).unwrap();
        let mut errs = Vec::new();
        for script in KLOG_SCRIPTS {
            let name = script.replace('/', "-");
            let state = dir.join(&name);
            copy_dir(&self.tree.join(&format!("baseline/{name}")), &state);
            let (items, skips): (Items, _) = run_full(
                script,
                self.tree.path(),
                &[
                    ("STATE_DIR", state.to_str().unwrap()),
                    ("KERNEL_LOG_FILE", log.to_str().unwrap()),
                ],
            );
            assert!(skips.is_empty(), "{}: {script} skipped: {skips:?}", row.at);
            for (item, e) in items {
                if let Some(msg) = e {
                    errs.push((script.to_string(), item, msg));
                }
            }
        }
        errs
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// What went wrong with a row in one form, or `None` when it was judged
/// right.
fn judge(row: &Row, form: Form, errs: &[(String, String, String)]) -> Option<String> {
    let want = row.expect.as_ref();
    let hit = want.is_some_and(|(s, i)| errs.iter().any(|(es, ei, _)| es == s && ei == i));
    let others: Vec<_> = errs
        .iter()
        .filter(|(s, i, _)| want.is_none_or(|(ws, wi)| ws != s || wi != i))
        .collect();
    if (want.is_none() || hit) && others.is_empty() {
        return None;
    }
    let wanted = want.map_or("nothing red".to_string(), |(s, i)| {
        format!("err {i} of {s}")
    });
    Some(format!(
        "{} ({form:?}) {:?}: wanted {wanted}, got {errs:?}",
        row.at, row.records
    ))
}

#[test]
fn every_kernel_format_names_its_item_and_every_near_miss_stays_green() {
    let rows = rows();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let mut failures = Vec::new();
    // Per class and version: (lines, lines judged right in both forms).
    let mut counts: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    let verdicts: Vec<Vec<Option<String>>> = std::thread::scope(|s| {
        let forms = [Form::Kmsg, Form::Dmesg];
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let rows = &rows;
                s.spawn(move || {
                    let bases: Vec<Baseline> = forms.iter().map(|f| Baseline::new(*f)).collect();
                    rows.iter()
                        .enumerate()
                        .filter(|(i, _)| i % workers == w)
                        .map(|(i, row)| {
                            let v: Vec<Option<String>> = bases
                                .iter()
                                .map(|b| judge(row, b.form, &b.errs_after(row, i)))
                                .collect();
                            (i, v)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(usize, Vec<Option<String>>)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, v)| v).collect()
    });
    for (row, v) in rows.iter().zip(&verdicts) {
        let right = v.iter().all(Option::is_none);
        failures.extend(v.iter().flatten().cloned());
        for ver in &row.versions {
            let c = counts.entry((row.class.clone(), ver.clone())).or_default();
            c.0 += 1;
            c.1 += u64::from(right);
        }
    }
    let faults = rows.iter().filter(|r| r.expect.is_some()).count();
    let misses = rows.len() - faults;
    let mut table = String::new();
    for ((class, ver), (n, ok)) in &counts {
        writeln!(table, "{class:<8} {ver:<5} {ok:>4} of {n:<4} right").unwrap();
        combo_testkit::suite::record("kernel formats", &format!("{class} {ver}"), *n, *ok, 0);
    }
    println!(
        "kernel formats: {faults} fault lines and {misses} near-misses, each in /dev/kmsg records and dmesg text\n{table}"
    );
    assert!(
        failures.is_empty(),
        "{} of {} rows judged wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn a_row_with_a_wrong_column_count_or_version_is_refused() {
    for bad in [
        "6.1\tf.c\tfmt\tgreen",
        "7.0\tf.c\tfmt\tgreen\tline",
        "6.1\tf.c\tfmt\tdisk/none.sh io:sda\tline",
        "6.1\tf.c\tfmt\tio:sda\tline",
    ] {
        let r = std::panic::catch_unwind(|| parse_row("t:1".into(), "t", bad));
        assert!(r.is_err(), "accepted {bad:?}");
    }
    let ok = parse_row(
        "t:1".into(),
        "t",
        "6.1,6.8\tf.c\tfmt\tdisk/ioerrors.sh io:sda\ta\\nb\tSUBSYSTEM=block DEVICE=b8:0",
    );
    assert_eq!(ok.records, ["a", "b"]);
    assert_eq!(ok.dict, ["SUBSYSTEM=block", "DEVICE=b8:0"]);
    assert_eq!(ok.versions, ["6.1", "6.8"]);
}

#[test]
fn docs_show_a_format_as_the_kernel_prints_it() {
    let row = |format: &str, line: &str| {
        parse_row(
            "t:1".into(),
            "t",
            &format!("6.1\tf.c\t{format}\tgreen\t{line}"),
        )
    };
    assert_eq!(
        shown_format(&row("metadata I/O error in \\\"%pS\\\" at daddr", "x")),
        "metadata I/O error in \"%pS\" at daddr"
    );
    assert_eq!(
        shown_format(&row(
            "RCU Stall\\n",
            "Kernel panic - not syncing: RCU Stall"
        )),
        "Kernel panic - not syncing: RCU Stall"
    );
    assert_eq!(
        shown_format(&row("Detected Tx Unit Hang\\n  Tx Queue <%d>", "x")),
        "Detected Tx Unit Hang ..."
    );
    assert_eq!(
        shown_format(&row("Sense Key : %s [current] ", "x")),
        "Sense Key : %s [current]"
    );
}

#[test]
fn both_forms_render_the_same_records() {
    let records = ["one".to_string(), "two\\x0athree".to_string()];
    let k = render(Form::Kmsg, &records, &["SUBSYSTEM=block".to_string()]);
    assert_eq!(
        k,
        format!("6,0,0,-;{BOOT_LINE}\n3,1,100001000,-;one\n SUBSYSTEM=block\n3,2,100002000,-;two\\x0athree\n SUBSYSTEM=block\n")
    );
    let d = render(Form::Dmesg, &records, &[]);
    assert_eq!(
        d,
        format!("[    0.000000] {BOOT_LINE}\n[  100.001000] one\n[  100.002000] two\n               three\n")
    );
}

/// Where docs/checks.md holds the generated list of kernel messages.
const DOCS_BEGIN: &str = "<!-- kernel messages: begin -->";
const DOCS_END: &str = "<!-- kernel messages: end -->";

/// The item family a fault row names: `io:<device>` for `io:nvme0n1`.
fn family(script: &str, item: &str) -> String {
    match item.split_once(':') {
        Some((f, _)) if script.starts_with("net/") => format!("{f}:<interface>"),
        Some((f, _)) => format!("{f}:<device>"),
        None => item.to_string(),
    }
}

/// A row's format string as docs/checks.md shows it: the C escapes of
/// quotes undone, a trailing newline dropped, a format of several lines
/// shown by its first, and a panic's reason behind the words panic()
/// prints before it.
fn shown_format(row: &Row) -> String {
    let f = row.format.replace("\\\"", "\"");
    let f = f.strip_suffix("\\n").unwrap_or(&f);
    let f = match f.split_once("\\n") {
        Some((first, _)) => format!("{} ...", first.trim_end()),
        None => f.trim_end().to_string(),
    };
    const PANIC: &str = "Kernel panic - not syncing: ";
    let literal = f.split('%').next().unwrap_or_default();
    let reason = row.records.iter().any(|r| {
        r.strip_prefix(PANIC)
            .is_some_and(|rest| rest.starts_with(literal))
    });
    if reason && !literal.is_empty() && !f.starts_with(PANIC) {
        format!("{PANIC}{f}")
    } else {
        f
    }
}

/// The list of docs/checks.md: per item, each message the kernel prints
/// for it (its format string, the file it is in) and the versions whose
/// source has it.
fn docs_section(rows: &[Row]) -> String {
    // item -> (format, source) -> versions
    type Formats = BTreeMap<(String, String), Vec<String>>;
    let mut by_item: BTreeMap<(String, String), Formats> = BTreeMap::new();
    for row in rows
        .iter()
        .filter(|r| !r.versions.iter().any(|v| v == "npd"))
    {
        let Some((script, item)) = &row.expect else {
            continue;
        };
        let (format, source) = (shown_format(row), row.source.clone());
        let category = script.split('/').next().unwrap_or_default().to_string();
        let versions = by_item
            .entry((category, family(script, item)))
            .or_default()
            .entry((format, source))
            .or_default();
        for v in &row.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
    }
    let mut out = String::new();
    for ((category, item), formats) in &by_item {
        writeln!(out, "* {category} `{item}`").unwrap();
        for ((format, source), versions) in formats {
            let mut vs = versions.clone();
            vs.sort_by_key(|v| VERSIONS.iter().position(|k| k == v));
            writeln!(out, "  * `{format}` ({source}): {}", vs.join(", ")).unwrap();
        }
    }
    out
}

#[test]
fn checks_md_lists_every_kernel_message_with_its_versions() {
    let docs_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/checks.md");
    let docs = std::fs::read_to_string(&docs_path).unwrap();
    let want = docs_section(&rows());
    let (Some(b), Some(e)) = (docs.find(DOCS_BEGIN), docs.find(DOCS_END)) else {
        panic!("docs/checks.md has no {DOCS_BEGIN} ... {DOCS_END} section");
    };
    let have = &docs[b + DOCS_BEGIN.len()..e];
    if have.trim() != want.trim() {
        if std::env::var_os("COMBO_WRITE_DOCS").is_some() {
            let new = format!("{}{DOCS_BEGIN}\n{want}{}", &docs[..b], &docs[e..]);
            std::fs::write(&docs_path, new).unwrap();
            return;
        }
        panic!(
            "docs/checks.md's list of kernel messages is not what runner/tests/kernel-formats/ holds; \
             write it with COMBO_WRITE_DOCS=1 cargo test -p combo-runner --test kernel_formats checks_md"
        );
    }
}
