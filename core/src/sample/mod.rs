//! Samplers: greedy, and temperature with top-k / top-p, driven by a seeded RNG.
//!
//! Sampling never allocates: the caller lends an index scratch as long as the vocabulary.

/// A small, fast, seedable RNG (SplitMix64). Deterministic across platforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// How to pick the next token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerConfig {
    /// Softmax temperature; `<= 0` means greedy.
    pub temperature: f32,
    /// Keep only the `top_k` most likely tokens (0: all).
    pub top_k: usize,
    /// Keep the smallest prefix of likely tokens whose mass reaches `top_p` (1: all).
    pub top_p: f32,
    /// RNG seed.
    pub seed: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 0.0,
            top_k: 40,
            top_p: 0.95,
            seed: 0,
        }
    }
}

/// Why sampling failed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleError {
    /// No logits.
    Empty,
    /// The index scratch is shorter than the logits.
    ScratchTooSmall,
    /// A logit is NaN.
    NotANumber,
}

/// Index of the largest logit (the first one on ties).
pub fn argmax(logits: &[f32]) -> Result<u32, SampleError> {
    let mut best = 0usize;
    let mut best_v = f32::NEG_INFINITY;
    if logits.is_empty() {
        return Err(SampleError::Empty);
    }
    for (i, &v) in logits.iter().enumerate() {
        if v.is_nan() {
            return Err(SampleError::NotANumber);
        }
        if v > best_v || i == 0 {
            best = i;
            best_v = v;
        }
    }
    Ok(best as u32)
}

/// A sampler: a config plus its RNG state.
#[derive(Clone, Debug)]
pub struct Sampler {
    cfg: SamplerConfig,
    rng: Rng,
}

impl Sampler {
    /// A sampler seeded from `cfg.seed`.
    pub fn new(cfg: SamplerConfig) -> Self {
        Sampler {
            cfg,
            rng: Rng::new(cfg.seed),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SamplerConfig {
        &self.cfg
    }

    /// Picks a token from `logits`. `scratch` must be at least `logits.len()` long.
    pub fn sample(&mut self, logits: &[f32], scratch: &mut [u32]) -> Result<u32, SampleError> {
        if self.cfg.temperature <= 0.0 {
            return argmax(logits);
        }
        let n = logits.len();
        if n == 0 {
            return Err(SampleError::Empty);
        }
        if scratch.len() < n {
            return Err(SampleError::ScratchTooSmall);
        }
        if logits.iter().any(|v| v.is_nan()) {
            return Err(SampleError::NotANumber);
        }
        let idx = &mut scratch[..n];
        for (i, s) in idx.iter_mut().enumerate() {
            *s = i as u32;
        }
        let by_logit_desc = |a: &u32, b: &u32| logits[*b as usize].total_cmp(&logits[*a as usize]);
        let k = if self.cfg.top_k == 0 || self.cfg.top_k >= n {
            n
        } else {
            idx.select_nth_unstable_by(self.cfg.top_k - 1, by_logit_desc);
            self.cfg.top_k
        };
        let top = &mut idx[..k];
        top.sort_unstable_by(by_logit_desc);
        let inv_t = 1.0 / self.cfg.temperature;
        let max = logits[top[0] as usize];
        let weight = |i: u32| libm::expf((logits[i as usize] - max) * inv_t);
        let total: f32 = top.iter().map(|&i| weight(i)).sum();
        // Top-p: cut the sorted list once its mass reaches top_p.
        let mut keep = top.len();
        if self.cfg.top_p < 1.0 {
            let mut acc = 0.0;
            for (j, &i) in top.iter().enumerate() {
                acc += weight(i) / total;
                if acc >= self.cfg.top_p {
                    keep = j + 1;
                    break;
                }
            }
        }
        let kept = &top[..keep];
        let mass: f32 = kept.iter().map(|&i| weight(i)).sum();
        let mut r = self.rng.next_f32() * mass;
        for &i in kept {
            r -= weight(i);
            if r <= 0.0 {
                return Ok(i);
            }
        }
        Ok(kept[keep - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_first_max() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, -1.0]), Ok(1));
        assert_eq!(argmax(&[]), Err(SampleError::Empty));
        assert_eq!(argmax(&[0.0, f32::NAN]), Err(SampleError::NotANumber));
    }

    #[test]
    fn top_k_one_is_greedy_and_seed_is_deterministic() {
        let logits = [0.1f32, 2.0, 1.9, -3.0, 0.5];
        let mut scratch = [0u32; 5];
        let mut s = Sampler::new(SamplerConfig {
            temperature: 1.0,
            top_k: 1,
            top_p: 1.0,
            seed: 7,
        });
        for _ in 0..20 {
            assert_eq!(s.sample(&logits, &mut scratch), Ok(1));
        }
        let cfg = SamplerConfig {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            seed: 42,
        };
        let (mut a, mut b) = (Sampler::new(cfg), Sampler::new(cfg));
        let mut seen = [0usize; 5];
        for _ in 0..2000 {
            let x = a.sample(&logits, &mut scratch).unwrap();
            assert_eq!(Ok(x), b.sample(&logits, &mut scratch));
            seen[x as usize] += 1;
        }
        // Tokens 1 and 2 carry most of the mass; token 3 almost none.
        assert!(seen[1] > 600 && seen[2] > 500 && seen[3] < 20, "{seen:?}");
    }

    #[test]
    fn top_p_cuts_the_tail() {
        let logits = [10.0f32, 0.0, 0.0, 0.0];
        let mut scratch = [0u32; 4];
        let mut s = Sampler::new(SamplerConfig {
            temperature: 1.0,
            top_k: 0,
            top_p: 0.5,
            seed: 1,
        });
        for _ in 0..100 {
            assert_eq!(s.sample(&logits, &mut scratch), Ok(0));
        }
    }
}
