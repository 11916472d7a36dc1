//! Debian's Chromium driven by playwright-core from Node.js scripts under `tests/support/`
//! (`browser_pages.mjs`, `browser_grid.mjs`): the pinned driver, installed once into a cache
//! directory (`$GRIDGATE_PLAYWRIGHT_HOME`, else `<target dir>/playwright`), and a way to run
//! a script on a spec and read the JSON it prints. Without Chromium, Node.js or npm the tests
//! fail and say what is missing; they never skip.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use super::npm::Packages;

/// The driver of the browser; it downloads no browser of its own (Debian's is used).
pub const PLAYWRIGHT_CORE_VERSION: &str = "1.65.1";
/// Use this directory as the npm prefix playwright-core is installed under.
const HOME_ENV: &str = "GRIDGATE_PLAYWRIGHT_HOME";
/// Debian's Chromium.
const CHROMIUM: &str = "/usr/bin/chromium";
/// The time limit of each step in the browser (loading a page, waiting for an element):
/// generous, because the machine is small and shared with the rest of the suite.
pub const STEP_TIMEOUT_MS: u64 = 60_000;

/// The npm prefix holding `node_modules/playwright-core` at the pinned version.
pub fn playwright() -> &'static Path {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let packages = Packages {
        home_env: HOME_ENV,
        default_dir: "playwright",
        packages: &[("playwright-core", PLAYWRIGHT_CORE_VERSION)],
    };
    match INSTALLED.get_or_init(|| packages.install()) {
        Ok(prefix) => prefix,
        Err(message) => panic!("{message}"),
    }
}

/// Debian's Chromium, or a failure that says how to install it.
pub fn chromium() -> &'static str {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: the browser tests need Debian's `chromium` package \
         (`apt-get install chromium`; .ci/run installs it)"
    );
    CHROMIUM
}

/// Runs `tests/support/<script>` with Node.js on `spec` (to which the driver, the browser
/// and the step time limit are added) and returns the JSON object it prints. The server runs
/// on the caller's runtime, so the browser is waited for on another thread.
pub async fn run(script: &str, mut spec: Value) -> Value {
    spec["playwright"] = Value::from(playwright().to_string_lossy().into_owned());
    spec["chromium"] = Value::from(chromium());
    spec["stepTimeoutMs"] = Value::from(STEP_TIMEOUT_MS);
    let dir = tempfile::tempdir().expect("temp dir");
    let spec_path = dir.path().join("spec.json");
    std::fs::write(&spec_path, spec.to_string()).expect("write the spec");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support")
        .join(script);
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(&script)
            .arg(&spec_path)
            .stdin(Stdio::null())
            .output()
    })
    .await
    .expect("the browser thread")
    .expect("could not run `node`: the browser tests need Node.js 18+");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the browser driver failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    drop(dir);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("browser report ({e}): {stdout}"))
}
