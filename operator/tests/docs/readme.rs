use std::path::{Path, PathBuf};

use super::{read, repo, section, table_rows};

/// A shell command in README.md, without its trailing comment.
fn command_of(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let code = match line.find(" # ") {
        Some(i) => &line[..i],
        None => line,
    };
    Some(code.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The shell blocks of a Markdown text that are meant to be run: the fences
/// tagged `sh`, `bash` or `shell`, except those right after a line
/// `<!-- not run: <reason> -->`. Errors name a marker without a reason.
fn runnable_blocks(md: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let (mut blocks, mut errors) = (Vec::new(), Vec::new());
    let mut previous = "";
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                previous = line.trim();
            }
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .collect();
        let shell = matches!(
            info.split_whitespace().next(),
            Some("sh" | "bash" | "shell")
        );
        if let Some(reason) = previous.strip_prefix("<!-- not run:") {
            if reason.trim_end_matches("-->").trim().is_empty() {
                errors.push(format!("the marker {previous:?} gives no reason"));
            }
        } else if shell {
            blocks.push(body.iter().filter_map(|l| command_of(l)).collect());
        }
        previous = "";
    }
    (blocks, errors)
}

/// Every `*.sh` file under `dir`.
fn shell_scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            shell_scripts(&path, out);
        } else if path.extension().is_some_and(|x| x == "sh") {
            out.push(path);
        }
    }
}

/// True when `script_line` runs `command`: the same words, followed by
/// nothing or only by redirection and pipes of its output.
fn runs(script_line: &str, command: &str) -> bool {
    let line = script_line.split_whitespace().collect::<Vec<_>>().join(" ");
    line.strip_prefix(command).is_some_and(|rest| {
        rest.is_empty()
            || [" 2>", " >", " |", " &&", " ||", ";"]
                .iter()
                .any(|p| rest.starts_with(p))
    })
}

#[test]
fn every_readme_shell_command_is_run_by_the_quickstart_or_a_test() {
    let readme = read("README.md");
    let (blocks, mut missing) = runnable_blocks(&readme);
    assert!(
        !blocks.is_empty(),
        "README.md has no shell block: the parser is broken"
    );
    let entry_points = ["bash deploy/quickstart.sh", "bash tests/run-all.sh"];
    assert_eq!(
        blocks[0], entry_points,
        "README.md must start with the two commands for a fresh machine"
    );
    let mut scripts = vec![repo().join("deploy/quickstart.sh")];
    shell_scripts(&repo().join("tests"), &mut scripts);
    let corpus: Vec<String> = scripts
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("script"))
        .collect();
    for command in blocks.iter().flatten() {
        if entry_points.contains(&command.as_str()) {
            continue;
        }
        let run = corpus.iter().any(|s| s.lines().any(|l| runs(l, command)));
        if !run {
            missing.push(format!(
                "`{command}` is run by neither deploy/quickstart.sh nor a tests/**/*.sh script; \
                 run it there, or put `<!-- not run: <reason> -->` on the line before its block"
            ));
        }
    }
    assert!(missing.is_empty(), "README.md:\n  {}", missing.join("\n  "));
}

#[test]
fn the_readme_rules_catch_what_they_should() {
    let (blocks, errors) = runnable_blocks(
        "x\n```sh\nfoo --a   # comment\n# only a comment\n```\n<!-- not run: needs exec -->\n```sh\nbar\n```\n<!-- not run: -->\n```sh\nbaz\n```\n```yaml\nk: v\n```\n",
    );
    assert_eq!(blocks, vec![vec!["foo --a".to_string()]]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(runs("foo --a 2>&1 | grep -v x", "foo --a"));
    assert!(runs("  foo   --a", "foo --a"));
    assert!(!runs("foo --a -n other", "foo --a"));
    assert!(!runs("foo --ab", "foo --a"));
}

/// The pages of docs/ the table of README.md's "Where to go next" links,
/// from the first cell of each row (`[docs/x.md](docs/x.md)`).
fn linked_pages(readme: &str) -> Vec<String> {
    let lines = section(readme, 2, |t| t == "Where to go next")
        .expect("README.md has a heading `## Where to go next`");
    table_rows(&lines, "page")
        .iter()
        .filter_map(|row| {
            row[0]
                .split("](")
                .nth(1)?
                .split(')')
                .next()
                .map(String::from)
        })
        .collect()
}

#[test]
fn where_to_go_next_links_every_page_of_docs() {
    let linked = linked_pages(&read("README.md"));
    let mut missing: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ is readable")
        .map(|e| format!("docs/{}", e.expect("entry").file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md") && !linked.contains(p))
        .map(|p| format!("{p} has no row in README.md, \"Where to go next\""))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_link_reader_takes_the_first_cell() {
    let md = "## Where to go next\n\n| page | what |\n|---|---|\n| [docs/a.md](docs/a.md) | see [b](docs/b.md) |\n\n## Next\n| page |\n|---|\n| [c](docs/c.md) |\n";
    assert_eq!(linked_pages(md), ["docs/a.md"]);
}
