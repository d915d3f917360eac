//! A page in a real browser: headless Chromium takes a screenshot of a
//! file and prints its DOM as the browser built it (docs/testing.md#the-mesh-page-in-chromium).
//!
//! Without `chromium` on PATH a test skips with one line saying so, unless
//! [`REQUIRE`] is set (`tests/run-all.sh` sets it, and `tests/deps.sh`
//! installs the browser), then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set to `1`, a missing `chromium` fails the test instead of skipping it.
pub const REQUIRE: &str = "COMBO_REQUIRE_CHROMIUM";

/// The window the screenshot is taken in.
pub const WINDOW: (u32, u32) = (1200, 800);

/// What Chromium made of a page.
#[derive(Debug)]
pub struct Rendered {
    /// The screenshot, a PNG of [`WINDOW`].
    pub screenshot: PathBuf,
    /// The DOM after parsing and layout (`--dump-dom`).
    pub dom: String,
}

/// `chromium` on PATH; `None` after a skip line naming `test` when it is
/// missing. Panics when it is missing and [`REQUIRE`] is `1`.
pub fn browser(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let why = "no chromium on PATH (apt-get install --no-install-recommends chromium; tests/deps.sh installs it)";
        if std::env::var(REQUIRE).as_deref() == Ok("1") {
            panic!("{test}: {why}, and {REQUIRE}=1 requires it");
        }
        eprintln!("skipping {test}: {why}");
    }
    found
}

/// Renders `page` with `chromium` headless: its screenshot goes to
/// `out_dir/<page stem>.png`, the browser's profile to `out_dir/profile`.
pub fn render(chromium: &Path, page: &Path, out_dir: &Path) -> Result<Rendered, String> {
    let page = page
        .canonicalize()
        .map_err(|e| format!("{}: {e}", page.display()))?;
    let stem = page.file_stem().unwrap_or_default().to_string_lossy();
    let screenshot = out_dir.join(format!("{stem}.png"));
    let url = format!("file://{}", page.display());
    let shot = format!("--screenshot={}", screenshot.display());
    let size = format!("--window-size={},{}", WINDOW.0, WINDOW.1);
    run(chromium, out_dir, &[&shot, &size, &url])?;
    let dom = run(chromium, out_dir, &["--dump-dom", &url])?;
    Ok(Rendered { screenshot, dom })
}

/// One headless run; its stdout. Given up after a minute: a browser that
/// hangs fails the test rather than the whole suite.
fn run(chromium: &Path, out_dir: &Path, args: &[&str]) -> Result<String, String> {
    let profile = format!("--user-data-dir={}", out_dir.join("profile").display());
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", &profile])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", chromium.display()))?;
    let started = Instant::now();
    while child.try_wait().map_err(|e| e.to_string())?.is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("chromium {args:?} did not finish within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "chromium {args:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Width and height of a PNG, from its header; `None` when `bytes` is not
/// a PNG.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || &bytes[..8] != SIGNATURE || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(16), word(20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_header_gives_its_size_and_anything_else_none() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&1200u32.to_be_bytes());
        png.extend_from_slice(&800u32.to_be_bytes());
        assert_eq!(png_size(&png), Some((1200, 800)));
        assert_eq!(png_size(b"<!DOCTYPE html><html></html>"), None);
        assert_eq!(png_size(&png[..20]), None);
    }
}
