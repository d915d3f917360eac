//! A container's filesystem view: the image's own directories, the pod's
//! volumes at their mount paths, and a resolv.conf that points inside the
//! test network.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Container, KeyToPath, Pod, Secret, Volume};
use kube::{Api, Client};

/// One bind mount inside a container's mount namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Directory or file on the host.
    pub src: PathBuf,
    /// Path inside the container.
    pub dst: PathBuf,
    /// Mounted read-only.
    pub read_only: bool,
}

/// Where a pod's files live on the host: `DIR/pods/<ns>/<pod>`.
pub fn pod_dir(state: &Path, namespace: &str, name: &str) -> PathBuf {
    state.join("pods").join(namespace).join(name)
}

/// The host directory of a pod volume. A hostPath of `/` is the machine's
/// root, which every simulated node shares; any other hostPath is the
/// node's own, `DIR/node-roots/<node>/<path>`, so that simulated nodes keep
/// apart what real nodes keep apart (a Debugger's directory of state and
/// errlogs with enableSys) and nothing is written outside `DIR`.
pub fn volume_src(pod_dir: &Path, pod: &Pod, volume: &Volume) -> PathBuf {
    match &volume.host_path {
        Some(hp) if Path::new(&hp.path) == Path::new("/") => PathBuf::from("/"),
        Some(hp) => {
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .unwrap_or("unscheduled");
            // pod_dir is DIR/pods/<namespace>/<pod>.
            let state = pod_dir.ancestors().nth(3).unwrap_or(pod_dir);
            // Not DIR/nodes: cluster.sh keeps the node count in that file.
            state
                .join("node-roots")
                .join(node)
                .join(hp.path.trim_start_matches('/'))
        }
        None => pod_dir.join("volumes").join(&volume.name),
    }
}

/// The mounts of `container`: the image's directories first (as private
/// copies in `ctr_dir`), then its volumeMounts, parents before children so a
/// volume at `/scripts/custom` lands inside the image's `/scripts`.
pub fn plan_mounts(
    pod: &Pod,
    container: &Container,
    pod_dir: &Path,
    ctr_dir: &Path,
    image_files: &[(PathBuf, PathBuf)],
) -> Vec<Mount> {
    let mut mounts: Vec<Mount> = image_files
        .iter()
        .map(|(dst, _)| Mount {
            src: ctr_dir.join(dst.strip_prefix("/").unwrap_or(dst)),
            dst: dst.clone(),
            read_only: false,
        })
        .collect();
    let volumes: BTreeMap<&str, &Volume> = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .map(|v| (v.name.as_str(), v))
        .collect();
    let mut vm: Vec<Mount> = container
        .volume_mounts
        .iter()
        .flatten()
        .filter_map(|m| {
            let v = volumes.get(m.name.as_str())?;
            let mut src = volume_src(pod_dir, pod, v);
            if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                src = src.join(sub);
            }
            Some(Mount {
                src,
                dst: PathBuf::from(&m.mount_path),
                read_only: m.read_only.unwrap_or(false),
            })
        })
        .collect();
    vm.sort_by_key(|m| m.dst.components().count());
    mounts.extend(vm);
    mounts.push(Mount {
        src: pod_dir.join("resolv.conf"),
        dst: PathBuf::from("/etc/resolv.conf"),
        read_only: true,
    });
    mounts
}

/// Files of a ConfigMap or Secret volume: all keys, or only `items`, each
/// with its mode.
pub fn select_items(
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    default_mode: i32,
) -> Vec<(String, Vec<u8>, u32)> {
    match items {
        None => data
            .iter()
            .map(|(k, v)| (k.clone(), v.clone(), default_mode as u32))
            .collect(),
        Some(items) => items
            .iter()
            .filter_map(|it| {
                data.get(&it.key).map(|v| {
                    (
                        it.path.clone(),
                        v.clone(),
                        it.mode.unwrap_or(default_mode) as u32,
                    )
                })
            })
            .collect(),
    }
}

/// Writes the pod's volumes under `pod_dir/volumes`; run again to pick up
/// ConfigMap and Secret edits (files are replaced atomically, keys that went
/// away are removed). Errors name the missing object so the pod can wait.
pub async fn materialize(client: &Client, pod: &Pod, pod_dir: &Path) -> Result<()> {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    std::fs::create_dir_all(pod_dir)?;
    let resolv = format!(
        "nameserver 172.31.0.1\nsearch {ns}.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
    );
    write_if_changed(&pod_dir.join("resolv.conf"), resolv.as_bytes(), 0o644)?;
    for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
        if v.host_path.is_some() {
            make_host_dirs(pod, pod_dir, v)?;
            continue;
        }
        let dir = volume_src(pod_dir, pod, v);
        std::fs::create_dir_all(&dir)?;
        let files = if let Some(cm) = &v.config_map {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
            match api.get_opt(&cm.name).await? {
                Some(obj) => {
                    let mut data: BTreeMap<String, Vec<u8>> = obj
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.into_bytes()))
                        .collect();
                    for (k, v) in obj.binary_data.unwrap_or_default() {
                        data.insert(k, v.0);
                    }
                    select_items(&data, cm.items.as_deref(), cm.default_mode.unwrap_or(0o644))
                }
                None if cm.optional == Some(true) => Vec::new(),
                None => anyhow::bail!("configmap {ns}/{} not found", cm.name),
            }
        } else if let Some(sec) = &v.secret {
            let name = sec.secret_name.clone().unwrap_or_default();
            let api: Api<Secret> = Api::namespaced(client.clone(), &ns);
            match api.get_opt(&name).await? {
                Some(obj) => {
                    let data: BTreeMap<String, Vec<u8>> = obj
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, v.0))
                        .collect();
                    select_items(
                        &data,
                        sec.items.as_deref(),
                        sec.default_mode.unwrap_or(0o644),
                    )
                }
                None if sec.optional == Some(true) => Vec::new(),
                None => anyhow::bail!("secret {ns}/{name} not found"),
            }
        } else {
            // emptyDir and anything else: an empty directory the pod may fill.
            continue;
        };
        sync_dir(&dir, &files)?;
    }
    Ok(())
}

/// As a kubelet does: a hostPath of type DirectoryOrCreate is made when
/// missing, and so is every subPath the pod's containers mount of it.
fn make_host_dirs(pod: &Pod, pod_dir: &Path, v: &Volume) -> Result<()> {
    let create = v
        .host_path
        .as_ref()
        .is_some_and(|hp| hp.type_.as_deref() == Some("DirectoryOrCreate"));
    if !create {
        return Ok(());
    }
    let src = volume_src(pod_dir, pod, v);
    std::fs::create_dir_all(&src).with_context(|| format!("hostPath {}", src.display()))?;
    let subs = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .filter(|m| m.name == v.name)
        .filter_map(|m| m.sub_path.as_deref().filter(|s| !s.is_empty()));
    for sub in subs {
        std::fs::create_dir_all(src.join(sub))?;
    }
    Ok(())
}

fn sync_dir(dir: &Path, files: &[(String, Vec<u8>, u32)]) -> Result<()> {
    for (path, data, mode) in files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        write_if_changed(&target, data, *mode)?;
    }
    let keep: std::collections::BTreeSet<&str> = files
        .iter()
        .filter_map(|(p, _, _)| p.split('/').next())
        .collect();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !keep.contains(name.as_str()) {
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p)?;
            } else {
                std::fs::remove_file(&p)?;
            }
        }
    }
    Ok(())
}

/// Replaces `path` by a file with `data` and `mode` through a rename, so a
/// reader never sees half a file; does nothing when both already match.
pub fn write_if_changed(path: &Path, data: &[u8], mode: u32) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o7777 == mode && std::fs::read(path)? == data {
            return Ok(());
        }
    }
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    std::fs::write(&tmp, data).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Copies a directory tree (the image's files) into a container's private root.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src).with_context(|| format!("read {}", src.display()))? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        let ft = entry.file_type()?;
        if ft.is_dir() {
            copy_tree(&entry.path(), &to)?;
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &to)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_put_image_files_first_and_nested_volumes_after_their_parent() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "n"},
            "spec": {
                "volumes": [
                    {"name": "scripts", "configMap": {"name": "cm"}},
                    {"name": "host", "hostPath": {"path": "/"}},
                    {"name": "tok", "secret": {"secretName": "s"}}
                ],
                "containers": [{"name": "runner", "image": "combo-runner", "volumeMounts": [
                    {"name": "scripts", "mountPath": "/scripts/custom", "readOnly": true},
                    {"name": "tok", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true},
                    {"name": "host", "mountPath": "/host", "readOnly": true}
                ]}]
            }
        }))
        .unwrap();
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let pd = Path::new("/d/pods/n/p");
        let m = plan_mounts(
            &pod,
            c,
            pd,
            &pd.join("runner"),
            &[("/scripts".into(), "/repo/scripts".into())],
        );
        let dsts: Vec<_> = m
            .iter()
            .map(|m| m.dst.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            dsts,
            vec![
                "/scripts",
                "/host",
                "/scripts/custom",
                "/var/run/secrets/kubernetes.io/serviceaccount",
                "/etc/resolv.conf"
            ]
        );
        assert_eq!(m[0].src, pd.join("runner/scripts"));
        assert_eq!(m[1].src, PathBuf::from("/"));
        assert!(m[1].read_only);
        assert_eq!(m[2].src, pd.join("volumes/scripts"));
    }

    #[test]
    fn a_host_path_other_than_the_root_is_the_nodes_own_directory() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "n"},
            "spec": {
                "nodeName": "node-2",
                "volumes": [{"name": "data", "hostPath": {"path": "/var/lib/kube-combo/n/d", "type": "DirectoryOrCreate"}}],
                "containers": [{"name": "runner", "image": "combo-runner", "volumeMounts": [
                    {"name": "data", "mountPath": "/var/lib/combo-runner/state", "subPath": "u/state"}
                ]}]
            }
        }))
        .unwrap();
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let pd = Path::new("/d/pods/n/p");
        let m = plan_mounts(&pod, c, pd, &pd.join("runner"), &[]);
        assert_eq!(
            m[0].src,
            PathBuf::from("/d/node-roots/node-2/var/lib/kube-combo/n/d/u/state")
        );
    }

    #[test]
    fn items_select_and_rename_keys_with_their_modes() {
        let data: BTreeMap<String, Vec<u8>> = [
            ("a".to_string(), b"1".to_vec()),
            ("b".to_string(), b"2".to_vec()),
        ]
        .into();
        let all = select_items(&data, None, 0o755);
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|(_, _, m)| *m == 0o755));
        let items: Vec<KeyToPath> = vec![serde_json::from_value(
            serde_json::json!({"key": "b", "path": "x/b.sh", "mode": 0o700}),
        )
        .unwrap()];
        assert_eq!(
            select_items(&data, Some(&items), 0o644),
            vec![("x/b.sh".to_string(), b"2".to_vec(), 0o700)]
        );
    }

    #[test]
    fn sync_dir_replaces_edited_files_and_drops_removed_keys() {
        let dir = std::env::temp_dir().join(format!("nodesim-vol-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        sync_dir(
            &dir,
            &[
                ("a".into(), b"1".to_vec(), 0o755),
                ("b".into(), b"2".to_vec(), 0o644),
            ],
        )
        .unwrap();
        sync_dir(&dir, &[("a".into(), b"new".to_vec(), 0o755)]).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"new");
        assert!(!dir.join("b").exists());
        let mode = std::fs::metadata(dir.join("a"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o755);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
