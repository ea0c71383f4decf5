//! Plumbing shared by the external tools the suite drives (Azurite from npm, the Python SDK
//! from PyPI): where their caches live, the one-time install guarded against concurrently
//! running test binaries, the loud skip when a tool is missing, and running a command with its
//! output kept for the error message.
//!
//! Invariants: an install is complete if and only if its marker file exists. The marker is
//! written (to a temporary name, then renamed, so it appears whole) only after the install
//! succeeded and only while the cache's lock file is held; a crashed or concurrent install
//! therefore never leaves a marker over a half-written tree, and the next run simply repeats it.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The cache folder of a tool: `$<env_var>` if set and non-empty, else `<target>/<default_name>`.
pub(crate) fn cache_dir(env_var: &str, default_name: &str) -> PathBuf {
    non_empty_env(env_var).map_or_else(|| target_dir().join(default_name), PathBuf::from)
}

/// Cargo's target folder. Cargo does not tell test binaries where it is, so this honours
/// `CARGO_TARGET_DIR` when the user set one (a relative one is taken from the workspace root)
/// and otherwise assumes the default `<workspace>/target`.
fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), Path::to_path_buf);
    match non_empty_env("CARGO_TARGET_DIR") {
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    }
}

/// The value of an environment variable, treating empty as unset.
pub(crate) fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the `REQUIRE_*` switch `switch` is on in the environment.
pub(crate) fn required(switch: &str) -> bool {
    switch_on(std::env::var(switch).ok().as_deref())
}

/// Whether a switch value means "on": `1`, `true` or `yes`, in any case.
fn switch_on(value: Option<&str>) -> bool {
    value.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// What a missing tool means for the caller: `Ok(None)` (skip, after a loud banner on the real
/// stderr) or, when `switch` is on, `Err` with the same banner for the caller to panic with.
pub(crate) fn skip_or_fail<T>(headline: &str, details: &[&str], switch: &str) -> Result<Option<T>, String> {
    let is_required = required(switch);
    let banner = banner(headline, details, switch, is_required);
    if is_required {
        return Err(banner);
    }
    // Written to the process's stderr directly: libtest captures `eprintln!` of passing tests,
    // and a skip nobody sees is the silent skip this banner exists to prevent.
    let _ = std::io::stderr().write_all(banner.as_bytes());
    Ok(None)
}

/// The multi-line banner announcing a skipped (or, when required, failed) group of tests.
fn banner(headline: &str, details: &[&str], switch: &str, is_required: bool) -> String {
    let rule = "=".repeat(78);
    let mut lines = vec![String::new(), rule.clone(), format!("=== {headline}")];
    lines.extend(details.iter().map(|line| format!("=== {line}")));
    lines.push(if is_required {
        format!("=== {switch} is set, so this is a failure, not a skip.")
    } else {
        format!("=== Set {switch}=1 to turn this skip into a failure (.ci/run does).")
    });
    lines.push(rule);
    lines.push(String::new());
    lines.join("\n")
}

/// The first line of `<program> --version`, or `None` when the program cannot be run.
pub(crate) fn tool_version(program: &str) -> Option<String> {
    let output = Command::new(program).arg("--version").stdin(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Some(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// Runs `command` to completion; a failure to start or a non-zero exit is an `Err` holding the
/// command line and everything it printed.
pub(crate) fn run_checked(command: &mut Command) -> Result<Output, String> {
    let shown = format!("{command:?}");
    let output =
        command.stdin(Stdio::null()).output().map_err(|e| format!("could not start {shown}: {e}"))?;
    if output.status.success() {
        Ok(output)
    } else {
        Err(format!(
            "{shown} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// Runs `install` once per cache folder: skipped when `dir/marker` exists, otherwise run under
/// an exclusive lock on `dir/.lock` (other processes wait), then the marker is published.
pub(crate) fn install_once(
    dir: &Path,
    marker: &str,
    install: impl FnOnce() -> Result<(), String>,
) -> Result<(), String> {
    let marker_path = dir.join(marker);
    if marker_path.exists() {
        return Ok(());
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create cache folder {}: {e}", dir.display()))?;
    let lock_path = dir.join(".lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open lock file {}: {e}", lock_path.display()))?;
    lock.lock().map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    // Another process may have finished the install while this one waited for the lock.
    if !marker_path.exists() {
        install()?;
        publish_marker(&marker_path)?;
    }
    // Dropping the file releases the lock; the OS also releases it if this process dies.
    drop(lock);
    Ok(())
}

/// Checks that an install recorded by `marker` in `dir` still provides `product`; a cache
/// damaged by hand gets a clear instruction instead of a confusing failure later.
pub(crate) fn check_installed(dir: &Path, marker: &str, product: &Path) -> Result<(), String> {
    if product.exists() {
        Ok(())
    } else {
        Err(format!(
            "{} is missing although {} says it was installed; delete {} to reinstall",
            product.display(),
            dir.join(marker).display(),
            dir.display()
        ))
    }
}

/// Writes the marker under a temporary name and renames it into place, so it appears whole.
fn publish_marker(marker_path: &Path) -> Result<(), String> {
    let tmp = marker_path.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(b"installed\n")?;
        f.sync_all()?;
        fs::rename(&tmp, marker_path)
    };
    write().map_err(|e| format!("cannot write marker {}: {e}", marker_path.display()))
}

/// Removes a file that may already be gone.
pub(crate) fn remove_if_present(path: &Path) {
    if let Err(e) = fs::remove_file(path) {
        // A missing file is the goal; anything else only leaves a stray log behind.
        if e.kind() != ErrorKind::NotFound {
            let _ = writeln!(std::io::stderr(), "note: could not remove {}: {e}", path.display());
        }
    }
}

/// Whether Node.js and npm are installed; when not, a loud banner (`headline`, what was found,
/// then `details`) and `false`, or the banner as the error when `REQUIRE_AZURITE=1` (Node.js is
/// what Azurite and the JavaScript SDK both need).
pub(crate) fn node_and_npm_found(headline: &str, details: &[&str]) -> Result<bool, String> {
    let (node, npm) = (tool_version("node"), tool_version("npm"));
    if node.is_some() && npm.is_some() {
        return Ok(true);
    }
    let found = format!(
        "node: {}, npm: {}",
        node.as_deref().unwrap_or("NOT FOUND"),
        npm.as_deref().unwrap_or("NOT FOUND")
    );
    let lines: Vec<&str> = std::iter::once(found.as_str()).chain(details.iter().copied()).collect();
    skip_or_fail(headline, &lines, "REQUIRE_AZURITE").map(|_: Option<()>| false)
}

/// Installs npm package `package` at `version` once into `cache/<version>` (see
/// [`install_once`]) and returns that folder, after checking it holds `product` (a path
/// relative to it).
pub(crate) fn npm_install_once(
    cache: &Path,
    package: &str,
    version: &str,
    product: &Path,
) -> Result<PathBuf, String> {
    let prefix = cache.join(version);
    let marker = format!("{}-{version}.installed", package.trim_start_matches('@').replace('/', "-"));
    install_once(cache, &marker, || {
        run_checked(
            Command::new("npm")
                .arg("install")
                .arg("--prefix")
                .arg(&prefix)
                .args(["--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=warn"])
                .arg(format!("{package}@{version}")),
        )
        .map(drop)
        .map_err(|e| format!("installing {package} from npm failed:\n{e}"))
    })
    .and_then(|()| check_installed(cache, &marker, &prefix.join(product)))
    .map_err(|e| format!("{package} install into {} failed: {e}", cache.display()))?;
    Ok(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "conformance-tooling-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn install_once_runs_the_install_once_across_threads() {
        let dir = scratch("once");
        let runs = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (dir, runs, barrier) = (dir.clone(), runs.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    install_once(&dir, "done", || {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(dir.join("done").exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_install_leaves_no_marker_and_is_retried() {
        let dir = scratch("retry");
        let err = install_once(&dir, "done", || Err("boom".to_owned())).unwrap_err();
        assert_eq!(err, "boom");
        assert!(!dir.join("done").exists());
        let mut ran = false;
        install_once(&dir, "done", || {
            ran = true;
            Ok(())
        })
        .unwrap();
        assert!(ran);
        assert!(dir.join("done").exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_damaged_cache_is_reported_with_the_fix() {
        let dir = scratch("damaged");
        install_once(&dir, "done", || Ok(())).unwrap();
        let err = check_installed(&dir, "done", &dir.join("bin")).unwrap_err();
        assert!(err.contains("delete") && err.contains(&dir.display().to_string()), "{err}");
        fs::write(dir.join("bin"), "").unwrap();
        check_installed(&dir, "done", &dir.join("bin")).unwrap();
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn run_checked_reports_output_of_a_failing_command() {
        let err = run_checked(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"])).unwrap_err();
        assert!(err.contains("out") && err.contains("err") && err.contains('3'), "{err}");
    }

    #[test]
    fn switch_values() {
        for on in ["1", "true", "YES", " 1 "] {
            assert!(switch_on(Some(on)), "{on}");
        }
        for off in ["", "0", "false", "no"] {
            assert!(!switch_on(Some(off)), "{off}");
        }
        assert!(!switch_on(None));
    }

    #[test]
    fn the_banner_names_the_tool_the_reason_and_the_switch() {
        let skip = banner("X SKIPPED", &["why"], "REQUIRE_X", false);
        let fail = banner("X SKIPPED", &["why"], "REQUIRE_X", true);
        for b in [&skip, &fail] {
            assert!(b.contains("=== X SKIPPED\n=== why\n"), "{b}");
        }
        assert!(skip.contains("Set REQUIRE_X=1"), "{skip}");
        assert!(fail.contains("REQUIRE_X is set"), "{fail}");
    }

    #[test]
    fn tool_version_is_none_for_a_missing_program() {
        assert_eq!(tool_version("surely-not-a-real-program-4f1c"), None);
    }
}
