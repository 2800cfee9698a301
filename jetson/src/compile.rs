//! The kernel sources, compiled by NVRTC for the device's architecture and cached on disk.
//!
//! The `.cu` files under `kernels/` are concatenated into one program (common helpers first).
//! The PTX is cached under [`cache_dir`] in a file named by a hash of the sources, the NVRTC
//! options and the architecture, so a second start skips NVRTC.

use std::path::PathBuf;

use cudarc::nvrtc::{self, CompileOptions, Ptx};

use crate::CudaError;

/// Kernel sources in the order they are compiled.
pub const SOURCES: [(&str, &str); 13] = [
    ("common.cu", include_str!("../../kernels/common.cu")),
    ("quantize.cu", include_str!("../../kernels/quantize.cu")),
    ("gemv.cu", include_str!("../../kernels/gemv.cu")),
    ("gemv_k.cu", include_str!("../../kernels/gemv_k.cu")),
    ("gemm.cu", include_str!("../../kernels/gemm.cu")),
    ("embed.cu", include_str!("../../kernels/embed.cu")),
    ("norm.cu", include_str!("../../kernels/norm.cu")),
    ("rope.cu", include_str!("../../kernels/rope.cu")),
    (
        "elementwise.cu",
        include_str!("../../kernels/elementwise.cu"),
    ),
    ("argmax.cu", include_str!("../../kernels/argmax.cu")),
    ("attention.cu", include_str!("../../kernels/attention.cu")),
    (
        "attn_inputs.cu",
        include_str!("../../kernels/attn_inputs.cu"),
    ),
    ("memory.cu", include_str!("../../kernels/memory.cu")),
];

/// The whole program: every source, in order, each preceded by a `#line` marker so NVRTC
/// errors name the file.
pub fn program() -> String {
    let mut s = String::new();
    for (name, src) in SOURCES {
        s.push_str(&format!("#line 1 \"{name}\"\n"));
        s.push_str(src);
        s.push('\n');
    }
    s
}

/// FNV-1a, 64 bits: a stable hash for cache keys (not for security).
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where compiled kernels are cached: `$GLIMMER_CUDA_CACHE`, else
/// `$XDG_CACHE_HOME/glimmer/cuda`, else `~/.cache/glimmer/cuda`, else the temp directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GLIMMER_CUDA_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("glimmer/cuda");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/glimmer/cuda");
    }
    std::env::temp_dir().join("glimmer-cuda")
}

/// NVRTC options for compute capability `major.minor`, plus one `-D` for each `NAME=VALUE`
/// (or bare `NAME`) in `$GLIMMER_CUDA_DEFINES` (separated by whitespace or commas). That variable is a
/// measuring knob: the kernels' tuning macros (`GEMV_STREAM_HINT`, `NORM_PRELOAD`, ...) have
/// defaults chosen by measurement (BENCHMARKS.md), and a benchmark run can set other values
/// without a rebuild. The defines are part of the cache key.
fn options(major: i32, minor: i32) -> Vec<String> {
    let mut o = vec![
        format!("--gpu-architecture=compute_{major}{minor}"),
        "--std=c++17".to_owned(),
    ];
    o.extend(defines(
        std::env::var("GLIMMER_CUDA_DEFINES").ok().as_deref(),
    ));
    o
}

/// `-DNAME=VALUE` options from a list separated by whitespace or commas; entries that are not a C
/// identifier (optionally `=` and a value of letters, digits, `_`, `.` or `-`) are skipped, so
/// the variable cannot inject other compiler options.
fn defines(list: Option<&str>) -> Vec<String> {
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    list.unwrap_or("")
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|d| !d.is_empty())
        .filter(|d| {
            let (name, val) = d.split_once('=').unwrap_or((d, "x"));
            ident(name)
                && !val.is_empty()
                && val
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        })
        .map(|d| format!("-D{d}"))
        .collect()
}

/// PTX for compute capability `major.minor`, from the cache or compiled now (and cached).
/// On a compile error the NVRTC log is written to `last-compile-error.log` in the cache
/// directory.
pub fn ptx_for(major: i32, minor: i32) -> Result<Ptx, CudaError> {
    let src = program();
    let opts = options(major, minor);
    let key = fnv1a(&[src.as_bytes(), opts.join(" ").as_bytes()]);
    let dir = cache_dir();
    let path = dir.join(format!("glimmer-{key:016x}-sm{major}{minor}.ptx"));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok(Ptx::from_src(text));
    }
    // SAFETY: only probes whether the shared library can be opened; nothing is called.
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(CudaError::NoNvrtc);
    }
    let co = CompileOptions {
        options: opts,
        name: Some("glimmer.cu".to_owned()),
        ..Default::default()
    };
    match nvrtc::compile_ptx_with_opts(&src, co) {
        Ok(ptx) => {
            // The cache is an optimization: a read-only or full disk only costs a recompile.
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(&path, ptx.to_src());
            Ok(ptx)
        }
        Err(e) => {
            let _ = std::fs::create_dir_all(&dir);
            let log = match &e {
                nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => format!("{other:?}"),
            };
            let _ = std::fs::write(dir.join("last-compile-error.log"), log);
            Err(CudaError::Compile)
        }
    }
}

/// The kernel (`.entry`) names of PTX text, in order.
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let rest = l.split_once(".entry")?.1;
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_holds_every_kernel_and_hash_is_stable() {
        let p = program();
        for name in [
            "quantize_q8_1",
            "GEMV_Q(gemv_q5_k",
            "gemv_q6_k_r1",
            "attn_split",
            "combine_head",
            "argmax_f32",
            "sample_f32",
        ] {
            assert!(p.contains(name), "{name} missing");
        }
        assert_eq!(fnv1a(&[b"a"]), fnv1a(&[b"a"]));
        let ptx = "// .globl\tgemv_a\n.visible .entry gemv_a(\n\t.param .u64 p\n)\n\
                   .visible .entry norm_b (\n.func helper(\n.entry\n";
        assert_eq!(entry_names(ptx), ["gemv_a", "norm_b"]);
        assert_ne!(fnv1a(&[b"ab"]), fnv1a(&[b"a", b"b"]));
    }

    #[test]
    fn defines_accept_names_and_values_only() {
        assert_eq!(
            defines(Some(" GEMV_STREAM_HINT=1\tNORM_PRELOAD=0,FLAG ")),
            ["-DGEMV_STREAM_HINT=1", "-DNORM_PRELOAD=0", "-DFLAG"]
        );
        // Anything that could be read as another option, or is not a name, is dropped.
        assert!(defines(Some("--use_fast_math 1X=2 A=b;c A= A=\"q\"")).is_empty());
        assert!(defines(None).is_empty());
    }

    /// NVRTC needs no GPU: where libnvrtc is found, the sources must compile for sm_90.
    #[test]
    fn kernels_compile_with_nvrtc_when_present() {
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            eprintln!("SKIP: libnvrtc not found (set LD_LIBRARY_PATH to a CUDA 13 lib dir)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("glimmer-nvrtc-test-{}", std::process::id()));
        std::env::set_var("GLIMMER_CUDA_CACHE", &dir);
        let r = ptx_for(9, 0);
        let log = std::fs::read_to_string(dir.join("last-compile-error.log")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&dir);
        let ptx = r.unwrap_or_else(|e| panic!("{e}: {log}"));
        let text = ptx.to_src();
        let names = entry_names(&text);
        for name in ["gemv_k_multi_tma1_t2", "gemv_k_multi", "norm_sums_q8_f32"] {
            assert!(names.iter().any(|n| n == name), "{name} not an entry");
        }
        for name in [
            "gemv_q4_k_r8",
            "gemv_q4_k_r1",
            "gemv_q6_k_r1",
            "gemv_q6_k_r8",
            "gemv_q5_k_r1",
            "attn_split",
            "kv_store_f16",
            "embed_rows",
        ] {
            assert!(
                text.contains(&format!(".entry {name}")),
                "{name} missing from PTX"
            );
        }
    }
}
