//! The report of an interleaved run: every variant timed in turn, round after round, so that
//! the machine's drift hits them alike. Each is shown by its median and by the median of its
//! per-round ratio to the first variant (a ratio measured side by side, which noise moves less).

/// Prints one line per variant: `label` (already padded by the caller), its median time in
/// `unit` with `decimals` places, and its median ratio to the first variant.
pub fn report(names: &[(String, &str)], times: &[Vec<f64>], unit: &str, decimals: usize) {
    let first = names[0].1;
    for ((label, _), samples) in names.iter().zip(times) {
        let ratios = samples.iter().zip(&times[0]).map(|(t, base)| t / base).collect();
        println!(
            "{label} median {:>8.decimals$} {unit}, {:.2}x {first}",
            median(samples.clone()),
            median(ratios)
        );
    }
}

/// The median of `samples` (the upper one of an even count).
fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
