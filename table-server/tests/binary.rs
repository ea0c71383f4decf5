//! The `table-server` binary: it serves the development account where it says it listens,
//! and stops cleanly on SIGTERM, even with its stdout closed.

// Test helpers unwrap freely: a failure is the test's verdict.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use table_client::auth::Credential;
use table_client::{Entity, TableServiceClient};
use table_server::{DEV_ACCOUNT, DEV_KEY};

/// Starts the binary on a free loopback port without auth, with `flags`; returns the process
/// (killed when dropped) and the `host:port` its banner names. Its stdout is closed once the banner is read, so every
/// test also checks that a server whose log reader is gone goes on serving and stops cleanly.
fn start(flags: &[&str]) -> (KillOnDrop, String) {
    start_serving(&[&["--no-auth"], flags].concat(), None)
}

/// As [`start`], with auth as `flags` say, and `AZURITE_ACCOUNTS` set to `azurite_accounts`
/// (removed when `None`, so the caller's environment never leaks in).
fn start_serving(flags: &[&str], azurite_accounts: Option<&str>) -> (KillOnDrop, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_table-server"));
    command.args(["--port", "0"]).args(flags).stdout(Stdio::piped());
    match azurite_accounts {
        Some(value) => command.env("AZURITE_ACCOUNTS", value),
        None => command.env_remove("AZURITE_ACCOUNTS"),
    };
    let mut child = KillOnDrop(command.spawn().unwrap());
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    // "table-server listening on http://127.0.0.1:PORT/devstoreaccount1 (no auth)"
    let address = banner.split("http://").nth(1).and_then(|rest| rest.split('/').next()).unwrap().to_owned();
    assert!(address.starts_with("127.0.0.1:"), "{banner}");
    drop(stdout);
    (child, address)
}

/// Kills the server when the test ends, passed or failed, so a failing test leaks no process.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lists the tables of the server at `address` over a fresh connection: 200.
#[cfg(unix)]
fn lists_tables(address: &str) {
    let mut stream = TcpStream::connect(address).unwrap();
    // A server that stopped serving fails the test rather than hanging it.
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        stream,
        "GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: {address}\r\nx-ms-version: 2019-02-02\r\n\
         Accept: application/json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[cfg(unix)]
#[test]
fn serves_until_sigterm_then_exits_cleanly() {
    let (mut server, address) = start(&[]);

    lists_tables(&address);

    let killed = Command::new("kill").args(["-TERM", &server.0.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "table-server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert!(TcpStream::connect(&address).is_err(), "nothing listens after the exit");
}

#[test]
fn prints_its_version() {
    let output = Command::new(env!("CARGO_BIN_EXE_table-server")).arg("--version").output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("table-server {}", env!("CARGO_PKG_VERSION"))
    );
}

/// `--page-size` and `--fail-call` reach the engine the binary serves.
#[cfg(unix)]
#[test]
fn engine_flags_take_effect() {
    let (_server, address) = start(&["--page-size", "1", "--fail-call", "4=busy"]);
    let send = |method: &str, path: &str, body: &str| {
        let mut stream = TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "{method} /devstoreaccount1/{path} HTTP/1.1\r\nHost: {address}\r\nx-ms-version: 2019-02-02\r\n\
             Accept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    assert!(send("POST", "Tables", r#"{"TableName":"flags"}"#).starts_with("HTTP/1.1 201"));
    for rk in ["1", "2"] {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#);
        assert!(send("POST", "flags", &body).starts_with("HTTP/1.1 201"));
    }
    let busy = send("GET", "flags()", "");
    assert!(busy.starts_with("HTTP/1.1 503") && busy.contains("ServerBusy"), "{busy}");
    let page = send("GET", "flags()", "");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.to_ascii_lowercase().contains("x-ms-continuation-nextpartitionkey"),
        "one entity a page: {page}"
    );
}

/// The runtime's worker threads (tokio names them `tokio-rt-worker`) of
/// the process `pid`.
#[cfg(target_os = "linux")]
fn workers(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter(|task| {
            let comm = std::fs::read_to_string(task.as_ref().unwrap().path().join("comm")).unwrap();
            comm.trim() == "tokio-rt-worker"
        })
        .count()
}

/// `--threads N` serves on N worker threads; without it, on one per CPU core.
#[cfg(target_os = "linux")]
#[test]
fn threads_flag_sets_the_worker_threads() {
    let cores = std::thread::available_parallelism().unwrap().get();
    for (flags, expected) in [(&["--threads", "3"][..], 3), (&["--threads", "1"], 1), (&[], cores)] {
        let (server, address) = start(flags);
        lists_tables(&address);
        // Serving, so every worker thread exists; a thread names itself once it first runs,
        // which a loaded machine may delay.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut counted = workers(server.0.id());
        while counted != expected && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            counted = workers(server.0.id());
        }
        assert_eq!(counted, expected, "{flags:?}");
    }
}

/// The CPU time the process `pid` has used so far, in clock ticks (utime + stime).
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which may hold spaces) start with the state; utime
    // and stime are the 14th and 15th fields of the whole line.
    let after_name = stat.rsplit_once(')').unwrap().1;
    after_name.split_whitespace().skip(11).take(2).map(|ticks| ticks.parse::<u64>().unwrap()).sum()
}

/// Out of file descriptors, the server waits for some to be freed rather than retrying its
/// failing accept at once (which spun every worker thread at full CPU), and serves again when
/// they are.
#[cfg(target_os = "linux")]
#[test]
fn out_of_file_descriptors_it_waits_without_spinning_and_serves_again() {
    use rustix::process::{Pid, Resource, Rlimit, getrlimit, prlimit};
    let (server, address) = start(&[]);
    lists_tables(&address);
    let pid = server.0.id();
    // Room for what it has open and two connections more.
    let open = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count() as u64;
    let limit = Rlimit { current: Some(open + 2), maximum: getrlimit(Resource::Nofile).maximum };
    prlimit(Pid::from_raw(pid as i32), Resource::Nofile, limit).unwrap();

    // Connections past the limit wait in the listen backlog; accepting them fails.
    let waiting: Vec<TcpStream> = (0..16).map(|_| TcpStream::connect(&address).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(pid) - before;
    // Retrying at once took about 1.2 s of CPU a second here; waiting takes next to none.
    assert!(used < 50, "the server used {used} ticks of CPU in 2 s while out of file descriptors");

    drop(waiting);
    lists_tables(&address);
}

const KEY_ONE: &str = "a2V5LW9uZQ=="; // "key-one"
const KEY_TWO: &str = "a2V5LXR3bw=="; // "key-two"
const KEY_THREE: &str = "a2V5LXRocmVl"; // "key-three"

/// A SharedKey client of `account` on the server at `address`, signing with `key`.
fn client(address: &str, account: &str, key: &str) -> TableServiceClient {
    TableServiceClient::builder()
        .endpoint(&format!("http://{address}/{account}"))
        .credential(Credential::shared_key(account, key).unwrap())
        .build()
        .unwrap()
}

/// Whether a request of `account` signed with `key` is served: `Ok`, or the refusal's status.
async fn served(address: &str, account: &str, key: &str) -> Result<(), Option<u16>> {
    let first = client(address, account, key).list_tables().next().await;
    first.transpose().map(drop).map_err(|e| e.status())
}

/// `--account` serves other accounts, each signed by either of its keys and by no other
/// account's key; they replace the development account.
#[tokio::test]
async fn accounts_from_flags_sign_with_either_key_and_no_other() {
    let flags =
        ["--account", &format!("acctone:{KEY_ONE}"), "--account", &format!("accttwo:{KEY_TWO}:{KEY_THREE}")];
    let (_server, address) = start_serving(&flags, Some(&format!("acctthree:{KEY_THREE}")));
    assert_eq!(served(&address, "acctone", KEY_ONE).await, Ok(()));
    client(&address, "accttwo", KEY_TWO).create_table("Rotated").await.unwrap();
    client(&address, "accttwo", KEY_THREE).table("Rotated").insert(Entity::new("p", "r")).await.unwrap();
    assert_eq!(served(&address, "accttwo", KEY_ONE).await, Err(Some(403)), "another account's key");
    assert_eq!(served(&address, "acctone", KEY_TWO).await, Err(Some(403)), "another account's key");
    assert_eq!(served(&address, "acctone", KEY_THREE).await, Err(Some(403)));
    // Each account has its own tables.
    assert!(client(&address, "acctone", KEY_ONE).table("Rotated").get("p", "r").await.is_err());
    // The flags win over AZURITE_ACCOUNTS, and replace the development account.
    assert_eq!(served(&address, "acctthree", KEY_THREE).await, Err(Some(400)));
    assert_eq!(served(&address, DEV_ACCOUNT, DEV_KEY).await, Err(Some(400)));
}

/// Without `--account`, Azurite's `AZURITE_ACCOUNTS` names the accounts.
#[tokio::test]
async fn azurite_accounts_name_the_accounts_without_flags() {
    let accounts = format!("acctone:{KEY_ONE};accttwo:{KEY_TWO}:{KEY_THREE};");
    let (_server, address) = start_serving(&[], Some(&accounts));
    assert_eq!(served(&address, "acctone", KEY_ONE).await, Ok(()));
    assert_eq!(served(&address, "accttwo", KEY_THREE).await, Ok(()));
    assert_eq!(served(&address, "accttwo", KEY_ONE).await, Err(Some(403)));
    assert_eq!(served(&address, DEV_ACCOUNT, DEV_KEY).await, Err(Some(400)));
}

/// Every malformed account is a startup error: a non-zero exit with a message naming the
/// problem but no key, never a panic.
#[test]
fn malformed_accounts_stop_the_server_at_startup() {
    let cases: [(&[&str], Option<&str>, &str); 8] = [
        (&["--account", "acctone"], None, "NAME:KEY"),
        (&["--account", "acctone:"], None, "empty key"),
        (&["--account", "Acct-One:a2V5LW9uZQ=="], None, "Acct-One"),
        (&["--account", "acctone:a2V5LW9uZQ!"], None, "base64"),
        (&["--account", "acctone:a2V5LW9uZQ==:a2V5LW9uZQ!"], None, "second key"),
        (&["--account", "acctone:a2V5LW9uZQ==", "--account", "acctone:a2V5LW9uZQ=="], None, "twice"),
        (&[], Some("acctone:a2V5LW9uZQ==;accttwo"), "AZURITE_ACCOUNTS"),
        (&[], Some(";"), "names no account"),
    ];
    for (flags, azurite_accounts, expected) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_table-server"));
        command.args(["--port", "0"]).args(flags);
        match azurite_accounts {
            Some(value) => command.env("AZURITE_ACCOUNTS", value),
            None => command.env_remove("AZURITE_ACCOUNTS"),
        };
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flags:?} {azurite_accounts:?} started");
        assert!(output.stdout.is_empty(), "{flags:?}: nothing listened");
        assert!(stderr.starts_with("table-server: ") && stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("a2V5LW9uZQ"), "{flags:?}: {stderr}");
    }
}
