//! Shell completion (docs/reference.md, "`kubectl-combo`"): the scripts of
//! `kubectl combo completion bash|zsh`, from clap's generator, and the
//! answer of the hidden `__complete` command in the format kubectl reads
//! from a plugin's `kubectl_complete-combo` (kubectl 1.26+): one word per
//! line, `word<TAB>description`, then `:<directive>`. What follows which
//! words is pure ([`candidates`]); [`answer`] adds the names it reads from
//! the cluster: Debuggers, namespaces, and the nodes of a Debugger's
//! reports.

use clap::CommandFactory;
use combo_api::{keys, Category, Debugger, DebuggerReport};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::{Api, Client};

use crate::cli::{Args, Shell, BIN};

/// Directive: the shell completes nothing besides the words given.
pub const NO_FILE: u32 = 4;
/// Directive: the shell completes file names (a flag naming a file).
pub const FILES: u32 = 0;

/// The completion script for `shell`, completing `kubectl-combo`.
pub fn script(shell: Shell) -> String {
    let mut cmd = Args::command();
    let mut out = Vec::new();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
    };
    clap_complete::generate(shell, &mut cmd, BIN, &mut out);
    String::from_utf8(out).expect("clap writes its scripts as UTF-8")
}

/// What the word being completed may be, besides the fixed words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// Only the words given.
    Words,
    /// A Debugger's name in the namespace.
    Debugger,
    /// A namespace's name.
    Namespace,
    /// A context of the kubeconfig.
    Context,
    /// A file name.
    File,
    /// A node that reported a run of this Debugger (`--node`).
    Node(String),
}

/// The words (with descriptions) that may complete the last of `words`
/// (the words after `kubectl combo`), and what else may. Pure.
pub fn candidates(words: &[String]) -> (Vec<(String, String)>, Wanted) {
    let root = Args::command();
    let (typed, prior) = match words.split_last() {
        Some((last, prior)) => (last.as_str(), prior),
        None => ("", &[][..]),
    };
    let mut sub: Option<&clap::Command> = None;
    let mut positionals = 0;
    let mut debugger: Option<&str> = None;
    let mut value_of: Option<clap::Arg> = None;
    for w in prior {
        let cmd = sub.unwrap_or(&root);
        if value_of.take().is_some() {
            continue;
        }
        if w.starts_with('-') {
            if !w.contains('=') {
                value_of = flag(&root, sub, w).filter(takes_value);
            }
            continue;
        }
        match sub {
            None => sub = cmd.find_subcommand(w),
            Some(s) => {
                let arg = s.get_positionals().nth(positionals);
                if arg.is_some_and(|a| a.get_id() == "debugger") {
                    debugger = Some(w.as_str());
                }
                positionals += 1;
            }
        }
    }
    let starts = |w: &str| w.starts_with(typed);
    if let Some(arg) = value_of {
        let id = arg.get_id().as_str();
        let wanted = match id {
            "namespace" => Wanted::Namespace,
            "context" => Wanted::Context,
            "kubeconfig" | "html" => Wanted::File,
            "node" => debugger.map_or(Wanted::Words, |d| Wanted::Node(d.to_string())),
            _ => Wanted::Words,
        };
        let mut values: Vec<(String, String)> = arg
            .get_possible_values()
            .into_iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| (v.get_name().to_string(), help_of(v.get_help())))
            .collect();
        if id == "category" {
            values = Category::all()
                .into_iter()
                .map(|c| (c.to_string(), String::new()))
                .collect();
        }
        values.retain(|(v, _)| starts(v));
        return (values, wanted);
    }
    if typed.starts_with('-') {
        let mut flags: Vec<(String, String)> = Vec::new();
        let cmds = [Some(&root), sub];
        for arg in cmds.iter().flatten().flat_map(|c| c.get_arguments()) {
            if arg.is_hide_set() {
                continue;
            }
            if let Some(long) = arg.get_long() {
                flags.push((format!("--{long}"), help_of(arg.get_help())));
            }
        }
        flags.retain(|(f, _)| starts(f));
        flags.sort();
        flags.dedup();
        return (flags, Wanted::Words);
    }
    let Some(sub) = sub else {
        let subs = root
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && starts(c.get_name()))
            .map(|c| (c.get_name().to_string(), help_of(c.get_about())))
            .collect();
        return (subs, Wanted::Words);
    };
    let positional = sub.get_positionals().nth(positionals);
    match positional {
        Some(arg) if arg.get_id() == "debugger" => (Vec::new(), Wanted::Debugger),
        Some(arg) => {
            let values = arg
                .get_possible_values()
                .into_iter()
                .filter(|v| starts(v.get_name()))
                .map(|v| (v.get_name().to_string(), help_of(v.get_help())))
                .collect();
            (values, Wanted::Words)
        }
        None => (Vec::new(), Wanted::Words),
    }
}

/// The flag `word` names (`--long`, `--long=value`, `-s`) in `sub` or
/// among the global flags of `root`.
fn flag(root: &clap::Command, sub: Option<&clap::Command>, word: &str) -> Option<clap::Arg> {
    let cmds = [sub, Some(root)];
    let found = cmds
        .into_iter()
        .flatten()
        .flat_map(|c| c.get_arguments())
        .find(|a| match word.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => word
                .strip_prefix('-')
                .and_then(|s| s.chars().next())
                .is_some_and(|c| a.get_short() == Some(c) && word.len() == 2),
        });
    found.cloned()
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
        || matches!(
            arg.get_action(),
            clap::ArgAction::Set | clap::ArgAction::Append
        )
}

fn help_of(help: Option<&clap::builder::StyledStr>) -> String {
    help.map(|h| h.to_string().lines().next().unwrap_or_default().to_string())
        .unwrap_or_default()
}

/// The `__complete` answer for `words`: [`candidates`], the names of
/// Debuggers (in `ns`, else the client's namespace), namespaces,
/// contexts or the nodes of a Debugger's reports read when they are
/// wanted (nothing when they cannot be), then the directive line.
pub async fn answer(client: Option<Client>, ns: Option<String>, words: &[String]) -> String {
    let (mut words_out, wanted) = candidates(words);
    let typed = words.last().map(String::as_str).unwrap_or_default();
    let names: Vec<String> = match (&wanted, client) {
        (Wanted::Debugger, Some(c)) => {
            let ns = ns.unwrap_or_else(|| c.default_namespace().to_string());
            let api = Api::<Debugger>::namespaced(c, &ns);
            names_of(api.list_metadata(&ListParams::default()).await.ok())
        }
        (Wanted::Namespace, Some(c)) => {
            let api = Api::<Namespace>::all(c);
            names_of(api.list_metadata(&ListParams::default()).await.ok())
        }
        (Wanted::Node(debugger), Some(c)) => {
            let ns = ns.unwrap_or_else(|| c.default_namespace().to_string());
            let api = Api::<DebuggerReport>::namespaced(c, &ns);
            let lp = ListParams::default().labels(&keys::debugger_selector(debugger));
            // A report is named `<debugger>.<node>` (docs/reference.md, "Names").
            let prefix = format!("{debugger}.");
            names_of(api.list_metadata(&lp).await.ok())
                .into_iter()
                .filter_map(|n| n.strip_prefix(&prefix).map(str::to_string))
                .collect()
        }
        (Wanted::Context, _) => kube::config::Kubeconfig::read()
            .map(|k| k.contexts.into_iter().map(|c| c.name).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    words_out.extend(
        names
            .into_iter()
            .filter(|n| n.starts_with(typed))
            .map(|n| (n, String::new())),
    );
    let directive = if wanted == Wanted::File {
        FILES
    } else {
        NO_FILE
    };
    render(&words_out, directive)
}

fn names_of<K: kube::Resource + Clone>(
    list: Option<kube::core::ObjectList<kube::core::PartialObjectMeta<K>>>,
) -> Vec<String> {
    list.map(|l| {
        l.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()
    })
    .unwrap_or_default()
}

/// The lines kubectl reads: `word<TAB>description` (or the word alone),
/// then `:<directive>`.
pub fn render(words: &[(String, String)], directive: u32) -> String {
    let mut out = String::new();
    for (w, help) in words {
        if help.is_empty() {
            out.push_str(w);
        } else {
            out.push_str(&format!("{w}\t{help}"));
        }
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| w.to_string()).collect()
    }

    fn names(ws: &[&str]) -> Vec<String> {
        candidates(&words(ws))
            .0
            .into_iter()
            .map(|(w, _)| w)
            .collect()
    }

    #[test]
    fn the_first_word_is_a_command_and_the_hidden_one_is_not_offered() {
        let all = names(&[""]);
        for c in [
            "summary",
            "history",
            "run",
            "errlog",
            "mesh",
            "status",
            "completion",
        ] {
            assert!(all.contains(&c.to_string()), "{c}: {all:?}");
        }
        assert!(!all.iter().any(|w| w == "__complete"));
        assert_eq!(names(&["st"]), ["status"]);
    }

    #[test]
    fn flags_values_and_names_are_offered_where_they_go() {
        assert_eq!(candidates(&words(&["summary", ""])).1, Wanted::Debugger);
        assert_eq!(
            candidates(&words(&["-n", "ops", "summary", ""])).1,
            Wanted::Debugger
        );
        assert_eq!(names(&["errlog", "d", "--category", "m"]), ["mem"]);
        assert_eq!(names(&["status", "-o", ""]), ["json", "yaml"]);
        assert_eq!(
            candidates(&words(&["status", "-n", ""])).1,
            Wanted::Namespace
        );
        assert_eq!(candidates(&words(&["--context", ""])).1, Wanted::Context);
        assert_eq!(
            candidates(&words(&["mesh", "d", "--html", ""])).1,
            Wanted::File
        );
        let flags = names(&["run", "d", "--"]);
        for f in [
            "--wait",
            "--timeout",
            "--namespace",
            "--context",
            "--kubeconfig",
        ] {
            assert!(flags.contains(&f.to_string()), "{f}: {flags:?}");
        }
        assert_eq!(names(&["run", "d", "--w"]), ["--wait"]);
        assert_eq!(names(&["completion", ""]), ["bash", "zsh"]);
        assert!(names(&["summary", "d", ""]).is_empty(), "one Debugger only");
        assert_eq!(candidates(&words(&["history", ""])).1, Wanted::Debugger);
        assert_eq!(
            candidates(&words(&["history", "d", "--node", ""])).1,
            Wanted::Node("d".into())
        );
        assert_eq!(
            candidates(&words(&[
                "-n",
                "ops",
                "errlog",
                "d",
                "--category",
                "disk",
                "--node",
                ""
            ]))
            .1,
            Wanted::Node("d".into())
        );
        assert_eq!(names(&["history", "d", "--i"]), ["--item"]);
        assert_eq!(names(&["history", "d", "-o", "y"]), ["yaml"]);
    }

    #[test]
    fn the_answer_ends_with_the_directive_kubectl_reads() {
        let out = render(
            &[
                ("status".into(), "List Debuggers".into()),
                ("x".into(), String::new()),
            ],
            NO_FILE,
        );
        assert_eq!(out, "status\tList Debuggers\nx\n:4\n");
    }

    #[test]
    fn the_scripts_complete_the_plugins_binary() {
        assert!(script(Shell::Bash).contains("kubectl-combo"));
        assert!(script(Shell::Zsh).starts_with("#compdef kubectl-combo"));
    }
}
