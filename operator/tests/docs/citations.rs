use std::path::{Path, PathBuf};

use super::repo;

/// Every `.rs` file of the repository outside `target/`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The `(page, heading)` pairs cited as `docs/<page>.md, "<heading>"`.
fn citations(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("docs/") {
        let rest = &text[i..];
        let Some(md) = rest.find(".md, \"") else {
            continue;
        };
        let page = &rest[..md + 3];
        if page.contains(|c: char| c.is_whitespace() || c == '<') {
            continue;
        }
        let quoted = &rest[md + 6..];
        if let Some(end) = quoted.find('"') {
            found.push((page.to_string(), quoted[..end].to_string()));
        }
    }
    found
}

#[test]
fn every_docs_heading_cited_in_the_code_exists() {
    let mut files = Vec::new();
    rust_files(&repo(), &mut files);
    let mut missing = Vec::new();
    let mut cited = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source file");
        for (page, heading) in citations(&text) {
            cited += 1;
            let Ok(doc) = std::fs::read_to_string(repo().join(&page)) else {
                missing.push(format!(
                    "{}: cites {page}, which does not exist",
                    file.display()
                ));
                continue;
            };
            let exists = doc.lines().any(|l| {
                l.starts_with('#') && l.trim_start_matches('#').trim_start().starts_with(&heading)
            });
            if !exists {
                missing.push(format!(
                    "{}: cites {page}, \"{heading}\", which has no such heading",
                    file.display()
                ));
            }
        }
    }
    assert!(
        cited > 10,
        "only {cited} citations found: the scan is broken"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
