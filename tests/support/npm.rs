//! npm packages that tests drive with Node.js (the `graphql-http` audit, `playwright-core`):
//! installed once, at pinned versions, into a cache directory shared by test processes and
//! runs. Without Node.js and npm, or without the registry on a first run, the tests that need
//! them fail with a message saying so; they never skip.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// A set of packages installed together under one npm prefix.
pub struct Packages {
    /// The environment variable that names the cache directory instead of the default
    /// (`<target dir>/<default_dir>`), e.g. to reuse an installation on a machine without
    /// the registry.
    pub home_env: &'static str,
    pub default_dir: &'static str,
    /// (name, exact version) of each package.
    pub packages: &'static [(&'static str, &'static str)],
}

impl Packages {
    /// The npm prefix holding `node_modules/<name>` of every package at its version,
    /// installing them first if needed.
    pub fn install(&self) -> Result<PathBuf, String> {
        let home = self.cache_dir();
        let dest = home.join(
            self.packages
                .iter()
                .map(|(name, version)| format!("{}-{version}", name.replace('/', "+")))
                .collect::<Vec<_>>()
                .join("-"),
        );
        if self.installed(&dest) {
            return Ok(dest);
        }
        fs::create_dir_all(&home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
        // Install into a directory of our own, then move it in place: concurrent test
        // processes never see half an installation.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let tmp = home.join(format!(".install-{}-{nanos}", std::process::id()));
        let specs: Vec<String> = self
            .packages
            .iter()
            .map(|(name, version)| format!("{name}@{version}"))
            .collect();
        let output = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(&tmp)
            .args(&specs)
            .args([
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!("could not run `npm install` ({e}): the test needs Node.js 18+ and npm")
            })?;
        if !output.status.success() {
            let _ = fs::remove_dir_all(&tmp);
            return Err(format!(
                "`npm install {}` failed ({}):\n{}{}\nIf the npm registry is not reachable, \
                 point {} at a directory that already holds it.",
                specs.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                self.home_env,
            ));
        }
        if let Err(e) = fs::rename(&tmp, &dest) {
            let _ = fs::remove_dir_all(&tmp);
            // Another process may have won the race.
            if !self.installed(&dest) {
                return Err(format!(
                    "cannot move {} to {}: {e}",
                    tmp.display(),
                    dest.display()
                ));
            }
        }
        if self.installed(&dest) {
            Ok(dest)
        } else {
            Err(format!("no {} under {}", specs.join(" "), dest.display()))
        }
    }

    fn installed(&self, prefix: &Path) -> bool {
        self.packages.iter().all(|(name, version)| {
            let manifest = prefix.join("node_modules").join(name).join("package.json");
            fs::read_to_string(manifest)
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .is_some_and(|package| package["version"] == *version)
        })
    }

    /// `$<home_env>`, else `<target dir>/<default_dir>`.
    fn cache_dir(&self) -> PathBuf {
        if let Some(home) = std::env::var_os(self.home_env).filter(|v| !v.is_empty()) {
            return PathBuf::from(home);
        }
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                option_env!("CARGO_TARGET_TMPDIR")
                    .and_then(|tmp| Path::new(tmp).parent().map(Path::to_path_buf))
            })
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
        let target = if target.is_absolute() {
            target
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(target)
        };
        target.join(self.default_dir)
    }
}
