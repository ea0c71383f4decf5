//! The Azurite backend of the conformance suite: one `azurite-table` per test process.
//!
//! [`azurite()`] decides once per process, in this order:
//! 1. `AZURITE_TABLE_ENDPOINT` set (e.g. `http://127.0.0.1:10002/devstoreaccount1`): use that
//!    server as is; nothing is installed or started.
//! 2. `node` or `npm` missing: a loud banner on stderr and `None` (the caller skips), or a panic
//!    with the same banner when `REQUIRE_AZURITE=1`.
//! 3. Otherwise npm installs `azurite@3.37.0` once into the cache folder (`AZURITE_CACHE_DIR`,
//!    default `<target>/azurite-cache`; lock-guarded, see `tooling`) and `azurite-table` starts
//!    in memory on a free port of 127.0.0.1. An install or start failure panics with the
//!    output of npm or Azurite: a broken setup is an error, never a skip.
//!
//! [`azurite_oauth()`] starts a second, separate instance for Microsoft Entra ID tests: HTTPS
//! with a certificate made for it (a private CA generated per process with `rcgen`) and
//! `--oauth basic`, which accepts bearer tokens by their audience, issuer and lifetime and
//! does not check their signature (Azurite's `TableTokenAuthenticator`), so
//! [`crate::token::mint_token`] makes tokens it accepts or refuses at will. Its endpoint is never taken from the
//! environment: it needs the CA this process generated.
//!
//! Invariants: only 127.0.0.1 is bound or dialled. The Azurite process never outlives the test
//! process: statics are not dropped at exit, so it runs under a `sh` watchdog that kills it
//! within about a second once the test process is gone (no `prctl`: `unsafe` is forbidden).
//! Every caller in a process gets the same instance; tests isolate themselves by table name
//! ([`unique_table_name`]).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::certificates::Certificates;
use crate::tooling;

/// The Azurite version the suite is pinned to (the protocol notes were verified against it).
pub const AZURITE_VERSION: &str = "3.37.0";

/// The well-known development storage account Azurite serves.
pub const ACCOUNT_NAME: &str = "devstoreaccount1";

/// The well-known key of [`ACCOUNT_NAME`] (public; every emulator uses it).
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// How long a freshly started Azurite may take to answer before the start counts as failed.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times a start is retried on a fresh port when another process took the port
/// between choosing it and Azurite binding it.
const PORT_ATTEMPTS: usize = 5;

/// A running Azurite table service (or the one named by `AZURITE_TABLE_ENDPOINT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Azurite {
    /// The table endpoint including the account path, without a trailing slash, e.g.
    /// `http://127.0.0.1:41234/devstoreaccount1`.
    pub endpoint: String,
    /// An account-key connection string for [`Self::endpoint`]:
    /// `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=...;TableEndpoint=<endpoint>;`.
    pub connection_string: String,
    /// The account name ([`ACCOUNT_NAME`]).
    pub account_name: String,
    /// The account key ([`ACCOUNT_KEY`]), base64.
    pub account_key: String,
}

impl Azurite {
    /// Describes the development account served at `endpoint` (a trailing `/` is dropped).
    pub fn at(endpoint: &str) -> Azurite {
        let endpoint = endpoint.trim().trim_end_matches('/').to_owned();
        Azurite {
            connection_string: format!(
                "DefaultEndpointsProtocol=http;AccountName={ACCOUNT_NAME};AccountKey={ACCOUNT_KEY};TableEndpoint={endpoint};"
            ),
            endpoint,
            account_name: ACCOUNT_NAME.to_owned(),
            account_key: ACCOUNT_KEY.to_owned(),
        }
    }
}

/// The Azurite instance of this test process, started on first use; `None` when Node.js or npm
/// is missing and `REQUIRE_AZURITE` is not set (a banner on stderr says so).
///
/// Blocking: the first call may install Azurite (tens of seconds, once per cache folder) and
/// start it (a few seconds, once per process); later calls return at once. Calling it from a
/// `#[tokio::test]` is fine: the first call blocks that test's runtime thread only.
///
/// # Panics
/// When `REQUIRE_AZURITE=1` and Node.js or npm is missing, and whenever the install or the
/// start fails (the message carries npm's or Azurite's output). Every later call panics with
/// the same message rather than retrying.
pub fn azurite() -> Option<&'static Azurite> {
    static INSTANCE: OnceLock<Result<Option<Azurite>, String>> = OnceLock::new();
    match INSTANCE.get_or_init(resolve) {
        Ok(instance) => instance.as_ref(),
        Err(message) => panic!("{message}"),
    }
}

/// A table name no other test (or earlier run against the same server) uses:
/// `prefix` followed by 32 hex digits, cut to the service's 63-character limit.
///
/// # Panics
/// When `prefix` is not 1-31 ASCII letters (table names must start with a letter and be
/// alphanumeric).
pub fn unique_table_name(prefix: &str) -> String {
    assert!(
        (1..=31).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_alphabetic()),
        "table name prefix must be 1-31 ASCII letters, got {prefix:?}"
    );
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// An Azurite table service over HTTPS that accepts Microsoft Entra ID bearer tokens
/// (`--oauth basic`), besides the account key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthAzurite {
    /// The table endpoint including the account path, e.g.
    /// `https://127.0.0.1:41234/devstoreaccount1`.
    pub endpoint: String,
    /// The PEM certificate of the CA that signed the server's certificate: trust it as a root
    /// certificate to reach [`Self::endpoint`].
    pub ca_pem: String,
    /// A file holding [`Self::ca_pem`], for programs started by a test.
    pub ca_file: PathBuf,
}

/// The HTTPS Azurite of this test process with OAuth enabled, started on first use; `None`
/// when Node.js or npm is missing and `REQUIRE_AZURITE` is not set (a banner says so).
///
/// Blocking, like [`azurite()`]; a separate process from it, on its own port.
///
/// # Panics
/// As [`azurite()`], and when the certificates cannot be generated or written.
pub fn azurite_oauth() -> Option<&'static OAuthAzurite> {
    static INSTANCE: OnceLock<Result<Option<OAuthAzurite>, String>> = OnceLock::new();
    match INSTANCE.get_or_init(resolve_oauth) {
        Ok(instance) => instance.as_ref(),
        Err(message) => panic!("{message}"),
    }
}

/// Starts the HTTPS OAuth instance (never from `AZURITE_TABLE_ENDPOINT`: see the module docs).
fn resolve_oauth() -> Result<Option<OAuthAzurite>, String> {
    if !node_and_npm_found()? {
        return Ok(None);
    }
    let program = install()?;
    let dir = std::env::temp_dir().join(format!("azurite-oauth-{}", std::process::id()));
    let certificates = Certificates::generate()?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let write = |name: &str, contents: &str| {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok::<_, String>(path)
    };
    let ca_file = write("ca.pem", &certificates.ca_pem)?;
    let cert = write("server-cert.pem", &certificates.server_pem)?;
    let key = write("server-key.pem", &certificates.server_key_pem)?;
    let mode = Mode::OAuth { cert: &cert, key: &key };
    let started = start(&program, &mode);
    // Azurite reads both when it starts; the key need not outlive that.
    tooling::remove_if_present(&cert);
    tooling::remove_if_present(&key);
    let port = started?;
    Ok(Some(OAuthAzurite {
        endpoint: format!("https://127.0.0.1:{port}/{ACCOUNT_NAME}"),
        ca_pem: certificates.ca_pem,
        ca_file,
    }))
}

/// Chooses the endpoint, installing and starting Azurite when no endpoint is given.
fn resolve() -> Result<Option<Azurite>, String> {
    if let Some(endpoint) = tooling::non_empty_env("AZURITE_TABLE_ENDPOINT") {
        return Ok(Some(Azurite::at(&endpoint)));
    }
    if !node_and_npm_found()? {
        return Ok(None);
    }
    let program = install()?;
    let port = start(&program, &Mode::Http)?;
    Ok(Some(Azurite::at(&format!("http://127.0.0.1:{port}/{ACCOUNT_NAME}"))))
}

/// Whether Node.js and npm are installed; when not, a loud banner and `false`, or the error
/// when `REQUIRE_AZURITE=1`.
fn node_and_npm_found() -> Result<bool, String> {
    tooling::node_and_npm_found(
        "AZURITE TESTS SKIPPED: node/npm not found",
        &[
            "Every scenario of the conformance suite ran on the embedded engine only.",
            "Install Node.js and npm (e.g. `apt-get install -y nodejs npm`), or point",
            "AZURITE_TABLE_ENDPOINT at a running Azurite table service.",
        ],
    )
}

/// Installs the pinned Azurite into the cache folder once; returns the `azurite-table` script.
fn install() -> Result<PathBuf, String> {
    let cache = tooling::cache_dir("AZURITE_CACHE_DIR", "azurite-cache");
    let program = Path::new("node_modules").join(".bin").join("azurite-table");
    Ok(tooling::npm_install_once(&cache, "azurite", AZURITE_VERSION, &program)?.join(program))
}

/// Why one start attempt did not give a running server.
enum StartError {
    /// Another process bound the chosen port first; try another.
    PortTaken,
    /// Anything else; the message includes Azurite's output.
    Fatal(String),
}

/// How an instance is started.
enum Mode<'a> {
    /// Plain HTTP, shared key and SAS only.
    Http,
    /// HTTPS with this certificate and key (PEM files), and `--oauth basic`.
    OAuth { cert: &'a Path, key: &'a Path },
}

/// Starts `azurite-table` on a free loopback port, retrying on a port race; returns the port.
fn start(program: &Path, mode: &Mode<'_>) -> Result<u16, String> {
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port()?;
        match start_on(program, port, mode) {
            Ok(()) => return Ok(port),
            Err(StartError::PortTaken) => continue,
            Err(StartError::Fatal(message)) => return Err(message),
        }
    }
    Err(format!("Azurite could not bind a free port of 127.0.0.1 in {PORT_ATTEMPTS} attempts"))
}

/// A port of 127.0.0.1 that was free a moment ago (the OS picks it; the listener is closed
/// again so Azurite can bind it, hence the retry in [`start`]).
fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot bind 127.0.0.1:0 to find a free port: {e}"))
}

/// The watchdog: `sh -c WATCHDOG sh <parent pid> <log> <program> <args...>` runs the program in
/// the background with its output in `<log>`, then polls once a second; when the parent (the
/// test process) is gone it stops the program (TERM, then KILL) and removes the log. When the
/// program dies on its own the watchdog exits with its status and keeps the log for the error
/// message.
const WATCHDOG: &str = r#"
parent=$1; log=$2; shift 2
"$@" >"$log" 2>&1 </dev/null &
child=$!
trap 'kill "$child" 2>/dev/null; exit 0' TERM INT HUP
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 1; done
if kill -0 "$child" 2>/dev/null; then
  kill "$child" 2>/dev/null
  sleep 2
  kill -9 "$child" 2>/dev/null
  rm -f "$log"
  exit 0
fi
wait "$child"
"#;

/// One start attempt on `port`: spawns Azurite under the watchdog and waits until it answers
/// (over HTTPS: until it reports it has started, as a TLS handshake is beyond this harness).
fn start_on(program: &Path, port: u16, mode: &Mode<'_>) -> Result<(), StartError> {
    let log = std::env::temp_dir().join(format!("azurite-table-{}-{port}.log", std::process::id()));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(WATCHDOG)
        .arg("sh")
        .arg(std::process::id().to_string())
        .arg(&log)
        .arg(program)
        .args(["--inMemoryPersistence", "--tableHost", "127.0.0.1", "--tablePort"])
        .arg(port.to_string())
        .args(["--loose", "--skipApiVersionCheck", "--disableTelemetry", "--silent"]);
    if let Mode::OAuth { cert, key } = mode {
        command.args(["--oauth", "basic", "--cert"]).arg(cert).arg("--key").arg(key);
    }
    let mut watchdog = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| StartError::Fatal(format!("cannot start sh to run Azurite: {e}")))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = exited(&mut watchdog)? {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            tooling::remove_if_present(&log);
            return Err(if output.contains("EADDRINUSE") {
                StartError::PortTaken
            } else {
                StartError::Fatal(format!(
                    "Azurite exited during start ({status}) on 127.0.0.1:{port}:\n{output}"
                ))
            });
        }
        let ready = match mode {
            Mode::Http => is_azurite(port),
            Mode::OAuth { .. } => std::fs::read_to_string(&log)
                .is_ok_and(|output| output.contains(&format!("successfully started on 127.0.0.1:{port}"))),
        };
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            // The watchdog stops Azurite when this process exits after the panic.
            return Err(StartError::Fatal(format!(
                "Azurite did not answer on 127.0.0.1:{port} within {}s; its output so far:\n{output}",
                START_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The watchdog's exit status if it has exited (which means Azurite has).
fn exited(watchdog: &mut Child) -> Result<Option<std::process::ExitStatus>, StartError> {
    watchdog.try_wait().map_err(|e| StartError::Fatal(format!("cannot poll the Azurite process: {e}")))
}

/// Whether the server on `127.0.0.1:port` answers HTTP as Azurite's table service (its
/// `Server` header), so a foreign process that won a port race is not mistaken for it.
fn is_azurite(port: u16) -> bool {
    http_get(port, &format!("/{ACCOUNT_NAME}/Tables"))
        .is_some_and(|response| response.contains("Server: Azurite-Table"))
}

/// A minimal HTTP/1.1 GET to `127.0.0.1:port`; the raw response, or `None` when nothing
/// answered within a second.
fn http_get(port: u16, path: &str) -> Option<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let timeout = Duration::from_secs(1);
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    // A read timeout after some bytes still leaves a usable status line and headers.
    let _ = stream.read_to_end(&mut response);
    (!response.is_empty()).then(|| String::from_utf8_lossy(&response).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_string_names_the_endpoint_and_the_well_known_account() {
        let a = Azurite::at("http://127.0.0.1:1234/devstoreaccount1/");
        assert_eq!(a.endpoint, "http://127.0.0.1:1234/devstoreaccount1");
        assert_eq!(
            a.connection_string,
            format!(
                "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={ACCOUNT_KEY};TableEndpoint=http://127.0.0.1:1234/devstoreaccount1;"
            )
        );
        assert_eq!((a.account_name.as_str(), a.account_key.as_str()), (ACCOUNT_NAME, ACCOUNT_KEY));
    }

    #[test]
    fn unique_table_names_are_valid_and_distinct() {
        let a = unique_table_name("conf");
        let b = unique_table_name("conf");
        assert_ne!(a, b);
        for name in [&a, &b] {
            assert!(name.starts_with("conf") && name.len() <= 63 && name.len() >= 3);
            assert!(name.bytes().all(|c| c.is_ascii_alphanumeric()), "{name}");
        }
    }

    #[test]
    #[should_panic(expected = "1-31 ASCII letters")]
    fn a_prefix_that_would_make_an_invalid_name_is_refused() {
        unique_table_name("9x");
    }

    #[test]
    fn http_get_sees_nothing_on_a_closed_port() {
        let port = free_port().unwrap();
        assert_eq!(http_get(port, "/"), None);
    }
}
