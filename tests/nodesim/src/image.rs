//! Which container images run as local processes, and what files they bring.

use std::path::{Path, PathBuf};

/// The binaries the project ships as images.
const PROJECT_BINARIES: [&str; 3] = ["combo-operator", "combo-runner", "combo-pinger"];

/// A container image the simulator can run: the binary that is its entrypoint
/// and the directories the image holds besides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalImage {
    /// The image's entrypoint binary name, e.g. `combo-runner`.
    pub binary: String,
    /// (path inside the container, source directory on the host) pairs; each
    /// container gets a private writable copy of the source.
    pub files: Vec<(PathBuf, PathBuf)>,
}

/// Maps an image reference to a project binary by its last path component,
/// without registry, tag or digest: `ghcr.io/kube-combo/combo-runner:v0.1.0`
/// is `combo-runner`, and so is `kube-combo/runner:v0.1.0` (the names
/// `config/default` gives the images). Any other image is `None` (it runs no
/// process).
pub fn binary_of(image: &str) -> Option<&'static str> {
    let no_digest = image.split('@').next().unwrap_or(image);
    let mut parts = no_digest.rsplit('/');
    let last = parts.next().unwrap_or(no_digest);
    let name = last.split(':').next().unwrap_or(last);
    let in_project_repo = parts.next() == Some("kube-combo");
    PROJECT_BINARIES
        .into_iter()
        .find(|b| *b == name || (in_project_repo && b.strip_prefix("combo-") == Some(name)))
}

/// The local image for `image`, with the runner image carrying the default
/// inspection scripts at `/scripts` as its Dockerfile does.
pub fn local_image(image: &str, scripts_src: &Path) -> Option<LocalImage> {
    let binary = binary_of(image)?;
    let files = if binary == "combo-runner" {
        vec![(PathBuf::from("/scripts"), scripts_src.to_path_buf())]
    } else {
        Vec::new()
    };
    Some(LocalImage {
        binary: binary.to_string(),
        files,
    })
}

/// Resolves a container's command to a program on the host: the image's
/// entrypoint when `command` is empty; a project binary named bare or by its
/// image path (`/usr/local/bin/combo-runner`) to the project build in `--bin-dir`.
pub fn resolve_program(
    img: &LocalImage,
    command: &[String],
    args: &[String],
    bin_dir: &Path,
) -> (PathBuf, Vec<String>) {
    let (program, rest): (String, Vec<String>) = match command.split_first() {
        None => (img.binary.clone(), args.to_vec()),
        Some((first, more)) => (first.clone(), more.iter().chain(args).cloned().collect()),
    };
    let base = Path::new(&program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = if PROJECT_BINARIES.contains(&base.as_str()) {
        bin_dir.join(base)
    } else {
        PathBuf::from(program)
    };
    (path, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_images_map_to_their_binary_whatever_the_registry_and_tag() {
        assert_eq!(
            binary_of("ghcr.io/kube-combo/combo-runner:v0.1.0"),
            Some("combo-runner")
        );
        assert_eq!(binary_of("combo-pinger"), Some("combo-pinger"));
        assert_eq!(
            binary_of("localhost:5000/x/combo-operator@sha256:abc"),
            Some("combo-operator")
        );
        assert_eq!(binary_of("docker.io/library/busybox:1.36"), None);
        assert_eq!(binary_of("registry:5000/combo-runner-extra:1"), None);
        assert_eq!(
            binary_of("172.31.0.1:5000/kube-combo/runner:dev"),
            Some("combo-runner")
        );
        assert_eq!(binary_of("kube-combo/operator"), Some("combo-operator"));
        assert_eq!(binary_of("other/runner:1"), None);
    }

    #[test]
    fn only_the_runner_image_brings_scripts() {
        let src = Path::new("/repo/scripts");
        let runner = local_image("x/combo-runner:1", src).unwrap();
        assert_eq!(
            runner.files,
            vec![(PathBuf::from("/scripts"), src.to_path_buf())]
        );
        assert!(local_image("x/combo-pinger:1", src)
            .unwrap()
            .files
            .is_empty());
        assert!(local_image("nginx", src).is_none());
    }

    #[test]
    fn commands_resolve_to_the_project_build() {
        let img = local_image("combo-runner", Path::new("/s")).unwrap();
        let bin = Path::new("/repo/target/release");
        let (p, a) = resolve_program(&img, &[], &["--once".into()], bin);
        assert_eq!(p, bin.join("combo-runner"));
        assert_eq!(a, vec!["--once"]);
        let (p, a) = resolve_program(
            &img,
            &["/usr/local/bin/combo-pinger".into(), "--ping".into()],
            &["127.0.0.1".into()],
            bin,
        );
        assert_eq!(p, bin.join("combo-pinger"));
        assert_eq!(a, vec!["--ping", "127.0.0.1"]);
        let (p, _) = resolve_program(&img, &["/bin/sh".into()], &[], bin);
        assert_eq!(p, PathBuf::from("/bin/sh"));
    }
}
