//! Keeps the layout readable (docs/contributing.md, "Where things are"):
//!
//! * no two modules of a crate import each other in a circle, directly or
//!   through others, and neither do its folders;
//! * no product file of any crate is over [`MAX_LINES`] lines, tests left
//!   out (`*_tests.rs` files and everything from `#[cfg(test)]` on);
//! * the operator's `core/` does no I/O, `edge/` (every writer's requests)
//!   uses only `metrics/`, and `summary/` and `pinger/` write through
//!   `edge/`, not `workload/`.
//!
//! An import is any `crate::`, `super::` or `self::` path in code (comments
//! left out), including each path of a `use crate::{...}` group.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a product file may have.
const MAX_LINES: usize = 400;

/// The crates held to these rules.
const CRATES: &[&str] = &[
    "api/src",
    "operator/src",
    "runner/src",
    "pinger/src",
    "plugin/src",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the operator crate sits in the repository")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The product part of a source file: up to its first `#[cfg(test)]`.
fn product_part(text: &str) -> &str {
    match text.find("\n#[cfg(test)]") {
        Some(i) => &text[..i + 1],
        None => text,
    }
}

/// The module path of `file` under `src` (`debugger/mod.rs` ->
/// `debugger`, `debugger/write.rs` -> `debugger::write`); `None` for the
/// crate roots, binaries and test files.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.last()?.clone();
    if matches!(last.as_str(), "lib" | "main") && parts.len() == 1
        || parts[0] == "bin"
        || last.ends_with("_tests")
    {
        return None;
    }
    if last == "mod" {
        parts.pop();
    }
    Some(parts.join("::"))
}

/// Every full path named after `crate::` in `code`, with `use` groups
/// spelled out: `crate::{a::b, c::{self, d}}` gives `a::b`, `c` and `c::d`.
fn crate_paths(code: &str) -> Vec<String> {
    paths_after(code, "crate::", |_| Some(String::new()))
}

/// The same for the paths `module` names from its parents and itself:
/// `super::x` in `a::b` is `a::x`, `super::super::x` is `x`, `self::x` is
/// `a::b::x`.
fn relative_paths(module: &str, code: &str) -> Vec<String> {
    let up = |levels: usize| {
        let parts: Vec<&str> = module.split("::").collect();
        (levels <= parts.len()).then(|| parts[..parts.len() - levels].join("::"))
    };
    let mut out = paths_after(code, "self::", |_| Some(module.to_string()));
    out.extend(paths_after(code, "super::", |rest| {
        let mut levels = 1;
        let mut r = rest;
        while let Some(next) = r.strip_prefix("super::") {
            levels += 1;
            r = next;
        }
        up(levels)
    }));
    out
}

/// The paths named after each `keyword` in `code` that does not continue
/// a name or a path, each under the prefix `base` gives for the text that
/// follows it (`None`: not a path of this crate).
fn paths_after(code: &str, keyword: &str, base: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(keyword) {
        let before = rest[..i].chars().last();
        rest = &rest[i + keyword.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let prefix = base(rest);
        while let Some(next) = rest.strip_prefix(keyword) {
            rest = next;
        }
        let Some(prefix) = prefix else { continue };
        let (paths, used) = tree(rest, &prefix);
        out.extend(paths);
        rest = &rest[used..];
    }
    out
}

/// Parses one path tree at the start of `s` under `prefix`: the paths it
/// names and the bytes it took.
fn tree(s: &str, prefix: &str) -> (Vec<String>, usize) {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else if name == "self" {
            prefix.to_string()
        } else {
            format!("{prefix}::{name}")
        }
    };
    let ident_end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    if ident_end > 0 {
        let path = join(&s[..ident_end]);
        if s[ident_end..].starts_with("::") {
            let (paths, used) = tree(&s[ident_end + 2..], &path);
            return (paths, ident_end + 2 + used);
        }
        return (vec![path], ident_end);
    }
    if !s.starts_with('{') {
        return (Vec::new(), 0);
    }
    let mut paths = Vec::new();
    let mut at = 1;
    loop {
        at += s[at..].len() - s[at..].trim_start().len();
        let (found, used) = tree(&s[at..], prefix);
        paths.extend(found);
        at += used;
        // Skip an ` as name` rename, then a comma or the closing brace.
        match s[at..].find([',', '}']) {
            Some(j) if s.as_bytes()[at + j] == b',' => at += j + 1,
            Some(j) => return (paths, at + j + 1),
            None => return (paths, s.len()),
        }
    }
}

/// The code of `text` without its comment lines.
fn code_only(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The operator's modules and the modules each imports.
type Graph = BTreeMap<String, BTreeSet<String>>;

fn operator_imports() -> Graph {
    imports_of("operator/src")
}

/// The modules of the crate at `dir` and the modules each imports.
fn imports_of(dir: &str) -> Graph {
    let src = repo().join(dir);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let sources: BTreeMap<String, String> = files
        .iter()
        .filter_map(|f| {
            let module = module_of(&src, f)?;
            let text = std::fs::read_to_string(f).expect("source file");
            Some((module, code_only(product_part(&text))))
        })
        .collect();
    imports(&sources)
}

/// Each module's imports, resolved to the longest module a path names;
/// a module's own path and those of its parents are left out.
fn imports(sources: &BTreeMap<String, String>) -> Graph {
    let mut graph = Graph::new();
    for (module, code) in sources {
        let mut uses = BTreeSet::new();
        for path in crate_paths(code)
            .into_iter()
            .chain(relative_paths(module, code))
        {
            let segments: Vec<&str> = path.split("::").collect();
            let target = (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|m| sources.contains_key(m));
            if let Some(t) = target {
                let is_self_or_parent = *module == t || module.starts_with(&format!("{t}::"));
                if !is_self_or_parent {
                    uses.insert(t);
                }
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// The same imports between the top-level units: folders and the files at
/// the crate's root.
fn folders(graph: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut out = Graph::new();
    for (from, tos) in graph {
        let entry = out.entry(top(from)).or_default();
        entry.extend(tos.iter().map(|t| top(t)).filter(|t| *t != top(from)));
    }
    out
}

/// A circle of imports in `graph`, as the modules in order, if any.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = stack.iter().position(|n| n == node).expect("open on stack");
                let mut found = stack[start..].to_vec();
                found.push(node.to_string());
                return Some(found);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, marks, stack) {
                return Some(c);
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut marks, &mut Vec::new()))
}

#[test]
fn no_two_operator_modules_import_each_other_in_a_circle() {
    let graph = operator_imports();
    assert!(graph.len() > 40, "modules found: {}", graph.len());
    assert!(
        graph["debugger::reconcile"].contains("debugger::observe"),
        "the imports are read: {:?}",
        graph["debugger::reconcile"]
    );
    if let Some(c) = circle(&graph) {
        panic!("modules import each other in a circle: {}", c.join(" -> "));
    }
}

#[test]
fn no_two_operator_folders_import_each_other_in_a_circle() {
    let graph = folders(&operator_imports());
    for folder in ["core", "debugger", "marks", "state", "workload"] {
        assert!(graph.contains_key(folder), "folder {folder} not found");
    }
    if let Some(c) = circle(&graph) {
        panic!("folders import each other in a circle: {}", c.join(" -> "));
    }
    assert!(
        graph["core"].is_empty(),
        "core/ is what the others share and uses none of them: {:?}",
        graph["core"]
    );
    // Every writer sends through edge/, which knows no writer.
    assert!(
        graph["edge"].iter().all(|f| f == "metrics"),
        "edge/ uses only metrics/: {:?}",
        graph["edge"]
    );
    for writer in ["summary", "pinger"] {
        assert!(
            !graph[writer].contains("workload"),
            "{writer}/ writes through edge/, not workload/: {:?}",
            graph[writer]
        );
    }
}

#[test]
fn core_does_no_io() {
    let src = repo().join("operator/src/core");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 5, "files found: {}", files.len());
    let io: Vec<String> = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with("_tests.rs"))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("source file");
            let code = code_only(product_part(&text));
            ["async fn", ".await", "Client"]
                .iter()
                .find(|w| code.contains(*w))
                .map(|w| format!("{} ({w})", f.display()))
        })
        .collect();
    assert!(io.is_empty(), "core/ holds no I/O: {io:#?}");
}

#[test]
fn no_crate_has_modules_or_folders_in_a_circle() {
    let mut found = Vec::new();
    for dir in CRATES {
        let graph = imports_of(dir);
        assert!(graph.len() > 5, "{dir}: modules found: {}", graph.len());
        if let Some(c) = circle(&graph) {
            found.push(format!("{dir}: modules {}", c.join(" -> ")));
        }
        if let Some(c) = circle(&folders(&graph)) {
            found.push(format!("{dir}: folders {}", c.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "imports in a circle: {found:#?}");
}

#[test]
fn no_product_file_is_over_the_limit() {
    let mut files = Vec::new();
    for dir in CRATES {
        rust_files(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 100, "files found: {}", files.len());
    let over: Vec<String> = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with("_tests.rs"))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("source file");
            let lines = product_part(&text).lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        over.is_empty(),
        "product files over {MAX_LINES} lines; split them by what they do: {over:#?}"
    );
}

#[test]
fn use_groups_are_spelled_out_into_paths() {
    let code = "use crate::{a::b, c::{self, d as e}};\nlet x = crate::f::g(1); notcrate::h;";
    assert_eq!(crate_paths(code), ["a::b", "c", "c::d", "f::g"]);
}

#[test]
fn paths_from_parents_and_self_are_read_as_the_crate_s() {
    let code = "use super::{x, y::z};\nuse super::super::w;\nself::v::f(); a::super::no;";
    assert_eq!(
        relative_paths("a::b::c", code),
        ["a::b::c::v::f", "a::b::x", "a::b::y::z", "a::w"]
    );
    // Above the crate's root is not a path of it.
    assert_eq!(
        relative_paths("a", "use super::super::x;"),
        Vec::<String>::new()
    );
}

#[test]
fn a_circle_through_three_modules_is_found_and_a_chain_is_not() {
    let sources = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, c)| (m.to_string(), c.to_string()))
            .collect()
    };
    let chain = sources(&[
        ("x::a", "use crate::x::b;"),
        ("x::b", "use crate::{y::c};"),
        ("y::c", ""),
    ]);
    assert_eq!(circle(&imports(&chain)), None);
    assert_eq!(circle(&folders(&imports(&chain))), None);
    let looped = sources(&[
        ("x::a", "use crate::x::b;"),
        ("x::b", "use crate::{y::c};"),
        ("y::c", "fn f() { crate::x::a::g() }"),
    ]);
    assert_eq!(
        circle(&imports(&looped)).expect("a circle"),
        ["x::a", "x::b", "y::c", "x::a"]
    );
    let folder_loop = sources(&[
        ("x::a", "use crate::y::c;"),
        ("y::c", ""),
        ("y::d", "use crate::x::e;"),
        ("x::e", ""),
    ]);
    assert_eq!(circle(&imports(&folder_loop)), None);
    assert_eq!(
        circle(&folders(&imports(&folder_loop))).expect("a circle"),
        ["x", "y", "x"]
    );
}
