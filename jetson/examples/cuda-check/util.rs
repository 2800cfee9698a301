//! Random data, comparisons and the summary lines the device script collects.

/// A small deterministic RNG (xorshift64*).
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Roughly normal with standard deviation `std` (sum of four uniforms).
    pub fn normal(&mut self, std: f32) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum::<f32>() - 2.0;
        s * std * 1.732
    }

    /// `n` roughly normal values.
    pub fn vec(&mut self, n: usize, std: f32) -> Vec<f32> {
        (0..n).map(|_| self.normal(std)).collect()
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Result of one comparison.
pub struct Cmp {
    pub max_abs: f32,
    pub max_rel: f32,
}

/// `max |gpu - cpu|` and that over `max |cpu|`; a non-finite GPU value where the CPU has a
/// finite one (an unwritten poisoned output) counts as infinite error.
pub fn compare(cpu: &[f32], gpu: &[f32]) -> Cmp {
    let scale = cpu.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-30);
    let mut max_abs = 0f32;
    for (&c, &g) in cpu.iter().zip(gpu) {
        let d = if c.is_finite() && !g.is_finite() {
            f32::INFINITY
        } else {
            (c - g).abs()
        };
        if d > max_abs || d.is_nan() {
            max_abs = if d.is_nan() { f32::INFINITY } else { d };
        }
    }
    if cpu.len() != gpu.len() {
        max_abs = f32::INFINITY;
    }
    Cmp {
        max_abs,
        max_rel: max_abs / scale,
    }
}

/// Prints one kernel check line (and a summary line); returns whether it passed.
pub fn report(name: &str, c: &Cmp, tol: f32) -> bool {
    let detail = format!(
        "max_abs {:>10.3e}  max_rel {:>10.3e}  tol {tol:>8.1e}",
        c.max_abs, c.max_rel
    );
    verdict(
        name,
        &detail,
        &format!("{name}|{:.3e}|{tol:.1e}", c.max_rel),
        c.max_rel <= tol,
    )
}

/// A check's two lines: `name` and `detail` with PASS or FAIL, then
/// `SUMMARY|kernel|{summary}|PASS` (or FAIL). Returns `pass`.
pub fn verdict(name: &str, detail: &str, summary: &str, pass: bool) -> bool {
    let v = if pass { "PASS" } else { "FAIL" };
    println!("{name:<34} {detail}  {v}");
    println!("SUMMARY|kernel|{summary}|{v}");
    pass
}

/// Index of the largest value (lowest on ties; NaN never wins).
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in x.iter().enumerate() {
        if v > x[best] || x[best].is_nan() {
            best = i;
        }
    }
    best
}
