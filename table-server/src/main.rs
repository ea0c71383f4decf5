//! The `table-server` binary: serves a new in-memory engine as the development account
//! (`http://127.0.0.1:10002/devstoreaccount1`) until Ctrl-C or SIGTERM, then shuts down
//! gracefully.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use table_server::{Config, Server, Tls};

const USAGE: &str = "\
usage: table-server [--host ADDRESS] [--port PORT] [--no-auth] [--cert PEM --key PEM] [--version]

Serves the Azure Table REST API from an in-memory engine, path style like Azurite:
http://HOST:PORT/devstoreaccount1 (UseDevelopmentStorage=true works unchanged).

  --host ADDRESS  address to listen on (default 127.0.0.1)
  --port PORT     port to listen on (default 10002; 0 picks a free one)
  --no-auth       accept requests without a SharedKey signature, SAS or bearer token
  --cert PEM      serve HTTPS with this certificate chain (PEM file; needs --key);
                  bearer tokens are only accepted over HTTPS
  --key PEM       the certificate's private key (PEM file)

Authorization (unless --no-auth): SharedKey and SharedKeyLite with the account key; table
and account SAS (permissions, times, IP, protocol, stored policies, key ranges enforced);
bearer tokens checked like Azurite's basic OAuth mode: audience, issuer and lifetime, the
token's signature NOT checked.
  --version       print the version and exit
";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Serve { address: SocketAddr, auth: bool, tls: Option<(PathBuf, PathBuf)> },
    Version,
    Help,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut host = IpAddr::from([127, 0, 0, 1]);
    let mut port = 10002;
    let mut auth = true;
    let (mut cert, mut key) = (None, None);
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
    Ok(Command::Serve { address: SocketAddr::new(host, port), auth, tls })
}

fn main() -> ExitCode {
    let (address, auth, tls) = match parse(std::env::args().skip(1)) {
        Ok(Command::Serve { address, auth, tls }) => (address, auth, tls),
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
    let tls = match tls.map(|(cert, key)| read_tls(&cert, &key)).transpose() {
        Ok(tls) => tls,
        Err(message) => {
            eprintln!("table-server: {message}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("table-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let config = Config { address, auth, ..Config::default() };
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
        println!(
            "table-server listening on {scheme}://{}/devstoreaccount1 ({auth_note})",
            server.local_addr()
        );
        stopped().await;
        println!("table-server shutting down");
        server.shutdown().await;
        ExitCode::SUCCESS
    })
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

    #[test]
    fn flags_and_defaults() {
        let local = SocketAddr::from(([127, 0, 0, 1], 10002));
        assert_eq!(args(&[]), Ok(Command::Serve { address: local, auth: true, tls: None }));
        assert_eq!(
            args(&["--host", "0.0.0.0", "--port", "0", "--no-auth"]),
            Ok(Command::Serve { address: SocketAddr::from(([0, 0, 0, 0], 0)), auth: false, tls: None })
        );
        let tls = Some((PathBuf::from("c.pem"), PathBuf::from("k.pem")));
        assert_eq!(
            args(&["--cert", "c.pem", "--key", "k.pem"]),
            Ok(Command::Serve { address: local, auth: true, tls })
        );
        assert_eq!(args(&["--version"]), Ok(Command::Version));
        for bad in [
            &["--port"][..],
            &["--port", "70000"],
            &["--host", "localhost"],
            &["--verbose"],
            &["--cert", "c.pem"],
            &["--key"],
        ] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }
}
