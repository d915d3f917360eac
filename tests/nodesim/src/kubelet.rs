//! The sync loop: pods bound to simulated nodes become processes, and their
//! status flows back to the API server.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use combo_testkit::netplan::node_name;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::Client;
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::env::{container_env, PodFacts};
use crate::image::{local_image, resolve_program, LocalImage};
use crate::netns::{self, Ipam};
use crate::process::{spawn, Proc};
use crate::status::{pod_status, CtrState, CtrView};
use crate::volumes::{self, copy_tree, plan_mounts};

/// Settings of the simulated kubelet.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The cluster's state directory (pod logs and files go under `pods/`).
    pub state_dir: PathBuf,
    /// Where the project's binaries are.
    pub bin_dir: PathBuf,
    /// The default inspection scripts, the runner image's `/scripts`.
    pub scripts: PathBuf,
    /// The API server address as pods reach it.
    pub api_host: String,
    /// The API server port.
    pub api_port: String,
    /// Number of simulated nodes (`node-1` .. `node-N`).
    pub nodes: u32,
}

struct CtrRt {
    spec: Container,
    local: Option<LocalImage>,
    proc: Option<Proc>,
    state: CtrState,
    restarts: i32,
    next_start: Instant,
}

struct PodRt {
    pod: Arc<Pod>,
    node_index: u32,
    ip: String,
    host_ip: String,
    netns_path: PathBuf,
    own_netns: bool,
    dir: PathBuf,
    start_time: String,
    restart_policy: String,
    ctrs: Vec<CtrRt>,
    last_status: Option<Value>,
    last_volume_sync: Instant,
}

/// The simulated kubelet of all simulated nodes.
pub struct Kubelet {
    client: Client,
    cfg: Settings,
    ipam: Arc<Mutex<Ipam>>,
    pods: HashMap<String, PodRt>,
    /// Pods waiting for a retry of their setup, with the error.
    pending: HashMap<String, (Instant, String, Option<Value>)>,
    /// Deleted pods being stopped, and when: a pod still listed long after
    /// (its confirmation failed) is confirmed again.
    finalizing: HashMap<String, Instant>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Kubelet {
    /// A kubelet for `cfg.nodes` nodes.
    pub fn new(client: Client, cfg: Settings) -> Self {
        Kubelet {
            client,
            cfg,
            ipam: Arc::default(),
            pods: HashMap::new(),
            pending: HashMap::new(),
            finalizing: HashMap::new(),
        }
    }

    fn ours(&self, pod: &Pod) -> Option<u32> {
        let node = pod.spec.as_ref()?.node_name.as_deref()?;
        netns::node_index(node).filter(|i| (1..=self.cfg.nodes).contains(i))
    }

    /// Runs until `stop` resolves, then stops every container.
    pub async fn run(mut self, stop: impl std::future::Future<Output = ()>) -> Result<()> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let (reader, writer) = reflector::store();
        let stream = reflector(writer, watcher(api, watcher::Config::default()))
            .default_backoff()
            .applied_objects();
        tokio::spawn(async move {
            futures::pin_mut!(stream);
            while let Some(ev) = stream.next().await {
                if let Err(e) = ev {
                    warn!(error = %e, "pod watch");
                }
            }
        });
        reader.wait_until_ready().await?;
        let mut heartbeat = Instant::now();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = &mut stop => break,
                _ = tokio::time::sleep(Duration::from_millis(300)) => {}
            }
            self.sync(reader.state()).await;
            if heartbeat.elapsed() > Duration::from_secs(20) {
                heartbeat = Instant::now();
                let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(self.client.clone());
                for i in 1..=self.cfg.nodes {
                    if let Err(e) = crate::nodes::heartbeat(&nodes, &node_name(i), i).await {
                        warn!(error = %e, node = i, "heartbeat");
                    }
                }
            }
        }
        info!(pods = self.pods.len(), "stopping every pod");
        let all: Vec<PodRt> = self.pods.drain().map(|(_, p)| p).collect();
        futures::future::join_all(all.into_iter().map(|p| teardown(p, self.ipam.clone()))).await;
        Ok(())
    }

    async fn sync(&mut self, pods: Vec<Arc<Pod>>) {
        let mut seen = HashSet::new();
        for pod in pods {
            let Some(index) = self.ours(&pod) else {
                continue;
            };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            seen.insert(uid.clone());
            if pod.metadata.deletion_timestamp.is_some() {
                self.finalize(&uid, &pod);
                continue;
            }
            if !self.pods.contains_key(&uid) {
                let retry_at = self.pending.get(&uid).map(|p| p.0);
                if retry_at.is_some_and(|t| t > Instant::now()) {
                    continue;
                }
                match self.setup(&pod, index).await {
                    Ok(rt) => {
                        self.pending.remove(&uid);
                        self.pods.insert(uid.clone(), rt);
                    }
                    Err(e) => {
                        let msg = format!("{e:#}");
                        let prev = self.pending.remove(&uid);
                        if prev.as_ref().map(|p| &p.1) != Some(&msg) {
                            warn!(pod = %name_of(&pod), error = %msg, "pod setup");
                        }
                        let last = prev.and_then(|p| p.2);
                        let st = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                            "containerStatuses": pod.spec.iter().flat_map(|s| &s.containers).map(|c| json!({
                                "name": c.name, "image": c.image, "imageID": "", "ready": false, "restartCount": 0,
                                "state": {"waiting": {"reason": "ContainerCreating", "message": msg}}})).collect::<Vec<_>>()});
                        let last = if last.as_ref() != Some(&st) {
                            patch_status(&self.client, &pod, &st).await;
                            Some(st)
                        } else {
                            last
                        };
                        self.pending
                            .insert(uid, (Instant::now() + Duration::from_secs(1), msg, last));
                        continue;
                    }
                }
            }
            let Some(rt) = self.pods.get_mut(&uid) else {
                continue;
            };
            rt.pod = pod.clone();
            step(rt, &self.cfg);
            if rt.last_volume_sync.elapsed() > Duration::from_secs(2) {
                rt.last_volume_sync = Instant::now();
                if let Err(e) = volumes::materialize(&self.client, &rt.pod, &rt.dir).await {
                    warn!(pod = %name_of(&rt.pod), error = %format!("{e:#}"), "volume refresh");
                }
            }
            let views: Vec<CtrView> = rt
                .ctrs
                .iter()
                .map(|c| CtrView {
                    name: c.spec.name.clone(),
                    image: c.spec.image.clone().unwrap_or_default(),
                    state: c.state.clone(),
                    restart_count: c.restarts,
                })
                .collect();
            let st = pod_status(
                &views,
                &rt.restart_policy,
                &rt.ip,
                &rt.host_ip,
                &rt.start_time,
            );
            if rt.last_status.as_ref() != Some(&st) {
                patch_status(&self.client, &rt.pod, &st).await;
                rt.last_status = Some(st);
            }
        }
        let gone: Vec<String> = self
            .pods
            .keys()
            .filter(|u| !seen.contains(*u))
            .cloned()
            .collect();
        for uid in gone {
            if let Some(rt) = self.pods.remove(&uid) {
                tokio::spawn(teardown(rt, self.ipam.clone()));
            }
        }
        self.pending.retain(|u, _| seen.contains(u));
        self.finalizing.retain(|u, _| seen.contains(u));
    }

    /// A deleted pod: stop its processes, then confirm the deletion as the
    /// kubelet does (grace period 0).
    fn finalize(&mut self, uid: &str, pod: &Arc<Pod>) {
        let since = self.finalizing.get(uid);
        if since.is_some_and(|t| t.elapsed() < Duration::from_secs(15)) {
            return;
        }
        self.finalizing.insert(uid.to_string(), Instant::now());
        self.pending.remove(uid);
        let rt = self.pods.remove(uid);
        let client = self.client.clone();
        let ipam = self.ipam.clone();
        let pod = pod.clone();
        let uid = uid.to_string();
        tokio::spawn(async move {
            if let Some(rt) = rt {
                teardown(rt, ipam).await;
            }
            let api: Api<Pod> = Api::namespaced(
                client,
                pod.metadata.namespace.as_deref().unwrap_or_default(),
            );
            let dp = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            if let Err(e) = api.delete(&name_only(&pod), &dp).await {
                warn!(pod = %name_of(&pod), error = %e, "confirm deletion");
            }
        });
    }

    async fn setup(&mut self, pod: &Arc<Pod>, index: u32) -> Result<PodRt> {
        let spec = pod
            .spec
            .as_ref()
            .ok_or_else(|| anyhow!("pod has no spec"))?;
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let dir = volumes::pod_dir(&self.cfg.state_dir, &ns, &name_only(pod));
        volumes::materialize(&self.client, pod, &dir).await?;
        let host_ip = netns::node_ip(index);
        let host_network = spec.host_network == Some(true);
        let (ip, netns_path) = if host_network {
            (
                host_ip.clone(),
                PathBuf::from("/run/netns").join(netns::node_netns(&node_name(index))),
            )
        } else {
            let ip = self
                .ipam
                .lock()
                .expect("ipam lock")
                .allocate(index)
                .ok_or_else(|| anyhow!("node-{index} has no free pod address"))?;
            if let Err(e) = netns::create_pod_netns(&uid, index, &ip) {
                self.ipam.lock().expect("ipam lock").release(&ip);
                return Err(e);
            }
            (ip, PathBuf::from("/run/netns").join(netns::pod_netns(&uid)))
        };
        let ctrs = spec
            .containers
            .iter()
            .map(|c| CtrRt {
                spec: c.clone(),
                local: local_image(c.image.as_deref().unwrap_or_default(), &self.cfg.scripts),
                proc: None,
                state: CtrState::Waiting {
                    reason: "ContainerCreating".into(),
                    message: String::new(),
                },
                restarts: 0,
                next_start: Instant::now(),
            })
            .collect();
        info!(pod = %name_of(pod), ip = %ip, node = index, "pod admitted");
        Ok(PodRt {
            pod: pod.clone(),
            node_index: index,
            ip,
            host_ip,
            netns_path,
            own_netns: !host_network,
            dir,
            start_time: now(),
            restart_policy: spec
                .restart_policy
                .clone()
                .unwrap_or_else(|| "Always".into()),
            ctrs,
            last_status: None,
            last_volume_sync: Instant::now(),
        })
    }
}

/// Starts what should run, notices what ended, restarts per restartPolicy.
fn step(rt: &mut PodRt, cfg: &Settings) {
    for i in 0..rt.ctrs.len() {
        let exited = rt.ctrs[i].proc.as_mut().and_then(|p| p.try_exit());
        let c = &mut rt.ctrs[i];
        if let Some(code) = exited {
            c.proc = None;
            let started_at = match &c.state {
                CtrState::Running { started_at } => started_at.clone(),
                _ => now(),
            };
            info!(pod = %name_of(&rt.pod), container = %c.spec.name, code, "container exited");
            c.state = CtrState::Terminated {
                exit_code: code,
                started_at,
                finished_at: now(),
            };
            let restart = match rt.restart_policy.as_str() {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            if restart {
                c.restarts += 1;
                let backoff = 1u64 << c.restarts.clamp(0, 4);
                c.next_start = Instant::now() + Duration::from_secs(backoff.min(10));
            } else {
                c.next_start = Instant::now() + Duration::from_secs(u64::MAX / 4);
            }
        }
        let c = &mut rt.ctrs[i];
        let should_start = c.proc.is_none()
            && Instant::now() >= c.next_start
            && match &c.state {
                CtrState::Waiting { .. } => true,
                CtrState::Terminated { .. } => {
                    c.next_start < Instant::now() + Duration::from_secs(3600)
                }
                CtrState::Running { .. } => c.local.is_some(),
            };
        if should_start {
            let state = start_container(rt, i, cfg);
            rt.ctrs[i].state = state;
        }
    }
}

fn start_container(rt: &mut PodRt, i: usize, cfg: &Settings) -> CtrState {
    let c = &rt.ctrs[i];
    let Some(img) = c.local.clone() else {
        // Not one of the project's images: nothing to run, reported Running.
        return CtrState::Running { started_at: now() };
    };
    let facts = PodFacts {
        pod_ip: rt.ip.clone(),
        host_ip: rt.host_ip.clone(),
        api_host: cfg.api_host.clone(),
        api_port: cfg.api_port.clone(),
    };
    let waiting = |reason: &str, message: String| CtrState::Waiting {
        reason: reason.into(),
        message,
    };
    let env = match container_env(&rt.pod, &c.spec, &facts) {
        Ok(e) => e,
        Err(e) => return waiting("CreateContainerConfigError", e.to_string()),
    };
    let (program, args) = resolve_program(
        &img,
        c.spec.command.as_deref().unwrap_or_default(),
        c.spec.args.as_deref().unwrap_or_default(),
        &cfg.bin_dir,
    );
    if !program.exists() {
        return waiting(
            "ErrImageNeverPull",
            format!("{} is not built", program.display()),
        );
    }
    // A (re)started container gets a fresh copy of its image's files.
    let ctr_dir = rt.dir.join(&c.spec.name);
    for (dst, src) in &img.files {
        let to = ctr_dir.join(dst.strip_prefix("/").unwrap_or(dst));
        let _ = std::fs::remove_dir_all(&to);
        if let Err(e) = copy_tree(src, &to) {
            return waiting("CreateContainerError", format!("{e:#}"));
        }
    }
    let mounts = plan_mounts(&rt.pod, &c.spec, &rt.dir, &ctr_dir, &img.files);
    let log = rt.dir.join(format!("{}.log", c.spec.name));
    match spawn(&rt.netns_path, &mounts, &program, &args, &env, &log) {
        Ok(p) => {
            info!(pod = %name_of(&rt.pod), container = %c.spec.name, node = rt.node_index, "container started");
            rt.ctrs[i].proc = Some(p);
            CtrState::Running { started_at: now() }
        }
        Err(e) => waiting("CreateContainerError", format!("{e:#}")),
    }
}

async fn teardown(mut rt: PodRt, ipam: Arc<Mutex<Ipam>>) {
    let grace = rt
        .pod
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(30)
        .clamp(0, 10) as u64;
    let stops = rt
        .ctrs
        .iter_mut()
        .filter_map(|c| c.proc.as_mut())
        .map(|p| p.stop(Duration::from_secs(grace)));
    let started = Instant::now();
    let codes = futures::future::join_all(stops).await;
    if rt.own_netns {
        let uid = rt.pod.metadata.uid.clone().unwrap_or_default();
        if let Err(e) = netns::delete_pod_netns(&uid) {
            warn!(pod = %name_of(&rt.pod), error = %e, "delete netns");
        }
        ipam.lock().expect("ipam lock").release(&rt.ip);
    }
    info!(pod = %name_of(&rt.pod), ?codes, took = ?started.elapsed(), "pod stopped");
}

async fn patch_status(client: &Client, pod: &Pod, status: &Value) {
    let api: Api<Pod> = Api::namespaced(
        client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or_default(),
    );
    if let Err(e) = api
        .patch_status(
            &name_only(pod),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
    {
        warn!(pod = %name_of(pod), error = %e, "status update");
    }
}

fn name_only(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

fn name_of(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        name_only(pod)
    )
}
