//! The names the code declares, read from its single sources: string
//! constants by the prefix of their name (`REASON_`, `ANNOTATION_`, ...).
//! A source scan rather than a list in this test, so that a constant added
//! to the code is checked without touching the test.

use std::path::Path;

use super::repo;

/// The product code of the `.rs` files under `dir` (relative to the
/// repository): `*_tests.rs` files and everything from `#[cfg(test)]` on
/// are left out.
pub fn product_code(dir: &str) -> Vec<String> {
    let mut files = Vec::new();
    walk(&repo().join(dir), &mut files);
    files
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with("_tests.rs"))
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("source file");
            match text.find("#[cfg(test)]") {
                Some(i) => text[..i].to_string(),
                None => text,
            }
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// `(name, value)` of every `const <NAME>: &str = "<value>";` in `code`
/// whose name starts with one of `prefixes`.
pub fn str_consts(code: &[String], prefixes: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in code.iter().flat_map(|c| c.lines()) {
        let line = line.trim_start();
        let Some(rest) = line
            .strip_prefix("pub const ")
            .or_else(|| line.strip_prefix("const "))
        else {
            continue;
        };
        let Some((name, value)) = rest.split_once(": &str = \"") else {
            continue;
        };
        let Some(value) = value.strip_suffix("\";") else {
            continue;
        };
        if prefixes.iter().any(|p| name.starts_with(p)) {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// The string literals passed as the only argument of calls to `.<method>(`
/// in `code`: `metrics.write("ConfigMap")` gives `ConfigMap`.
pub fn literal_args(code: &[String], method: &str) -> Vec<String> {
    let needle = format!(".{method}(\"");
    let mut out = Vec::new();
    for text in code {
        for (i, _) in text.match_indices(&needle) {
            let rest = &text[i + needle.len()..];
            if let Some(end) = rest.find("\")") {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// The string literals the arms of the function `signature` (its first
/// line, as written) in the file `rel` return: `X => "a",` gives `a`.
pub fn match_arms(rel: &str, signature: &str) -> Vec<String> {
    let text = super::read(rel);
    let body = text
        .split(signature)
        .nth(1)
        .and_then(|body| body.split("\n    }\n").next())
        .unwrap_or_else(|| panic!("{rel} has no `{signature}`"));
    let arms: Vec<String> = body
        .split("=> \"")
        .skip(1)
        .filter_map(|s| s.split('"').next().map(String::from))
        .collect();
    assert!(!arms.is_empty(), "{rel}: `{signature}` returns no literal");
    arms
}

/// Whether `value` is a string literal somewhere in `code`.
pub fn is_literal(code: &[String], value: &str) -> bool {
    let quoted = format!("\"{value}\"");
    code.iter().any(|c| c.contains(&quoted))
}

#[test]
fn the_source_readers_find_constants_and_literal_arguments() {
    let code = vec![
        "pub const REASON_A: &str = \"A\";\nconst LABEL_X: &str = \"x/y\";\nconst OTHER: &str = \"o\";\n\
         pub const REASON_MAX: usize = 64;\nm.write(\"Pod\"); m.write(kind); m.error(\"apply\");"
            .to_string(),
    ];
    assert_eq!(
        str_consts(&code, &["REASON_", "LABEL_"]),
        [
            ("REASON_A".to_string(), "A".to_string()),
            ("LABEL_X".to_string(), "x/y".to_string())
        ]
    );
    assert_eq!(literal_args(&code, "write"), ["Pod"]);
    assert_eq!(literal_args(&code, "error"), ["apply"]);
    assert!(is_literal(&code, "o"));
    assert!(!is_literal(&code, "rbac"));
}
