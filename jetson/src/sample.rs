//! Sampling the next token on the device (`sample_f32`, kernels/argmax.cu), and its host twin.
//!
//! A draw from softmax(logits / temperature) by the Gumbel-max trick: the index of the largest
//! `logit[i] / temperature + g(i)`, where `g(i) = -ln(-ln u(i))` is standard Gumbel noise.
//! `u(i)` is a counter-based hash of `(seed, counter, i)` ([`noise_u`]), so the device keeps no
//! generator state, a draw is reproducible from its three numbers, and a new `counter` (the
//! step) gives an independent draw. One launch over the whole vocabulary: its blocks each keep
//! their best score and the last to finish merges them, so only the token's index comes back
//! to the host, not the logits.
//!
//! This is plain temperature sampling. Top-k, top-p, penalties and grammar constraints need
//! the whole distribution; the daemon's sessions read the logits back and run the core
//! sampler ([`glimmer_core::sample`]) for those.

/// How a decode step picks its token on the device (`CudaModel::decode_step_pick`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pick {
    /// The largest logit (the lowest index on ties).
    Greedy,
    /// A draw from softmax(logits / `temperature`) keyed by `seed` and `counter` (pass the step,
    /// or any number not used before with this seed, for a new draw). A temperature that is not
    /// a positive finite number picks greedily.
    Sample {
        /// Softmax temperature.
        temperature: f32,
        /// The stream of draws (a session's seed).
        seed: u64,
        /// The draw within the stream.
        counter: u64,
    },
}

/// SplitMix64's output function (`mix64` in kernels/argmax.cu).
pub fn mix64(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of draw `counter` of stream `seed`, as `sample_f32` makes it.
pub fn draw_key(seed: u64, counter: u64) -> u64 {
    mix64(seed ^ mix64(counter))
}

/// The uniform number of index `i` in the draw keyed `key` (`sample_u`): 23 bits of the hash
/// as the odd numerator of a fraction of 2^24, in [2^-24, 1 - 2^-24] and exact in `f32`.
pub fn noise_u(key: u64, i: u32) -> f32 {
    let h = mix64(key.wrapping_add(u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    let odd = (((h >> 41) as u32) << 1) | 1;
    odd as f32 * (1.0 / 16_777_216.0)
}

/// The Gumbel-perturbed score of every logit in `f64` (the device computes them in `f32`), and
/// the index of the best: `(index, scores)`. For checks: a device draw is right where its
/// index's score is within rounding of the best one here.
pub fn host_scores(logits: &[f32], temperature: f32, seed: u64, counter: u64) -> (usize, Vec<f64>) {
    let key = draw_key(seed, counter);
    let inv_t = f64::from(1.0 / temperature);
    let scores: Vec<f64> = logits
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let u = f64::from(noise_u(key, i as u32));
            f64::from(x) * inv_t - (-u.ln()).ln()
        })
        .collect();
    let mut best = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s > scores[best] {
            best = i;
        }
    }
    (best, scores)
}

/// How far a device draw `got` falls short of the best score in `scores` ([`host_scores`]),
/// relative to `1 + |best|`: 0 where it is the best, and within the device's `f32` rounding
/// (about 1e-6) for a right draw; an index out of range is infinitely short.
pub fn draw_shortfall(scores: &[f64], best: usize, got: usize) -> f64 {
    let top = scores[best];
    (top - scores.get(got).copied().unwrap_or(f64::NEG_INFINITY)) / (1.0 + top.abs())
}

/// Pearson's chi-square of `counts` (draws of each index) against softmax(`logits` /
/// `temperature`) over their total: a sampler's check (`logits.len() - 1` degrees of freedom).
pub fn softmax_chi2(logits: &[f32], temperature: f32, counts: &[u32]) -> f64 {
    let n: f64 = counts.iter().map(|&k| f64::from(k)).sum();
    let w: Vec<f64> = logits
        .iter()
        .map(|&x| (f64::from(x) / f64::from(temperature)).exp())
        .collect();
    let z: f64 = w.iter().sum();
    w.iter()
        .zip(counts)
        .map(|(&wi, &k)| {
            let e = n * wi / z;
            (f64::from(k) - e).powi(2) / e
        })
        .sum()
}

/// Whether `temperature` samples (a positive finite number) rather than picking greedily.
pub fn samples(temperature: f32) -> bool {
    temperature.is_finite() && temperature > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_strictly_inside_the_unit_interval_and_spread() {
        let key = draw_key(7, 3);
        let (mut lo, mut hi, mut sum) = (1.0f32, 0.0f32, 0.0f64);
        let n = 100_000u32;
        for i in 0..n {
            let u = noise_u(key, i);
            assert!(u > 0.0 && u < 1.0, "u({i}) = {u}");
            lo = lo.min(u);
            hi = hi.max(u);
            sum += f64::from(u);
        }
        assert!(lo < 1e-3 && hi > 0.999, "range {lo}..{hi}");
        let mean = sum / f64::from(n);
        assert!((mean - 0.5).abs() < 0.005, "mean {mean}");
        // Another counter is another draw.
        let other = draw_key(7, 4);
        let same = (0..1000)
            .filter(|&i| noise_u(key, i) == noise_u(other, i))
            .count();
        assert!(same < 5, "{same} of 1000 equal");
    }

    #[test]
    fn host_draws_follow_the_softmax() {
        // The host twin is the reference the device is checked against, so it must itself
        // sample softmax(x / T): frequencies over many counters against the probabilities.
        let logits = [0.0f32, 0.5, 1.0, -1.0, 2.0, 0.2];
        let t = 0.8f32;
        let mut counts = [0u32; 6];
        for c in 0..60_000u64 {
            counts[host_scores(&logits, t, 42, c).0] += 1;
        }
        let chi2 = softmax_chi2(&logits, t, &counts);
        // Five degrees of freedom: P(chi2 > 30) < 2e-5.
        assert!(chi2 < 30.0, "chi2 {chi2}, counts {counts:?}");
        // And the statistic itself: counts far from the softmax give a large one.
        assert!(softmax_chi2(&logits, t, &[10_000; 6]) > 1000.0);
    }

    #[test]
    fn shortfall_is_zero_for_the_best_and_positive_otherwise() {
        let s = [1.0, 3.0, 2.0];
        assert_eq!(draw_shortfall(&s, 1, 1), 0.0);
        assert!((draw_shortfall(&s, 1, 2) - 0.25).abs() < 1e-12);
        assert_eq!(draw_shortfall(&s, 1, 7), f64::INFINITY);
    }

    #[test]
    fn greedy_below_or_at_zero_and_for_non_numbers() {
        assert!(samples(0.7));
        assert!(!samples(0.0));
        assert!(!samples(-1.0));
        assert!(!samples(f32::NAN));
        assert!(!samples(f32::INFINITY));
    }
}
