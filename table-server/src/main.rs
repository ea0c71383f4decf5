//! The `table-server` binary: serves a new in-memory engine per account (by default the
//! development account, `http://127.0.0.1:10002/devstoreaccount1`), kept in `--data-dir` across
//! restarts when given, until Ctrl-C or SIGTERM, then shuts down gracefully.

mod account_options;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use std::num::{NonZeroU64, NonZeroUsize};

use table_core::ErrorCode;
use table_core::engine::{Engine, EngineOptions, FaultSpec};
use table_server::{Config, DEFAULT_CHECKPOINT_BYTES, DataDir, Server, Tls};

use crate::account_options::AccountOption;

/// mimalloc rather than the system allocator: a request allocates and frees dozens of small
/// buffers, and glibc's malloc spent about 18% of the server's instructions on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The service's page size, the largest `--page-size`.
const MAX_PAGE_SIZE: usize = 1000;

const USAGE: &str = "\
usage: table-server [--host ADDRESS] [--port PORT] [--no-auth] [--cert PEM --key PEM]
                    [--account NAME:KEY[:KEY2]]...
                    [--page-size N] [--split-pages] [--scan-budget N]
                    [--fail-every N=FAULT] [--fail-call N=FAULT]
                    [--data-dir DIR [--fsync] [--checkpoint-bytes N]] [--threads N]
                    [--version]

Serves the Azure Table REST API from an in-memory engine, path style like Azurite:
http://HOST:PORT/devstoreaccount1 (UseDevelopmentStorage=true works unchanged).

  --host ADDRESS  address to listen on (default 127.0.0.1)
  --port PORT     port to listen on (default 10002; 0 picks a free one)
  --threads N     serve on N worker threads (default: one per CPU core)
  --no-auth       accept requests without a SharedKey signature, SAS or bearer token
  --cert PEM      serve HTTPS with this certificate chain (PEM file; needs --key);
                  bearer tokens are only accepted over HTTPS
  --key PEM       the certificate's private key (PEM file)
  --account NAME:KEY[:KEY2]
                  serve account NAME (repeatable), its requests signed with the base64
                  KEY or KEY2; the accounts given replace the development account.
                  Without --account, Azurite's AZURITE_ACCOUNTS variable is read
                  (NAME:KEY[:KEY2];NAME:KEY[:KEY2];...); without either, the development
                  account devstoreaccount1 is served with its well-known key

Persistence (without --data-dir, the data lives in memory and goes with the process):
  --data-dir DIR  keep the data in DIR (created if missing; one server at a time) as a
                  write-ahead log plus snapshots, and recover it on start. Every answered
                  write is written to the OS first, so killing the server (even kill -9)
                  loses none; a write cut short by the kill was never answered
  --fsync         also flush every write to the disk before answering it, so a power loss
                  or OS crash loses none either (slower)
  --checkpoint-bytes N  take a snapshot when the log has grown by N bytes (default 64 MiB;
                  one is also taken at shutdown)

Engine test options (to exercise a client's paging and retries):
  --page-size N        at most N entities or tables per page (1..1000; default 1000)
  --split-pages        end every page at a partition boundary (pages may come out empty)
  --scan-budget N      examine at most N rows per page, then answer with a continuation
  --fail-every N=FAULT fail every Nth engine call with FAULT
  --fail-call N=FAULT  fail the Nth engine call once with FAULT (faults apply to each
                       account's engine)
  FAULT is busy (503 ServerBusy), internal (500 InternalError) or timeout (no answer: the
  connection is closed), optionally followed by +after to fail after the call took effect.

Authorization (unless --no-auth): SharedKey and SharedKeyLite with the account key; table
and account SAS (permissions, times, IP, protocol, stored policies, key ranges enforced);
bearer tokens checked like Azurite's basic OAuth mode: audience, issuer and lifetime, the
token's signature NOT checked.
  --version       print the version and exit
";

/// How to serve.
#[derive(Debug, PartialEq, Eq)]
struct Settings {
    address: SocketAddr,
    auth: bool,
    tls: Option<(PathBuf, PathBuf)>,
    /// `--account` flags, in order (empty: see [`account_options::chosen`]).
    accounts: Vec<AccountOption>,
    options: EngineOptions,
    faults: Vec<Fault>,
    persistence: Option<Persistence>,
    /// `--threads`: the runtime's worker threads (`None`: one per CPU core).
    threads: Option<NonZeroUsize>,
}

/// `--data-dir` and its options.
#[derive(Debug, PartialEq, Eq)]
struct Persistence {
    dir: PathBuf,
    fsync: bool,
    checkpoint_bytes: NonZeroU64,
}

/// A `--fail-every` (`every`) or `--fail-call` fault.
#[derive(Debug, PartialEq, Eq)]
struct Fault {
    every: bool,
    n: NonZeroU64,
    spec: FaultSpec,
}

/// `N=FAULT`: a call number and `busy`, `internal` or `timeout`, optionally `+after`.
fn parse_fault(every: bool, text: &str) -> Result<Fault, String> {
    let bad = || format!("{text:?} is not N=FAULT (FAULT: busy, internal or timeout, optionally +after)");
    let (n, kind) = text.split_once('=').ok_or_else(bad)?;
    let n = n.parse::<NonZeroU64>().map_err(|_| bad())?;
    let (kind, after) = match kind.strip_suffix("+after") {
        Some(kind) => (kind, true),
        None => (kind, false),
    };
    let spec = match kind {
        "busy" => FaultSpec::server_busy(),
        "internal" => FaultSpec::service(ErrorCode::InternalError),
        "timeout" => FaultSpec::timeout(),
        _ => return Err(bad()),
    };
    Ok(Fault { every, n, spec: if after { spec.after_apply() } else { spec } })
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    // Boxed: the settings dwarf the other variants, and are read once.
    Serve(Box<Settings>),
    Version,
    Help,
}

/// The value given after `flag`, a positive number (`NonZeroUsize`, `NonZeroU64`).
fn positive<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a number"))?;
    value.parse().map_err(|_| format!("{flag} {value:?} is not a positive number"))
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut host = IpAddr::from([127, 0, 0, 1]);
    let mut port = 10002;
    let mut auth = true;
    let (mut cert, mut key) = (None, None);
    let mut accounts = Vec::new();
    let mut options = EngineOptions::default();
    let mut faults = Vec::new();
    let (mut data_dir, mut fsync, mut checkpoint_bytes) = (None, false, None);
    let mut threads = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--host" => {
                let value = args.next().ok_or("--host needs an address")?;
                host = value.parse().map_err(|_| format!("--host {value:?} is not an IP address"))?;
            }
            "--port" => {
                let value = args.next().ok_or("--port needs a number")?;
                port = value.parse().map_err(|_| format!("--port {value:?} is not a port number"))?;
            }
            "--no-auth" => auth = false,
            "--cert" => cert = Some(PathBuf::from(args.next().ok_or("--cert needs a PEM file")?)),
            "--key" => key = Some(PathBuf::from(args.next().ok_or("--key needs a PEM file")?)),
            "--account" => {
                let value = args.next().ok_or("--account needs NAME:KEY[:KEY2]")?;
                accounts.push(account_options::parse_account(&value, "--account")?);
            }
            "--page-size" => {
                let value = args.next().ok_or("--page-size needs a number")?;
                let size = value.parse::<NonZeroUsize>().ok().filter(|n| n.get() <= MAX_PAGE_SIZE);
                options = options.max_page_size(size.ok_or(format!("--page-size {value:?} is not 1..1000"))?);
            }
            "--split-pages" => options = options.split_pages_at_partition_boundaries(true),
            "--scan-budget" => options = options.scan_budget(Some(positive(&arg, args.next())?)),
            "--fail-every" | "--fail-call" => {
                let value = args.next().ok_or(format!("{arg} needs N=FAULT"))?;
                faults.push(parse_fault(arg == "--fail-every", &value)?);
            }
            "--data-dir" => {
                data_dir = Some(PathBuf::from(args.next().ok_or("--data-dir needs a directory")?))
            }
            "--fsync" => fsync = true,
            "--checkpoint-bytes" => checkpoint_bytes = Some(positive(&arg, args.next())?),
            "--threads" => threads = Some(positive(&arg, args.next())?),
            "--version" => return Ok(Command::Version),
            "--help" | "-h" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let tls = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("--cert and --key go together".to_owned()),
    };
    let persistence = match data_dir {
        Some(dir) => Some(Persistence {
            dir,
            fsync,
            checkpoint_bytes: checkpoint_bytes.unwrap_or(DEFAULT_CHECKPOINT_BYTES),
        }),
        None if fsync || checkpoint_bytes.is_some() => {
            return Err("--fsync and --checkpoint-bytes need --data-dir".to_owned());
        }
        None => None,
    };
    let address = SocketAddr::new(host, port);
    Ok(Command::Serve(Box::new(Settings {
        address,
        auth,
        tls,
        accounts,
        options,
        faults,
        persistence,
        threads,
    })))
}

fn main() -> ExitCode {
    let settings = match parse(std::env::args().skip(1)) {
        Ok(Command::Serve(settings)) => *settings,
        Ok(Command::Version) => {
            println!("table-server {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("table-server: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Settings { address, auth, tls, accounts, options, faults, persistence, threads } = settings;
    let azurite_accounts = std::env::var(account_options::AZURITE_ACCOUNTS).ok();
    let accounts = match account_options::chosen(accounts, azurite_accounts.as_deref()) {
        Ok(accounts) => accounts,
        Err(message) => {
            eprintln!("table-server: {message}");
            return ExitCode::FAILURE;
        }
    };
    let tls = match tls.map(|(cert, key)| read_tls(&cert, &key)).transpose() {
        Ok(tls) => tls,
        Err(message) => {
            eprintln!("table-server: {message}");
            return ExitCode::FAILURE;
        }
    };
    // Opened before any account: a second server on the directory is refused up front.
    let data_dir = match open_data_dir(persistence.as_ref()) {
        Ok(data_dir) => data_dir,
        Err(message) => {
            eprintln!("table-server: {message}");
            return ExitCode::FAILURE;
        }
    };
    // Each account's engine is recovered before listening: a request never sees a
    // half-recovered engine.
    let shown = persistence.as_ref().map(|p| p.dir.display().to_string()).unwrap_or_default();
    let engine = |account: &str| {
        let engine = match &data_dir {
            Some(data_dir) => data_dir
                .engine(account, options.clone())
                .map_err(|e| format!("cannot recover the data of {account:?} in {shown}: {e}"))?,
            None => Engine::with_options(options.clone()),
        };
        for fault in &faults {
            if fault.every {
                engine.faults().fail_every(fault.n, fault.spec.clone());
            } else {
                engine.faults().fail_call(fault.n, fault.spec.clone());
            }
        }
        Ok(engine)
    };
    let served = match account_options::serve(&accounts, engine) {
        Ok(served) => served,
        Err(message) => {
            eprintln!("table-server: {message}");
            return ExitCode::FAILURE;
        }
    };
    // Multi-threaded even with one worker: a `--fsync` write waiting for its flush hands the
    // worker to a new thread (`block_in_place`), so the other connections go on meanwhile.
    // One worker per core by default: one worker alone saves the wake-ups between workers but
    // measured no less CPU per request, and fewer requests answered at 16 and 64 in flight.
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = threads {
        runtime.worker_threads(threads.get());
    }
    let runtime = runtime.enable_all().build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("table-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let config = Config { address, auth, accounts: served };
        let scheme = if tls.is_some() { "https" } else { "http" };
        let bound = match tls {
            Some(tls) => Server::bind_tls(config, tls).await,
            None => Server::bind(config).await,
        };
        let server = match bound {
            Ok(server) => server,
            Err(e) => {
                eprintln!("table-server: cannot listen on {address}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let auth_note = if auth { "SharedKey, SAS, bearer" } else { "no auth" };
        let local = server.local_addr();
        let endpoints: Vec<String> =
            accounts.iter().map(|account| format!("{scheme}://{local}/{}", account.name)).collect();
        say(&format!("table-server listening on {} ({auth_note})", endpoints.join(", ")));
        stopped().await;
        say("table-server shutting down");
        server.shutdown().await;
        if let Some(data_dir) = data_dir
            && let Err(e) = data_dir.close()
        {
            // The log still holds every change: the next start replays it.
            eprintln!("table-server: the snapshot at shutdown failed: {e}");
        }
        ExitCode::SUCCESS
    })
}

/// The `--data-dir` store, opened (locked, and its accounts' engines recoverable), if given.
fn open_data_dir(persistence: Option<&Persistence>) -> Result<Option<DataDir>, String> {
    let Some(persistence) = persistence else {
        return Ok(None);
    };
    DataDir::builder(&persistence.dir)
        .sync(persistence.fsync)
        .checkpoint_bytes(persistence.checkpoint_bytes)
        .open()
        .map(Some)
        .map_err(|e| format!("cannot use --data-dir {}: {e}", persistence.dir.display()))
}

/// Prints a line of the server's log on stdout. A closed or full stdout (its reader gone) is
/// ignored: unlike `println!`, it never takes the server down.
fn say(line: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
}

/// The TLS identity in the PEM files `cert` and `key`.
fn read_tls(cert: &std::path::Path, key: &std::path::Path) -> Result<Tls, String> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    Tls::from_pem(&read(cert)?, &read(key)?).map_err(|e| e.to_string())
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Command, String> {
        parse(list.iter().map(|s| (*s).to_owned()))
    }

    fn serve(address: SocketAddr, auth: bool, tls: Option<(PathBuf, PathBuf)>) -> Result<Command, String> {
        Ok(Command::Serve(Box::new(Settings {
            address,
            auth,
            tls,
            accounts: Vec::new(),
            options: EngineOptions::default(),
            faults: Vec::new(),
            persistence: None,
            threads: None,
        })))
    }

    #[test]
    fn flags_and_defaults() {
        let local = SocketAddr::from(([127, 0, 0, 1], 10002));
        assert_eq!(args(&[]), serve(local, true, None));
        assert_eq!(
            args(&["--host", "0.0.0.0", "--port", "0", "--no-auth"]),
            serve(SocketAddr::from(([0, 0, 0, 0], 0)), false, None)
        );
        let tls = Some((PathBuf::from("c.pem"), PathBuf::from("k.pem")));
        assert_eq!(args(&["--cert", "c.pem", "--key", "k.pem"]), serve(local, true, tls));
        assert_eq!(args(&["--version"]), Ok(Command::Version));
        let parsed = args(&["--account", "acct1:a2V5", "--account", "acct2:a2V5:a2V5Mg=="]);
        let Ok(Command::Serve(settings)) = parsed else { panic!("{parsed:?}") };
        let names: Vec<&str> = settings.accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["acct1", "acct2"]);
        let parsed = args(&["--threads", "3"]);
        let Ok(Command::Serve(settings)) = parsed else { panic!("{parsed:?}") };
        assert_eq!(settings.threads, NonZeroUsize::new(3));
        for bad in [
            &["--port"][..],
            &["--port", "70000"],
            &["--host", "localhost"],
            &["--verbose"],
            &["--cert", "c.pem"],
            &["--key"],
            &["--page-size", "0"],
            &["--page-size", "1001"],
            &["--scan-budget", "-1"],
            &["--fail-every", "0=busy"],
            &["--fail-every", "3=slow"],
            &["--fail-call", "3"],
            &["--data-dir"],
            &["--fsync"],
            &["--checkpoint-bytes", "10"],
            &["--data-dir", "d", "--checkpoint-bytes", "0"],
            &["--account"],
            &["--account", "acct1"],
            &["--account", "acct1:"],
            &["--threads"],
            &["--threads", "0"],
            &["--threads", "two"],
        ] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn persistence_flags() {
        let parsed = args(&["--data-dir", "data", "--fsync", "--checkpoint-bytes", "4096"]);
        let Ok(Command::Serve(settings)) = parsed else { panic!("{parsed:?}") };
        let bytes = NonZeroU64::new(4096).unwrap_or(NonZeroU64::MIN);
        assert_eq!(
            settings.persistence,
            Some(Persistence { dir: PathBuf::from("data"), fsync: true, checkpoint_bytes: bytes })
        );
        let parsed = args(&["--data-dir", "data"]);
        let Ok(Command::Serve(settings)) = parsed else { panic!("{parsed:?}") };
        assert_eq!(
            settings.persistence,
            Some(Persistence {
                dir: PathBuf::from("data"),
                fsync: false,
                checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES
            })
        );
    }

    #[test]
    fn engine_options_and_faults() {
        let parsed = args(&[
            "--page-size",
            "2",
            "--split-pages",
            "--scan-budget",
            "10",
            "--fail-every",
            "3=busy",
            "--fail-call",
            "5=timeout+after",
            "--fail-call",
            "7=internal",
        ]);
        let Ok(Command::Serve(settings)) = parsed else { panic!("{parsed:?}") };
        let n = |n: usize| NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN);
        let expected = EngineOptions::default()
            .max_page_size(n(2))
            .split_pages_at_partition_boundaries(true)
            .scan_budget(Some(n(10)));
        assert_eq!(settings.options, expected);
        let call = |n: u64| NonZeroU64::new(n).unwrap_or(NonZeroU64::MIN);
        assert_eq!(
            settings.faults,
            [
                Fault { every: true, n: call(3), spec: FaultSpec::server_busy() },
                Fault { every: false, n: call(5), spec: FaultSpec::timeout().after_apply() },
                Fault { every: false, n: call(7), spec: FaultSpec::service(ErrorCode::InternalError) },
            ]
        );
    }
}
