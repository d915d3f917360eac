//! `kubectl combo errlog`: an errlog of one node and category, read
//! through `kubectl exec` in the runner container. Where the errlogs are
//! and which is the newest are pure; [`run`] finds the pod and reads.

use std::process::Command as Process;

use anyhow::{bail, Context as _, Result};
use combo_api::{keys, Category, RunId};
use kube::Client;

use crate::cli::BIN;
use crate::cluster::{debugger, debugger_pods, Target};
use crate::errors::{self, NotFound};

/// Why Debugger `ns/name`, running `categories`, has no errlog of
/// `category`: it does not run it. `None` when it does.
pub fn not_run(
    ns: &str,
    name: &str,
    category: Category,
    categories: &[Category],
) -> Option<NotFound> {
    if categories.contains(&category) {
        return None;
    }
    let runs: Vec<&str> = categories.iter().map(|c| c.as_str()).collect();
    let runs = if runs.is_empty() {
        "none".to_string()
    } else {
        runs.join(", ")
    };
    Some(NotFound(format!(
        "Debugger {ns}/{name} does not run category {category} (spec.categories: {runs}): it has no errlog of it"
    )))
}

/// Directories that may hold a category's errlogs inside the runner
/// container, in the order to look: `/scripts/<category>/errlog`, then
/// `/scripts/errlog/<category>`, where the runner writes when the first
/// cannot be written (always for `custom`: the ConfigMap mount is
/// read-only).
pub fn errlog_dirs(category: Category) -> [String; 2] {
    [
        format!("/scripts/{category}/errlog"),
        format!("/scripts/errlog/{category}"),
    ]
}

/// Path of run `run`'s errlog in `dir`.
pub fn errlog_path(dir: &str, run: &RunId) -> String {
    format!("{dir}/{run}.log")
}

/// The newest errlog in an `ls -t` listing of paths (newest written
/// first, over both errlog directories): its run and its directory. Run ids
/// name scheduled times, not the order runs happened in (a past timestamp
/// set after a cron run runs last), so the order is the files'.
pub fn newest_errlog(listing_newest_first: &str) -> Option<(RunId, String)> {
    listing_newest_first.lines().find_map(|path| {
        let (dir, file) = path.trim().rsplit_once('/')?;
        let run = file.strip_suffix(".log")?.parse::<RunId>().ok()?;
        Some((run, dir.to_string()))
    })
}

/// The shell command that lists the errlogs of `dirs`, newest written
/// first, as paths; a directory that does not exist lists nothing.
pub fn errlog_listing_command(dirs: &[String]) -> Vec<String> {
    let mut cmd = vec![
        "sh".to_string(),
        "-c".to_string(),
        r#"for d in "$@"; do set -- "$@" "$d"/*.log; shift; done; ls -t -- "$@" 2>/dev/null; true"#
            .to_string(),
        "sh".to_string(),
    ];
    cmd.extend(dirs.iter().cloned());
    cmd
}

/// Prints an errlog of Debugger `ns/name`'s pod on `node` for `category`:
/// that of run `asked`, or without it the newest written, whose run it
/// names on stderr.
pub async fn run(
    client: Client,
    target: &Target,
    ns: &str,
    name: &str,
    node: &str,
    category: Category,
    asked: Option<RunId>,
) -> Result<()> {
    // The Debugger first: a wrong name is told as such, not as a missing
    // pod, and a category it does not run as such, not as no failure.
    let dbg = debugger(client.clone(), ns, name).await?;
    if let Some(e) = not_run(ns, name, category, &dbg.spec.categories) {
        return Err(e.into());
    }
    let kubectl = Kubectl {
        flags: target.kubectl_flags(),
        ns,
    };
    let pods: Vec<(String, Option<String>)> = debugger_pods(&client, ns, name)
        .await?
        .into_iter()
        .filter_map(|p| Some((p.metadata.name?, p.spec.and_then(|s| s.node_name))))
        .collect();
    let pod = errors::pod_on_node(ns, name, node, &pods)?;
    let dirs = errlog_dirs(category);
    let (run, dir) = match asked {
        Some(wanted) => find_run(&kubectl, &pod, &dirs, wanted, category, node)?,
        None => find_newest(&kubectl, &pod, &dirs, category, node)?,
    };
    print!(
        "{}",
        kubectl.exec(&pod, &["cat", &errlog_path(&dir, &run)])?
    );
    Ok(())
}

/// The `kubectl` the errlogs are read with: the cluster's flags
/// ([`Target::kubectl_flags`]) and the namespace.
struct Kubectl<'a> {
    flags: Vec<String>,
    ns: &'a str,
}

/// The run asked for, in either errlog directory: its run and directory.
fn find_run(
    kubectl: &Kubectl,
    pod: &str,
    dirs: &[String],
    wanted: RunId,
    category: Category,
    node: &str,
) -> Result<(RunId, String)> {
    let mut failures = Vec::new();
    for dir in dirs {
        match kubectl.exec(pod, &["ls", "-t", dir]) {
            Ok(l) if l.split_whitespace().any(|f| f == format!("{wanted}.log")) => {
                return Ok((wanted, dir.clone()));
            }
            Ok(_) => {}
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    if failures.len() == dirs.len() {
        bail!(
            "reading the errlogs of {category} on node {node:?}: {}",
            failures.join("; ")
        );
    }
    Err(NotFound(format!("no errlog of run {wanted} for category {category} on node {node:?}: nothing failed in {category} in that run, or it was pruned (errlogRetention)")).into())
}

/// Without `--run`: the newest errlog written, whichever run it is of (the
/// summary's run passed when it is older); stderr names it.
fn find_newest(
    kubectl: &Kubectl,
    pod: &str,
    dirs: &[String],
    category: Category,
    node: &str,
) -> Result<(RunId, String)> {
    let cmd = errlog_listing_command(dirs);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let listing = kubectl
        .exec(pod, &cmd)
        .with_context(|| format!("reading the errlogs of {category} on node {node:?}"))?;
    let Some(newest) = newest_errlog(&listing) else {
        return Err(NotFound(format!("no errlog for category {category} on node {node:?}: no run has failed in {category} there (or its errlogs were pruned)")).into());
    };
    eprintln!(
        "{BIN}: errlog of run {}, the newest of {category} on node {node}",
        newest.0
    );
    Ok(newest)
}

impl Kubectl<'_> {
    /// The arguments of `kubectl` for `cmd` in `pod`'s runner container.
    fn exec_args(&self, pod: &str, cmd: &[&str]) -> Vec<String> {
        let mut args = self.flags.clone();
        args.extend(
            [
                "exec",
                "-n",
                self.ns,
                pod,
                "-c",
                keys::CONTAINER_RUNNER,
                "--",
            ]
            .into_iter()
            .chain(cmd.iter().copied())
            .map(String::from),
        );
        args
    }

    /// `kubectl [FLAGS] exec -n NS POD -c runner -- CMD...`, returning its
    /// stdout.
    fn exec(&self, pod: &str, cmd: &[&str]) -> Result<String> {
        let out = Process::new("kubectl")
            .args(self.exec_args(pod, cmd))
            .output()
            .context("running kubectl")?;
        if !out.status.success() {
            bail!(
                "kubectl exec {pod} -- {}: {}",
                cmd.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_errlog_is_the_first_run_in_a_listing_by_time_over_both_directories() {
        // `ls -t` over both directories: the past timestamp ran last.
        let listing = "/scripts/disk/errlog/README\n/scripts/disk/errlog/20250601T000000Z.log\n\
                       /scripts/errlog/disk/20261122T060000Z.log\n/scripts/disk/errlog/20261121T180000Z.log\n";
        assert_eq!(
            newest_errlog(listing)
                .map(|(r, d)| format!("{d} {r}"))
                .as_deref(),
            Some("/scripts/disk/errlog 20250601T000000Z")
        );
        let fallback = "/scripts/errlog/custom/20261122T060000Z.log\n";
        assert_eq!(
            newest_errlog(fallback)
                .map(|(r, d)| format!("{d} {r}"))
                .as_deref(),
            Some("/scripts/errlog/custom 20261122T060000Z")
        );
        assert_eq!(newest_errlog(""), None);
        let (run, dir) = newest_errlog(listing).unwrap();
        assert_eq!(
            errlog_path(&dir, &run),
            "/scripts/disk/errlog/20250601T000000Z.log"
        );
    }

    #[test]
    fn a_category_the_debugger_does_not_run_is_named_with_those_it_runs() {
        let runs = [Category::Disk, Category::Net];
        assert_eq!(not_run("ops", "d", Category::Net, &runs), None);
        assert_eq!(
            not_run("ops", "d", Category::Custom, &runs).unwrap().0,
            "Debugger ops/d does not run category custom (spec.categories: disk, net): it has no errlog of it"
        );
        let e = anyhow::Error::new(not_run("ops", "d", Category::Mem, &[]).unwrap());
        assert_eq!(errors::exit_status(&e), 3);
    }

    #[test]
    fn kubectl_exec_is_given_the_kubeconfig_and_context_of_the_plugin() {
        let target = Target {
            kubeconfig: Some("/k/config".into()),
            context: Some("prod".into()),
        };
        let k = Kubectl {
            flags: target.kubectl_flags(),
            ns: "ops",
        };
        assert_eq!(
            k.exec_args("ds-a", &["ls", "-t", "/scripts/disk/errlog"]).join(" "),
            "--kubeconfig=/k/config --context=prod exec -n ops ds-a -c runner -- ls -t /scripts/disk/errlog"
        );
        let plain = Kubectl {
            flags: Target::default().kubectl_flags(),
            ns: "ops",
        };
        assert_eq!(
            plain.exec_args("p", &["cat", "f"]).join(" "),
            "exec -n ops p -c runner -- cat f"
        );
    }

    #[test]
    fn custom_errlogs_are_also_looked_for_where_the_runner_falls_back() {
        assert_eq!(
            errlog_dirs(Category::Custom),
            ["/scripts/custom/errlog", "/scripts/errlog/custom"]
        );
    }
}
