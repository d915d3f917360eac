//! A second operator, on this machine (the host's build), for one
//! namespace only, acting by impersonation as a ServiceAccount whose Role
//! may lack the DebuggerReports.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use combo_api::keys;
use combo_e2e::{kubeconfig, project_binary};

/// A kubeconfig acting as ServiceAccount `account` of `ns` (impersonation).
fn kubeconfig_as(ns: &str, account: &str) -> Result<std::path::PathBuf> {
    let admin = std::fs::read_to_string(kubeconfig())?;
    let mut kc: serde_yaml::Value = serde_yaml::from_str(&admin)?;
    let users = kc["users"].as_sequence_mut().context("users")?;
    for u in users {
        u["user"]["as"] = format!("system:serviceaccount:{ns}:{account}").into();
    }
    let path = std::env::temp_dir().join(format!("kube-combo-{ns}-{account}.kubeconfig"));
    std::fs::write(&path, serde_yaml::to_string(&kc)?)?;
    Ok(path)
}

/// The operator's rules within one namespace; `reports` adds the
/// DebuggerReports.
pub fn operator_role(name: &str, reports: bool) -> String {
    let mut rules = String::from(
        "  - {apiGroups: [kubecombo.io], resources: [debuggers, pingers], verbs: [get, list, watch]}
  - {apiGroups: [kubecombo.io], resources: [debuggers/status, pingers/status], verbs: [patch]}
  - {apiGroups: [apps], resources: [daemonsets], verbs: [get, list, watch, create, patch, delete]}
  - {apiGroups: [\"\"], resources: [pods, configmaps], verbs: [get, list, watch, create, patch, update, delete]}
  - {apiGroups: [\"\"], resources: [serviceaccounts], verbs: [list, watch, create, patch, delete]}
  - {apiGroups: [rbac.authorization.k8s.io], resources: [roles, rolebindings], verbs: [list, watch, create, patch, delete]}
  - {apiGroups: [\"\", events.k8s.io], resources: [events], verbs: [create, patch]}
  - {apiGroups: [\"\"], resources: [events], verbs: [list, watch]}
",
    );
    if reports {
        rules.push_str(
            "  - {apiGroups: [kubecombo.io], resources: [debuggerreports], verbs: [get, list, watch, create, patch, delete]}\n",
        );
    }
    format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {name}\nrules:\n{rules}")
}

/// A second operator, on this machine, for namespace `ns` only, acting as
/// ServiceAccount `narrow`; its log lines arrive on the returned channel.
pub struct LocalOperator {
    child: std::process::Child,
    /// Its kubeconfig, removed with it.
    kubeconfig: std::path::PathBuf,
    addr: String,
    log: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl LocalOperator {
    pub fn start(ns: &str, port: u16) -> Result<Self> {
        let addr = format!("127.0.0.1:{port}");
        let kubeconfig = kubeconfig_as(ns, "narrow")?;
        let mut child = Command::new(project_binary(keys::BIN_OPERATOR))
            .args(["--namespace", ns, "--metrics-addr", &addr])
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child.stderr.take().context("stderr")?;
        let (tx, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(LocalOperator {
            child,
            kubeconfig,
            addr,
            log,
            seen: Vec::new(),
        })
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "-",
                "-w",
                "\n%{http_code}",
                &format!("http://{}{path}", self.addr),
            ])
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_string())
    }

    pub fn log_has(&mut self, needle: &str) -> bool {
        self.seen.extend(self.log.try_iter());
        self.seen.iter().any(|l| l.contains(needle))
    }

    /// SIGTERM; how long the process took to exit.
    pub fn stop(&mut self) -> Result<Duration> {
        let t0 = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()?;
        ensure!(sent.success(), "kill -TERM failed");
        while t0.elapsed() < Duration::from_secs(20) {
            if self.child.try_wait()?.is_some() {
                return Ok(t0.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        bail!("the operator was still running 20 s after SIGTERM")
    }
}

impl Drop for LocalOperator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}
