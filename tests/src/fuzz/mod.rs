//! Deterministic mutation fuzzing of the SDK's parsers and decoders, and of table-server
//! through whole HTTP requests, on stable Rust.
//!
//! `cargo fuzz` needs a nightly toolchain; this module is its small stable stand-in. Each
//! [`Target`] owns a corpus of valid inputs built with the public API, a dictionary of tokens
//! that matter to its grammar, and a check that feeds one input to the code under test and
//! verifies cheap invariants. [`Target::run`] mutates corpus entries (byte flips, inserted,
//! deleted and duplicated ranges, splices of two entries, truncation, dictionary tokens, long
//! repetitions of a token for deep nesting), several mutations stacked per input, and counts
//! what came out.
//!
//! Invariants:
//! - Reproducible: input number `i` of a run with seed `s` depends on `(s, i)` only, never on
//!   earlier inputs, so [`Target::input`] rebuilds any failing input on its own.
//! - A panic in the code under test is caught ([`std::panic::catch_unwind`]) and counted as a
//!   failure, never fatal to the run; so is a broken invariant.
//! - Inputs stay below [`MAX_INPUT`] bytes, so a run's time is bounded by its count.
//!
//! The targets themselves are in module `targets`, the `server` target's harness (a running server,
//! the data each input starts from) in `server`; `src/bin/fuzz.rs` runs them from the command line
//! and `tests/fuzz.rs` runs a short pass of each in `cargo test`.

mod server;
mod targets;

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

pub use targets::{TARGETS, target};

/// The longest input a mutation may produce.
pub const MAX_INPUT: usize = 16 * 1024;

/// How many failing inputs a [`Report`] keeps (all are counted).
const KEPT_FAILURES: usize = 10;

/// Bytes that often sit on a parser's edge: NUL, controls, quotes, separators, the start of a
/// multi-byte UTF-8 sequence without its end, a lone continuation byte, 0xFF.
const INTERESTING_BYTES: [u8; 20] = [
    0x00, 0x01, b'\t', b'\n', b'\r', b' ', b'"', b'\'', b'\\', b'{', b'[', b'(', b':', b';', b'=', b'&',
    0x7f, 0x80, 0xc3, 0xff,
];

/// One thing to fuzz: a corpus, a dictionary and a check.
#[derive(Debug)]
pub struct Target {
    name: &'static str,
    /// Valid inputs, built with the public API.
    seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens of the target's grammar that random bytes would rarely spell.
    dictionary: &'static [&'static str],
    /// Runs the code under test: `Ok(outcome)` names what happened (`"ok"`, an error kind),
    /// `Err(message)` reports a broken invariant.
    check: fn(&[u8]) -> Result<String, String>,
}

/// What one input did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The code under test answered; the label names how (`"ok"`, an error kind).
    Outcome(String),
    /// The code under test answered, but broke an invariant the target checks.
    Violation(String),
    /// The code under test panicked, with this message.
    Panic(String),
}

/// One input that panicked or broke an invariant.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The target's name.
    pub target: &'static str,
    /// The seed of the run.
    pub seed: u64,
    /// The input's number within the run.
    pub iteration: u64,
    /// The input.
    pub input: Vec<u8>,
    /// The panic or the broken invariant.
    pub verdict: Verdict,
}

/// `target`, seed, iteration, what went wrong and the input as a Rust byte-string literal (to
/// paste into a regression test).
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.verdict {
            Verdict::Panic(message) => format!("panic: {message}"),
            Verdict::Violation(message) => format!("invariant broken: {message}"),
            Verdict::Outcome(outcome) => format!("no failure ({outcome})"),
        };
        write!(
            f,
            "target {} seed {} iteration {}: {what}\n  input: b\"{}\"",
            self.target,
            self.seed,
            self.iteration,
            self.input.escape_ascii()
        )
    }
}

/// What a run of one target did.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target's name.
    pub target: &'static str,
    /// Inputs run.
    pub inputs: u64,
    /// How many inputs ended with each outcome label.
    pub outcomes: BTreeMap<String, u64>,
    /// Inputs that panicked.
    pub panics: u64,
    /// Inputs that broke an invariant.
    pub violations: u64,
    /// The first few failures, in input order.
    pub failures: Vec<Failure>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// Inputs run per second.
    pub fn rate(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl Target {
    /// The name used on the command line (`filter`, `entity`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The corpus the mutations start from.
    pub fn seeds(&self) -> Vec<Vec<u8>> {
        (self.seeds)()
    }

    /// Runs one input, catching a panic.
    pub fn check(&self, input: &[u8]) -> Verdict {
        match catch_unwind(AssertUnwindSafe(|| (self.check)(input))) {
            Ok(Ok(outcome)) => Verdict::Outcome(outcome),
            Ok(Err(message)) => Verdict::Violation(message),
            Err(payload) => Verdict::Panic(panic_message(payload.as_ref())),
        }
    }

    /// Input number `iteration` of a run with `seed` over `corpus` (the target's [`seeds`]).
    ///
    /// [`seeds`]: Target::seeds
    pub fn input(&self, corpus: &[Vec<u8>], seed: u64, iteration: u64) -> Vec<u8> {
        let mut mutator = Mutator {
            rng: fastrand::Rng::with_seed(mix(seed ^ mix(iteration))),
            corpus,
            dictionary: self.dictionary,
        };
        mutator.input()
    }

    /// Runs `count` mutated inputs from `seed`.
    pub fn run(&self, seed: u64, count: u64) -> Report {
        let corpus = self.seeds();
        let mut report = Report {
            target: self.name,
            inputs: 0,
            outcomes: BTreeMap::new(),
            panics: 0,
            violations: 0,
            failures: Vec::new(),
            elapsed: Duration::ZERO,
        };
        let start = Instant::now();
        for iteration in 0..count {
            let input = self.input(&corpus, seed, iteration);
            let verdict = self.check(&input);
            report.inputs += 1;
            match &verdict {
                Verdict::Outcome(outcome) => match report.outcomes.get_mut(outcome) {
                    Some(n) => *n += 1,
                    None => {
                        report.outcomes.insert(outcome.clone(), 1);
                    }
                },
                Verdict::Violation(_) => report.violations += 1,
                Verdict::Panic(_) => report.panics += 1,
            }
            if !matches!(verdict, Verdict::Outcome(_)) && report.failures.len() < KEPT_FAILURES {
                report.failures.push(Failure { target: self.name, seed, iteration, input, verdict });
            }
        }
        report.elapsed = start.elapsed();
        report
    }
}

/// The text of a panic payload (`panic!` with a literal or with formatting).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_owned(),
    }
}

/// SplitMix64's finaliser: spreads nearby seeds and iterations over the whole `u64` range.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Builds one input: a corpus entry with a few mutations stacked on it.
struct Mutator<'a> {
    rng: fastrand::Rng,
    corpus: &'a [Vec<u8>],
    dictionary: &'a [&'a str],
}

impl<'a> Mutator<'a> {
    fn input(&mut self) -> Vec<u8> {
        let mut input = self.pick_entry().to_vec();
        // Mostly a few mutations, so the input stays close to valid and reaches deep code;
        // sometimes many, to leave the corpus's neighbourhood.
        let rounds = if self.rng.u8(..8) == 0 { self.rng.usize(8..=32) } else { self.rng.usize(1..=4) };
        for _ in 0..rounds {
            self.mutate(&mut input);
            input.truncate(MAX_INPUT);
        }
        input
    }

    fn pick_entry(&mut self) -> &'a [u8] {
        match self.corpus.len() {
            0 => &[],
            n => &self.corpus[self.rng.usize(..n)],
        }
    }

    fn token(&mut self) -> &'a [u8] {
        match self.dictionary.len() {
            0 => b"",
            n => self.dictionary[self.rng.usize(..n)].as_bytes(),
        }
    }

    /// A position in `input`, both ends included.
    fn position(&mut self, input: &[u8]) -> usize {
        self.rng.usize(..=input.len())
    }

    /// A range of `input`, usually short.
    fn range(&mut self, input: &[u8]) -> std::ops::Range<usize> {
        let start = self.position(input);
        let longest = (input.len() - start).min(if self.rng.bool() { 8 } else { 256 });
        start..start + self.rng.usize(..=longest)
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        match self.rng.u8(..11) {
            0 if !input.is_empty() => {
                let i = self.rng.usize(..input.len());
                input[i] ^= 1 << self.rng.u8(..8);
            }
            1 if !input.is_empty() => {
                let i = self.rng.usize(..input.len());
                input[i] = INTERESTING_BYTES[self.rng.usize(..INTERESTING_BYTES.len())];
            }
            2 => {
                let at = self.position(input);
                let bytes: Vec<u8> = (0..self.rng.usize(1..=8)).map(|_| self.rng.u8(..)).collect();
                input.splice(at..at, bytes);
            }
            3 => {
                let range = self.range(input);
                input.drain(range);
            }
            4 => {
                let range = self.range(input);
                let copy = input[range].to_vec();
                let at = self.position(input);
                input.splice(at..at, copy);
            }
            5 => {
                // Splice: a range of another entry replaces a range of this one.
                let target = self.range(input);
                let other = self.pick_entry();
                let start = self.rng.usize(..=other.len());
                let end = self.rng.usize(start..=other.len());
                input.splice(target, other[start..end].iter().copied());
            }
            6 => {
                let len = self.position(input);
                input.truncate(len);
            }
            7 | 8 => {
                let at = self.position(input);
                let token = self.token();
                input.splice(at..at, token.iter().copied());
            }
            9 => {
                let range = self.range(input);
                let token = self.token();
                input.splice(range, token.iter().copied());
            }
            _ => {
                // A token repeated, sometimes past every nesting limit (the filter parser's
                // 100, serde_json's 128).
                let times = if self.rng.bool() { self.rng.usize(2..=8) } else { self.rng.usize(90..=600) };
                let at = self.position(input);
                let token = self.token().repeat(times);
                input.splice(at..at, token);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_depends_on_seed_and_iteration_only() {
        let target = &TARGETS[0];
        let corpus = target.seeds();
        let first: Vec<Vec<u8>> = (0..50).map(|i| target.input(&corpus, 7, i)).collect();
        assert_eq!(target.input(&corpus, 7, 42), first[42]);
        assert_ne!(target.input(&corpus, 8, 42), first[42]);
        assert!(first.iter().all(|input| input.len() <= MAX_INPUT));
    }

    #[test]
    fn panics_are_caught_and_reported_with_their_message() {
        let target = Target {
            name: "panicky",
            seeds: || vec![b"x".to_vec()],
            dictionary: &[],
            check: |input| match input.first() {
                Some(b'x') => Ok("ok".to_owned()),
                Some(_) => panic!("byte {input:?}"),
                None => Err("empty".to_owned()),
            },
        };
        assert_eq!(target.check(b"x"), Verdict::Outcome("ok".to_owned()));
        assert_eq!(target.check(b"y"), Verdict::Panic("byte [121]".to_owned()));
        assert_eq!(target.check(b""), Verdict::Violation("empty".to_owned()));
        let report = target.run(1, 200);
        assert_eq!(report.inputs, 200);
        assert!(report.panics > 0 && report.violations > 0, "{report:?}");
        let first = &report.failures[0];
        assert_eq!(target.check(&target.input(&target.seeds(), 1, first.iteration)), first.verdict);
    }
}
