//! The `table-server` binary: serves a new in-memory engine as the development account
//! (`http://127.0.0.1:10002/devstoreaccount1`) until Ctrl-C or SIGTERM, then shuts down
//! gracefully.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use table_server::{Config, Server};

const USAGE: &str = "\
usage: table-server [--host ADDRESS] [--port PORT] [--no-auth] [--version]

Serves the Azure Table REST API from an in-memory engine, path style like Azurite:
http://HOST:PORT/devstoreaccount1 (UseDevelopmentStorage=true works unchanged).

  --host ADDRESS  address to listen on (default 127.0.0.1)
  --port PORT     port to listen on (default 10002; 0 picks a free one)
  --no-auth       accept requests without a SharedKey signature
  --version       print the version and exit
";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Serve { address: SocketAddr, auth: bool },
    Version,
    Help,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut host = IpAddr::from([127, 0, 0, 1]);
    let mut port = 10002;
    let mut auth = true;
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
            "--version" => return Ok(Command::Version),
            "--help" | "-h" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Command::Serve { address: SocketAddr::new(host, port), auth })
}

fn main() -> ExitCode {
    let (address, auth) = match parse(std::env::args().skip(1)) {
        Ok(Command::Serve { address, auth }) => (address, auth),
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
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("table-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let config = Config { address, auth, ..Config::default() };
        let server = match Server::bind(config).await {
            Ok(server) => server,
            Err(e) => {
                eprintln!("table-server: cannot listen on {address}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let auth_note = if auth { "SharedKey" } else { "no auth" };
        println!("table-server listening on http://{}/devstoreaccount1 ({auth_note})", server.local_addr());
        stopped().await;
        println!("table-server shutting down");
        server.shutdown().await;
        ExitCode::SUCCESS
    })
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
        assert_eq!(args(&[]), Ok(Command::Serve { address: local, auth: true }));
        assert_eq!(
            args(&["--host", "0.0.0.0", "--port", "0", "--no-auth"]),
            Ok(Command::Serve { address: SocketAddr::from(([0, 0, 0, 0], 0)), auth: false })
        );
        assert_eq!(args(&["--version"]), Ok(Command::Version));
        for bad in [&["--port"][..], &["--port", "70000"], &["--host", "localhost"], &["--verbose"]] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }
}
