use std::io::{self, Write};

use glimmer_core::gguf::Gguf;
use glimmer_core::quant::GgmlType;

use super::tensors::{Fill, RowDamp, TensorGen};
use super::*;
use crate::tokenizer::gguf::vocab_from_gguf;
use crate::tokenizer::Tokenizer;

fn tiny_bytes(cfg: &SynthConfig) -> Vec<u8> {
    let mut out = Vec::new();
    let n = write_synth(cfg, &mut out, |_, _| {}).unwrap();
    assert_eq!(n, out.len() as u64);
    assert_eq!(n, synth_file_len(cfg).unwrap());
    out
}

#[test]
fn tiny_is_deterministic_and_seeded() {
    let a = tiny_bytes(&SynthConfig::tiny());
    let b = tiny_bytes(&SynthConfig::tiny());
    assert!(a == b, "same config, different bytes");
    let c = tiny_bytes(&SynthConfig {
        seed: 2,
        ..SynthConfig::tiny()
    });
    assert!(a != c, "seed does not change the file");
    eprintln!("tiny: {} bytes", a.len());
    assert!(a.len() < 6_000_000, "tiny is {} bytes", a.len());
}

#[test]
fn chunks_do_not_depend_on_worker_count() {
    let gen = TensorGen {
        ty: GgmlType::Q4_K,
        ne0: 1 << 16,
        n_rows: 50, // 4 chunks of 16 rows, the last one short
        fill: Fill::Normal {
            std: 0.1,
            damp: RowDamp::NONE,
        },
        seed: 7,
    };
    let mut one = Vec::new();
    gen.write_with(&mut one, 1).unwrap();
    let mut three = Vec::new();
    gen.write_with(&mut three, 3).unwrap();
    assert_eq!(one.len(), 50 * GgmlType::Q4_K.row_bytes(1 << 16).unwrap());
    assert!(one == three);
}

#[test]
fn values_have_the_intended_scale() {
    let gen = TensorGen {
        ty: GgmlType::F32,
        ne0: 4096,
        n_rows: 64,
        fill: Fill::Normal {
            std: 0.5,
            damp: RowDamp::NONE,
        },
        seed: 3,
    };
    let mut bytes = Vec::new();
    gen.write(&mut bytes).unwrap();
    let v: Vec<f64> = bytes
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
        .collect();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var.sqrt() - 0.5).abs() < 0.01, "std {}", var.sqrt());
}

#[test]
fn tiny_has_the_glimmer_layout() {
    let cfg = SynthConfig::tiny();
    let bytes = tiny_bytes(&cfg);
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.architecture(), Ok(Some("glimmer")));
    let u = |k: &str| g.get_u64(&format!("glimmer.{k}")).unwrap();
    let f = |k: &str| g.get_f32(&format!("glimmer.{k}")).unwrap();
    assert_eq!(u("block_count"), Some(8));
    assert_eq!(u("embedding_length"), Some(256));
    assert_eq!(u("feed_forward_length"), Some(512));
    assert_eq!(u("attention.head_count"), Some(8));
    assert_eq!(u("attention.head_count_kv"), Some(2));
    assert_eq!(u("attention.key_length"), Some(32));
    assert_eq!(u("attention.value_length"), Some(32));
    assert_eq!(u("attention.sliding_window"), Some(16));
    assert_eq!(u("attention.global_interval"), Some(4));
    assert_eq!(u("context_length"), Some(256));
    assert_eq!(f("rope.freq_base"), Some(5e5));
    assert_eq!(f("attention.layer_norm_rms_epsilon"), Some(1e-5));
    assert_eq!(f("attention.post_norm_rms_epsilon"), Some(1e-8));
    assert_eq!(f("final_logit_softcapping"), Some(20.0));
    assert_eq!(f("logit_scale"), Some(0.196_116_14));
    let scale = f("attention.scale").unwrap();
    assert!(
        (f64::from(scale) - 3.87 / 32f64.sqrt()).abs() < 1e-6,
        "scale {scale}"
    );
    assert_eq!(g.n_tensors(), 3 + 12 * 8);
    let shape = |name: &str| {
        let t = g.tensor(name).unwrap_or_else(|| panic!("{name} missing"));
        (t.ty, t.dims[..t.n_dims].to_vec())
    };
    assert_eq!(shape("token_embd.weight"), (GgmlType::Q8_0, vec![256, 512]));
    assert_eq!(shape("output.weight"), (GgmlType::Q8_0, vec![256, 512]));
    assert_eq!(shape("output_norm.weight"), (GgmlType::F32, vec![256]));
    for i in 0..8 {
        let s = |n: &str| shape(&format!("blk.{i}.{n}.weight"));
        assert_eq!(s("attn_q"), (GgmlType::Q8_0, vec![256, 256]));
        assert_eq!(s("attn_k"), (GgmlType::Q8_0, vec![256, 64]));
        assert_eq!(s("attn_v"), (GgmlType::Q8_0, vec![256, 64]));
        assert_eq!(s("attn_gate"), (GgmlType::Q8_0, vec![256, 256]));
        assert_eq!(s("attn_output"), (GgmlType::Q8_0, vec![256, 256]));
        assert_eq!(s("ffn_gate"), (GgmlType::Q8_0, vec![256, 512]));
        assert_eq!(s("ffn_up"), (GgmlType::Q8_0, vec![256, 512]));
        assert_eq!(s("ffn_down"), (GgmlType::Q8_0, vec![512, 256]));
        for n in [
            "attn_norm",
            "post_attention_norm",
            "ffn_norm",
            "post_ffw_norm",
        ] {
            assert_eq!(s(n), (GgmlType::F32, vec![256]));
        }
    }
    // Norm gains are absolute (mean about 1), not deltas.
    let t = g.tensor("blk.0.attn_norm.weight").unwrap();
    let mean = t
        .data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .sum::<f32>()
        / 256.0;
    assert!((mean - 1.0).abs() < 0.05, "attn_norm mean {mean}");
}

#[test]
fn tiny_vocabulary_is_a_working_bpe() {
    let bytes = tiny_bytes(&SynthConfig::tiny());
    let g = Gguf::parse(&bytes).unwrap();
    let v = vocab_from_gguf(&g).unwrap();
    assert_eq!(v.tokens.len(), 512);
    assert_eq!(v.tokens[usize::from(b'a')], "a");
    assert_eq!(v.tokens[32], "\u{120}");
    assert_eq!(v.merges.len(), 512 - 256 - 8);
    for (k, m) in v.merges.iter().enumerate() {
        let (l, r) = m.split_once(' ').unwrap();
        let id = 256 + k;
        assert_eq!(v.tokens[id], format!("{l}{r}"), "merge {k}");
        let pos = |s: &str| v.tokens.iter().position(|t| t == s).unwrap();
        assert!(pos(l) < id && pos(r) < id, "merge {k} uses a later token");
    }
    let named = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|eom|>",
        "<|eot|>",
        "<|start|>",
        "<|message|>",
    ];
    for (i, name) in named.iter().enumerate() {
        assert_eq!(v.tokens[504 + i], *name);
    }
    assert!(v.types[..504].iter().all(|&t| t == 1));
    assert!(v.types[504..].iter().all(|&t| t == 3));
    assert_eq!(
        (v.bos, v.eos, v.eom, v.eot),
        (Some(504), Some(505), Some(506), Some(507))
    );
    let tok = Tokenizer::from_vocab(v).unwrap();
    let text = "<|start|>user<|message|>Héllo, wörld 42!<|eot|>";
    let ids = tok.encode(text, false, true).unwrap();
    assert_eq!(ids[0], 508);
    assert_eq!(ids[ids.len() - 1], 507);
    assert!(ids.len() < text.len(), "no merge applied: {ids:?}");
    let plain = "Héllo, wörld 42! the quick brown fox";
    let ids = tok.encode(plain, false, false).unwrap();
    assert_eq!(tok.decode(&ids).unwrap(), plain);
}

#[test]
fn q4_k_m_mix_follows_the_rule() {
    let cfg = SynthConfig::tiny_q4_k_m();
    // n = 8: n/8 = 1, 7n/8 = 7, so layers 0, 3, 6 and 7 get Q6_K.
    let q6: Vec<usize> = (0..8)
        .filter(|&i| cfg.matrix_type("ffn_down", Some(i)) == GgmlType::Q6_K)
        .collect();
    assert_eq!(q6, [0, 3, 6, 7]);
    assert_eq!(cfg.matrix_type("attn_v", Some(3)), GgmlType::Q6_K);
    assert_eq!(cfg.matrix_type("attn_k", Some(3)), GgmlType::Q4_K);
    assert_eq!(cfg.matrix_type("output", None), GgmlType::Q6_K);
    assert_eq!(cfg.matrix_type("token_embd", None), GgmlType::Q4_K);
    let full = SynthConfig::full();
    let n = (0..52)
        .filter(|&i| full.matrix_type("ffn_down", Some(i)) == GgmlType::Q6_K)
        .count();
    assert_eq!(n, 6 + 7 + 13); // i < 6, i >= 45, and 8, 11, …, 44
    let bytes = tiny_bytes(&cfg);
    eprintln!("tiny Q4_K_M: {} bytes", bytes.len());
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.tensor("blk.6.attn_v.weight").unwrap().ty, GgmlType::Q6_K);
    assert_eq!(g.tensor("blk.5.attn_v.weight").unwrap().ty, GgmlType::Q4_K);
}

#[test]
fn bad_configs_are_refused() {
    let t = SynthConfig::tiny;
    for cfg in [
        SynthConfig {
            n_head_kv: 3,
            ..t()
        },
        SynthConfig {
            head_dim: 30,
            ..t()
        },
        SynthConfig {
            qk_overlap: 0.0,
            ..t()
        },
        SynthConfig { dim: 0, ..t() },
        SynthConfig { vocab: 260, ..t() },
        SynthConfig {
            n_special: 6,
            ..t()
        },
        SynthConfig { window: 0, ..t() },
    ] {
        assert!(
            matches!(synth_file_len(&cfg), Err(Error::SynthConfig(_))),
            "{cfg:?}"
        );
    }
    // K-quants need rows of whole 256-blocks.
    let cfg = SynthConfig {
        dim: 96,
        weight_type: GgmlType::Q4_K,
        ..t()
    };
    assert!(matches!(synth_file_len(&cfg), Err(Error::GgufWrite(_))));
}

#[test]
fn qk_overlap_damps_half_of_each_head() {
    let cfg = SynthConfig::tiny_f32();
    let bytes = tiny_bytes(&cfg);
    let g = Gguf::parse(&bytes).unwrap();
    // Row standard deviations of the first and second half of each head.
    let halves = |name: &str| {
        let t = g.tensor(name).unwrap();
        let mut ss = [0.0f64; 2];
        for (r, row) in t.data.chunks_exact(256 * 4).enumerate() {
            let half = usize::from(r % 32 >= 16);
            for b in row.chunks_exact(4) {
                ss[half] += f64::from(f32::from_le_bytes(b.try_into().unwrap())).powi(2);
            }
        }
        let n = (t.data.len() / 8) as f64;
        [(ss[0] / n).sqrt() * 16.0, (ss[1] / n).sqrt() * 16.0]
    };
    let [q0, q1] = halves("blk.2.attn_q.weight");
    let [k0, k1] = halves("blk.2.attn_k.weight");
    let [v0, v1] = halves("blk.2.attn_v.weight");
    for (got, want) in [
        (q0, 1.0),
        (q1, 0.25),
        (k0, 0.25),
        (k1, 1.0),
        (v0, 1.0),
        (v1, 1.0),
    ] {
        assert!((got - want).abs() < 0.03, "std {got}, want {want}");
    }
}

#[test]
fn full_is_about_17_gb() {
    let len = synth_file_len(&SynthConfig::full()).unwrap();
    eprintln!(
        "full: {len} bytes ({:.2} GB, {:.2} GiB)",
        len as f64 / 1e9,
        len as f64 / (1u64 << 30) as f64
    );
    assert!((16_000_000_000..18_000_000_000).contains(&len), "{len}");
}

/// A sink that accepts `limit` bytes, then fails.
struct Stop {
    n: u64,
    limit: u64,
}

impl Write for Stop {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.n >= self.limit {
            return Err(io::Error::other("enough"));
        }
        self.n += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Peak resident memory of this process, from /proc (Linux only).
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

#[test]
fn full_streams_without_holding_tensors() {
    let limit = 96 << 20;
    let mut last = (0, 0);
    let r = write_synth(&SynthConfig::full(), Stop { n: 0, limit }, |d, t| {
        last = (d, t)
    });
    match r {
        Err(Error::GgufWrite(_)) => {}
        other => panic!("expected the sink's error, got {other:?}"),
    }
    assert!(last.0 >= limit, "only {} bytes reached the sink", last.0);
    assert_eq!(last.1, synth_file_len(&SynthConfig::full()).unwrap());
    if let Some(peak) = peak_rss() {
        eprintln!(
            "peak RSS {} MiB after streaming {} MiB of full",
            peak >> 20,
            last.0 >> 20
        );
        assert!(peak < 1 << 30, "peak RSS {peak}");
    }
}
