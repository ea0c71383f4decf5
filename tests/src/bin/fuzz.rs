//! Runs the fuzz targets of `conformance::fuzz` from the command line.
//!
//! ```text
//! cargo run --release -p conformance --bin fuzz -- [--target NAME|all] [--count N] [--seed S] [--iteration I]
//! ```
//!
//! Prints, per target, the inputs run, how many ended in each outcome, the panics and broken
//! invariants, the rate and the wall time; then every kept failure with its seed, iteration and
//! input (as a Rust byte-string literal). `--iteration I` replays one input of the run instead.
//! Exits with 1 when any input failed, 2 on a usage error.

use std::process::ExitCode;

use conformance::fuzz::{TARGETS, Target, Verdict, target};

const USAGE: &str = "usage: fuzz [--target NAME|all] [--count N] [--seed S] [--iteration I]\ntargets: ";

struct Options {
    targets: Vec<&'static Target>,
    count: u64,
    seed: u64,
    iteration: Option<u64>,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options { targets: TARGETS.iter().collect(), count: 100_000, seed: 1, iteration: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|_| format!("{flag} takes a number, not {value:?}"));
        match flag.as_str() {
            "--target" if value == "all" => options.targets = TARGETS.iter().collect(),
            "--target" => {
                options.targets = vec![target(&value).ok_or_else(|| format!("no target named {value:?}"))?];
            }
            "--count" => options.count = number()?,
            "--seed" => options.seed = number()?,
            "--iteration" => options.iteration = Some(number()?),
            _ => return Err(format!("unknown option {flag:?}")),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) => {
            let names: Vec<&str> = TARGETS.iter().map(Target::name).collect();
            eprintln!("fuzz: {message}\n{USAGE}{}", names.join(", "));
            return ExitCode::from(2);
        }
    };
    if let Some(iteration) = options.iteration {
        return replay(&options, iteration);
    }
    let mut failed = false;
    let mut failures = Vec::new();
    for target in &options.targets {
        let report = target.run(options.seed, options.count);
        let outcomes: Vec<String> = report.outcomes.iter().map(|(o, n)| format!("{o}={n}")).collect();
        println!(
            "{:<18} inputs {:>9}  panics {}  violations {}  {:>9.0} inputs/s  {:>7.2} s  outcomes ({}): {}",
            report.target,
            report.inputs,
            report.panics,
            report.violations,
            report.rate(),
            report.elapsed.as_secs_f64(),
            report.outcomes.len(),
            outcomes.join(" "),
        );
        failed |= report.panics + report.violations > 0;
        failures.extend(report.failures);
    }
    for failure in &failures {
        println!("\n{failure}");
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Rebuilds and runs input `iteration` of each selected target.
fn replay(options: &Options, iteration: u64) -> ExitCode {
    let mut failed = false;
    for target in &options.targets {
        let input = target.input(&target.seeds(), options.seed, iteration);
        let verdict = target.check(&input);
        println!("{} seed {} iteration {iteration}: {verdict:?}", target.name(), options.seed);
        println!("  input: b\"{}\"", input.escape_ascii());
        failed |= !matches!(verdict, Verdict::Outcome(_));
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
