//! What the pages state in prose of the code, the scripts and the chart,
//! each against its single source, read when the test runs: the number of
//! items and of scripts of the default checks (the items docs/checks.md
//! lists, the files of scripts/), the names `checkSettings` may not set
//! (`combo_api::settings`), the causes of `InvalidSpec` (the operator's
//! validation and the names it finds taken), and the names the Helm chart
//! gives its objects (its templates, read as text).

use std::collections::BTreeSet;

use super::source::product_code;
use super::{assert_none, named, read, repo, section};

/// README.md and every page of docs/ but benchmarks.md, as `(path, text)`:
/// benchmarks.md keeps the figures of runs as they were measured, counts
/// included.
fn pages() -> Vec<(String, String)> {
    super::pages::pages()
        .into_iter()
        .filter(|(path, _)| path != "docs/benchmarks.md")
        .collect()
}

/// `text` with every run of whitespace one space, so that a statement
/// wrapped over lines reads as one.
fn folded(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every `` `code` `` span of `text`, in parentheses or not.
fn spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

// ---------------------------------------------------------------------------
// Counts of items and scripts

/// The items docs/checks.md lists under "## The items": the list entries
/// (at the start of a line) that begin with the item's name in backticks,
/// as the page counts them (`<mount point>` once, `io:<device>, else
/// io-errors` once).
fn checks_items() -> usize {
    let checks = read("docs/checks.md");
    let lines = section(&checks, 2, |t| t == "The items")
        .expect("docs/checks.md has a heading `## The items`");
    let n = lines.iter().filter(|l| l.starts_with("* `")).count();
    assert!(
        n > 30,
        "only {n} items read from docs/checks.md: the reader is broken"
    );
    n
}

/// The default scripts: the `*.sh` files of each category directory of
/// scripts/ (`scripts/lib/` holds what they share, no check).
fn default_scripts() -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(repo().join("scripts")).expect("scripts/ is readable") {
        let dir = entry.expect("directory entry").path();
        if !dir.is_dir() || dir.file_name().is_some_and(|f| f == "lib") {
            continue;
        }
        n += std::fs::read_dir(&dir)
            .expect("a category directory")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sh"))
            })
            .count();
    }
    assert!(
        n > 20,
        "only {n} scripts found under scripts/: the count is broken"
    );
    n
}

/// Each `<number> <noun>` of `text` (whitespace folded) that states a
/// count, with a few words around it: not a limit (`more than 1000 items`,
/// `at most 5 scripts`).
fn stated_counts(text: &str, noun: &str) -> Vec<(u64, String)> {
    const LIMITS: [&str; 4] = ["than", "most", "least", "to"];
    let text = folded(text);
    let words: Vec<&str> = text.split(' ').map(|w| w.trim_start_matches('(')).collect();
    let mut out = Vec::new();
    for (i, pair) in words.windows(2).enumerate() {
        let next = pair[1].trim_end_matches(|c: char| !c.is_alphanumeric());
        if next != noun {
            continue;
        }
        let Ok(n) = pair[0].replace(',', "").parse::<u64>() else {
            continue;
        };
        if i > 0 && LIMITS.contains(&words[i - 1]) {
            continue;
        }
        let around = words[i.saturating_sub(4)..(i + 3).min(words.len())].join(" ");
        out.push((n, around));
    }
    out
}

#[test]
fn every_count_of_items_and_scripts_a_page_states_is_the_real_one() {
    let real = [("items", checks_items()), ("scripts", default_scripts())];
    let mut problems = Vec::new();
    let mut stated = [0usize; 2];
    for (path, text) in pages() {
        for (k, (noun, n)) in real.iter().enumerate() {
            for (said, around) in stated_counts(&text, noun) {
                stated[k] += 1;
                if said != *n as u64 {
                    problems.push(format!(
                        "{path} says {said} {noun} (\"{around}\"); there are {n} \
                         (items: the entries of docs/checks.md, \"The items\"; \
                         scripts: scripts/<category>/*.sh)"
                    ));
                }
            }
        }
    }
    assert!(
        stated.iter().all(|s| *s > 0),
        "no page states the number of items or of scripts ({stated:?}): the scan is broken"
    );
    assert_none("counts that are not the real ones", problems);
}

#[test]
fn the_count_reader_takes_counts_and_leaves_limits() {
    let text = "ships 66 items over\ndisks; a check that prints more than 1000\nitems; \
                (35 scripts, 8 at a time); at most 2 items; 5,000 items in all";
    let got: Vec<u64> = stated_counts(text, "items")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(got, [66, 5000]);
    let got: Vec<u64> = stated_counts(text, "scripts")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(got, [35]);
}

// ---------------------------------------------------------------------------
// Reserved names of checkSettings

/// The sentences of `text` (list entries and paragraphs, whitespace
/// folded, split after `. ` outside code spans).
fn sentences(text: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        let starts_entry = t.starts_with("* ") || t.starts_with("- ") || t.starts_with('#');
        if t.is_empty() || starts_entry || t.starts_with('|') {
            blocks.push(std::mem::take(&mut current));
        }
        current.push(' ');
        current.push_str(t);
    }
    blocks.push(current);
    let mut out = Vec::new();
    for block in blocks.iter().map(|b| folded(b)) {
        let (mut sentence, mut code) = (String::new(), false);
        let mut chars = block.chars().peekable();
        while let Some(c) = chars.next() {
            sentence.push(c);
            match c {
                '`' => code = !code,
                '.' if !code && chars.peek() == Some(&' ') => {
                    out.push(std::mem::take(&mut sentence).trim().to_string());
                }
                _ => {}
            }
        }
        if !sentence.trim().is_empty() {
            out.push(sentence.trim().to_string());
        }
    }
    out
}

/// The variable names and prefixes a sentence names in backticks: `NAME`,
/// and `PREFIX_` for `` `PREFIX_` `` or `` `PREFIX_*` ``.
fn variable_names(sentence: &str) -> BTreeSet<String> {
    spans(sentence)
        .into_iter()
        .map(|s| s.trim_end_matches('*').to_string())
        .filter(|s| {
            s.starts_with(|c: char| c.is_ascii_uppercase())
                && s.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .collect()
}

/// The reserved names and prefixes, as `combo_api::settings` has them.
fn reserved() -> BTreeSet<String> {
    combo_api::settings::RESERVED
        .iter()
        .chain(combo_api::settings::RESERVED_PREFIXES)
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn every_list_of_reserved_names_is_the_whole_list() {
    let reserved = reserved();
    let mut problems = Vec::new();
    let mut lists = Vec::new();
    for (path, text) in pages() {
        for sentence in sentences(&text) {
            let names = variable_names(&sentence);
            if !sentence.to_lowercase().contains("reserved") || names.is_disjoint(&reserved) {
                continue;
            }
            lists.push(path.clone());
            let missing: Vec<&String> = reserved.difference(&names).collect();
            let extra: Vec<&String> = names.difference(&reserved).collect();
            if !missing.is_empty() || !extra.is_empty() {
                problems.push(format!(
                    "{path}: the reserved names of \"{}\" lack {missing:?} and add {extra:?} \
                     (a prefix is written `PREFIX_` or `PREFIX_*`)",
                    sentence.chars().take(80).collect::<String>()
                ));
            }
        }
    }
    assert!(
        lists.iter().any(|p| p == "docs/checks.md"),
        "docs/checks.md lists no reserved names (found in {lists:?}): the scan is broken"
    );
    assert_none("lists of reserved names", problems);
}

#[test]
fn the_sentence_reader_finds_a_list_of_reserved_names() {
    let text =
        "Intro. Names are\nreserved: `HOST_ROOT`, `PATH` and any name starting with `LC_`,\n\
                `KUBERNETES_*`; see `checkSettings.X_Y: bad`. Next one.\n\n* `A_B`\n";
    let s = sentences(text);
    assert_eq!(s.len(), 4, "{s:?}");
    assert!(s[1].starts_with("Names are reserved:"), "{s:?}");
    assert_eq!(
        variable_names(&s[1]),
        ["HOST_ROOT", "KUBERNETES_", "LC_", "PATH"]
            .map(String::from)
            .into()
    );
    assert_eq!(s[3], "* `A_B`");
}

// ---------------------------------------------------------------------------
// Causes of InvalidSpec

/// The spec fields of the Debugger CRD (`categories`, `configMap`, ...).
fn debugger_spec_fields() -> BTreeSet<String> {
    let crd: serde_yaml::Value =
        serde_yaml::from_str(&read("config/crd/kubecombo.io_debuggers.yaml")).expect("the CRD");
    let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    let fields: BTreeSet<String> = props
        .as_mapping()
        .expect("the Debugger CRD has spec properties")
        .keys()
        .filter_map(|k| k.as_str().map(String::from))
        .collect();
    assert!(fields.len() > 10, "only {fields:?} read from the CRD");
    fields
}

/// `snake_case` as `camelCase`.
fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// The validation's part that makes `InvalidSpec`: the body of
/// `validate::check` up to where its problems are turned into the reason.
fn invalid_spec_checks() -> String {
    let code = read("operator/src/core/validate.rs");
    let body = code
        .split("pub fn check(")
        .nth(1)
        .expect("operator/src/core/validate.rs has `pub fn check(`");
    body.split("if !problems.is_empty()")
        .next()
        .expect("a body")
        .to_string()
}

/// The spec fields (as the CRD spells them) `code` reads: `spec.<field>`
/// not followed by `(`.
fn spec_fields_read(code: &str) -> BTreeSet<String> {
    code.match_indices("spec.")
        .filter_map(|(i, _)| {
            let rest = &code[i + "spec.".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0 && !rest[end..].starts_with('(')).then(|| camel(&rest[..end]))
        })
        .collect()
}

/// The kinds of the objects whose name, held by another owner, makes the
/// Debugger `InvalidSpec`: the `kind` of every `NotOwned` the operator
/// makes.
fn taken_kinds() -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for text in product_code("operator/src") {
        for (i, _) in text.match_indices("not_owned(\"") {
            let rest = &text[i + "not_owned(\"".len()..];
            kinds.extend(rest.split('"').next().map(String::from));
        }
        for (i, _) in text.match_indices("NotOwned {") {
            let rest: String = text[i..].chars().take(120).collect();
            if let Some((_, after)) = rest.split_once("kind: \"") {
                kinds.extend(after.split('"').next().map(String::from));
            }
        }
    }
    assert!(kinds.len() >= 3, "only {kinds:?} found as taken kinds");
    kinds
}

/// The list of docs/operator.md, "Validation, status and Events", that
/// follows the line naming reason `InvalidSpec`: its entries, whitespace
/// folded.
fn invalid_spec_list() -> Vec<String> {
    let operator = read("docs/operator.md");
    let lines = section(&operator, 2, |t| t == "Validation, status and Events")
        .expect("docs/operator.md has `## Validation, status and Events`");
    let start = lines
        .iter()
        .position(|l| l.contains("reason `InvalidSpec`"))
        .expect("the section names reason `InvalidSpec` before its list");
    let mut entries: Vec<String> = Vec::new();
    for line in lines[start + 1..]
        .iter()
        .skip_while(|l| !l.starts_with("* "))
    {
        if let Some(entry) = line.strip_prefix("* ") {
            entries.push(entry.to_string());
        } else if line.starts_with("  ") && !entries.is_empty() {
            entries.last_mut().expect("an entry").push_str(line);
        } else {
            break;
        }
    }
    let entries: Vec<String> = entries.iter().map(|e| folded(e)).collect();
    assert!(
        entries.len() >= 5,
        "only {entries:?} read as the InvalidSpec list"
    );
    entries
}

#[test]
fn the_invalid_spec_list_names_every_cause_the_validation_has() {
    let list = invalid_spec_list();
    let text = list.join("\n");
    let spec_fields = debugger_spec_fields();
    let read_by_check = spec_fields_read(&invalid_spec_checks());
    assert!(
        read_by_check.len() >= 8 && read_by_check.is_subset(&spec_fields),
        "the fields read from validate::check, {read_by_check:?}, are not all CRD fields: \
         the reader is broken"
    );
    let named_in_list: BTreeSet<String> = list
        .iter()
        .flat_map(|e| spans(e))
        .filter_map(|span| {
            let field: String = span.chars().take_while(char::is_ascii_alphabetic).collect();
            spec_fields.contains(&field).then_some(field)
        })
        .collect();
    let mut problems: Vec<String> = read_by_check
        .difference(&named_in_list)
        .map(|f| format!("the validation checks `{f}`, which no entry of the list names"))
        .collect();
    problems.extend(named_in_list.difference(&read_by_check).map(|f| {
        format!("the list names `{f}`, which the validation does not check for InvalidSpec")
    }));
    for kind in taken_kinds() {
        let word = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()) == kind;
        if !text
            .split(|c: char| c.is_whitespace() || c == '\'')
            .any(word)
        {
            problems.push(format!(
                "a {kind} of the Debugger's held by another owner is InvalidSpec; no entry names {kind}"
            ));
        }
    }
    let name_max = read("operator/src/core/validate.rs")
        .lines()
        .find_map(|l| l.strip_prefix("pub const NAME_MAX: usize = "))
        .and_then(|v| v.trim_end_matches(';').parse::<usize>().ok())
        .expect("operator/src/core/validate.rs has `pub const NAME_MAX: usize = N;`");
    if !text.contains(&format!("over {name_max} characters")) {
        problems.push(format!(
            "no entry says that a name over {name_max} characters is InvalidSpec"
        ));
    }
    assert_none(
        "docs/operator.md, \"Validation, status and Events\", the InvalidSpec list",
        problems,
    );
}

#[test]
fn the_validation_readers_find_fields_and_kinds() {
    let code = "if spec.enable_config_map && spec.config_map == spec.summary_name(name) {\n\
                for s in spec.image_pull_secrets.iter() {}";
    assert_eq!(
        spec_fields_read(code),
        ["configMap", "enableConfigMap", "imagePullSecrets"]
            .map(String::from)
            .into()
    );
    let kinds = taken_kinds();
    for kind in ["ConfigMap", "DaemonSet", "Pod"] {
        assert!(kinds.contains(kind), "{kinds:?}");
    }
}

// ---------------------------------------------------------------------------
// Names the Helm chart installs

/// The chart's default full name: the `default` of the helper
/// `kube-combo.fullname` (`combo-operator`).
fn chart_fullname(helpers: &str) -> String {
    helpers
        .split("define \"kube-combo.fullname\"")
        .nth(1)
        .and_then(|d| d.split("default \"").nth(1))
        .and_then(|d| d.split('"').next())
        .expect("_helpers.tpl defines kube-combo.fullname with a default")
        .to_string()
}

/// `(kind, metadata.name)` of every object of the template `text`, the
/// name rendered for a release as a page writes it: the full name for
/// its helpers, `<release namespace>` and `<release name>` for the
/// release's. A name that stays a template expression is left out.
fn template_names(text: &str, fullname: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for doc in text.split("\n---") {
        let kind = doc.lines().find_map(|l| l.strip_prefix("kind: "));
        let name = doc
            .lines()
            .skip_while(|l| !l.starts_with("metadata:"))
            .find_map(|l| l.strip_prefix("  name: "));
        let (Some(kind), Some(name)) = (kind, name) else {
            continue;
        };
        let rendered = name
            .trim()
            .replace("{{ $fullname }}", fullname)
            .replace("{{ include \"kube-combo.fullname\" . }}", fullname)
            .replace(
                "{{ include \"kube-combo.serviceAccountName\" . }}",
                fullname,
            )
            .replace("{{ .Release.Namespace }}", "<release namespace>")
            .replace("{{ .Release.Name }}", "<release name>");
        if !rendered.contains("{{") {
            out.push((kind.trim().to_string(), rendered));
        }
    }
    out
}

/// Every object name the chart's templates give, as `(kind, name)`.
fn chart_names() -> Vec<(String, String)> {
    let dir = repo().join("deploy/helm/kube-combo/templates");
    let fullname = chart_fullname(&read("deploy/helm/kube-combo/templates/_helpers.tpl"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the chart's templates/")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let names: Vec<(String, String)> = files
        .iter()
        .flat_map(|p| template_names(&std::fs::read_to_string(p).expect("a template"), &fullname))
        .collect();
    assert!(
        names.iter().any(|(k, _)| k == "ClusterRole"),
        "no ClusterRole read from the chart's templates: {names:?}"
    );
    names
}

#[test]
fn the_names_the_pages_give_the_helm_install_are_the_charts() {
    let names = chart_names();
    let rendered: BTreeSet<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
    let mut problems = Vec::new();
    // A name for a release's namespace is a Helm name, on any page (the
    // placeholder alone, or a `-<release namespace>` suffix, is no name).
    for (path, text) in pages() {
        for span in spans(&folded(&text)) {
            let name = span.contains("<release namespace>")
                && span.starts_with(|c: char| c.is_ascii_alphanumeric());
            if name && !rendered.contains(span.as_str()) {
                problems.push(format!(
                    "{path} names `{span}`, which the chart's templates do not render"
                ));
            }
        }
    }
    // The Helm section of install.md: its object names (outside
    // parentheses: there it compares with the manifest) are the chart's,
    // and it names every cluster-wide one.
    let install = read("docs/install.md");
    let helm = section(&install, 3, |t| t == "Helm")
        .expect("docs/install.md has `### Helm`")
        .join("\n");
    let fullname = chart_fullname(&read("deploy/helm/kube-combo/templates/_helpers.tpl"));
    let stated: BTreeSet<String> = named(&folded(&helm))
        .into_iter()
        .filter(|s| s.starts_with(&fullname))
        .collect();
    for name in stated.iter().filter(|n| !rendered.contains(n.as_str())) {
        problems.push(format!(
            "docs/install.md, \"Helm\", names `{name}`, which the chart's templates do not render"
        ));
    }
    for (kind, name) in names.iter().filter(|(k, _)| k.starts_with("Cluster")) {
        if !stated.contains(name) {
            problems.push(format!(
                "the chart makes the {kind} `{name}`, which docs/install.md, \"Helm\", does not name"
            ));
        }
    }
    assert_none("Helm names", problems);
}

#[test]
fn the_template_reader_renders_names_for_a_release() {
    let helpers =
        "{{- define \"kube-combo.fullname\" -}}\n{{- default \"combo-operator\" .Values.x }}";
    assert_eq!(chart_fullname(helpers), "combo-operator");
    let text = "{{- $fullname := include \"kube-combo.fullname\" . }}\napiVersion: v1\n\
                kind: ClusterRole\nmetadata:\n  name: {{ $fullname }}-{{ .Release.Namespace }}\n\
                rules: []\n---\nkind: Service\nmetadata:\n  name: {{ .Values.odd }}\n---\n\
                kind: Deployment\nmetadata:\n  name: {{ include \"kube-combo.fullname\" . }}\n\
                spec:\n  template:\n    metadata:\n      name: x\n";
    assert_eq!(
        template_names(text, "combo-operator"),
        [
            (
                "ClusterRole".into(),
                "combo-operator-<release namespace>".into()
            ),
            ("Deployment".into(), "combo-operator".into())
        ]
    );
}
