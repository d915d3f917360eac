//! The runner and pinger processes of the model-based test's namespaces,
//! read from /proc: simulated pods run as processes of this machine
//! (docs/testing.md, "Simulated nodes").

use std::path::PathBuf;

use combo_api::keys;
use combo_e2e::project_binary;

/// The runner's and the pinger's executables of the cluster's build.
pub struct Binaries {
    paths: Vec<(&'static str, PathBuf)>,
}

impl Binaries {
    pub fn new() -> Binaries {
        Binaries {
            paths: [keys::BIN_RUNNER, keys::BIN_PINGER]
                .into_iter()
                .map(|b| (b, project_binary(b)))
                .collect(),
        }
    }

    /// (binary, POD_NAME) of every runner and pinger process whose
    /// POD_NAMESPACE is `ns`: simulated pods run as processes of this
    /// machine (docs/testing.md, "Simulated nodes").
    pub fn processes(&self, ns: &str) -> Vec<(&'static str, String)> {
        let want_ns = format!("{}={ns}", keys::env::POD_NAMESPACE);
        let pod_prefix = format!("{}=", keys::env::POD_NAME);
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()) {
            let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
                continue;
            };
            let exe = exe.to_string_lossy();
            let exe = exe.trim_end_matches(" (deleted)");
            let Some((bin, _)) = self
                .paths
                .iter()
                .find(|(_, p)| p.as_os_str() == std::ffi::OsStr::new(exe))
            else {
                continue;
            };
            let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            let vars: Vec<String> = env
                .split(|b| *b == 0)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            if !vars.contains(&want_ns) {
                continue;
            }
            if let Some(pod) = vars.iter().find_map(|v| v.strip_prefix(&pod_prefix)) {
                out.push((*bin, pod.to_string()));
            }
        }
        out
    }
}
