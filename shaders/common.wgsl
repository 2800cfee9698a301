// Prepended to every Glimmer kernel (the Rust side concatenates modules; WGSL has no include).
//
// One bind group layout serves every kernel; a kernel declares only what it uses:
//   binding 0  uniform `p`: the kernel's own `P` struct, one 256-byte slot per dispatch
//   binding 1  `host`: u32 data of this step written by the host (token ids, positions)
//   binding 2..4  `a0`, `a1`, `a2`: the arena segments holding the op's 1st..3rd region
//                 (possibly the same buffer: all are read_write so aliasing is allowed)
//   binding 5  `wq`: a weight pool, GGUF blocks byte for byte, read as u32 words
//   binding 6  `kv`: one layer's KV cache (f16 pairs packed in u32, or f32 bits)
//   binding 7  `part`: attention split-K partials and other small results
@group(0) @binding(1) var<storage, read> host: array<u32>;
@group(0) @binding(2) var<storage, read_write> a0: array<f32>;
@group(0) @binding(3) var<storage, read_write> a1: array<f32>;
@group(0) @binding(4) var<storage, read_write> a2: array<f32>;
@group(0) @binding(5) var<storage, read> wq: array<u32>;
@group(0) @binding(6) var<storage, read_write> kv: array<u32>;
@group(0) @binding(7) var<storage, read_write> part: array<f32>;

// Workgroup index over a 2-D grid (dispatches wider than 65535 use y).
fn flat_wg(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// GGUF blocks are only 2-byte aligned (Q4_0 is 18 bytes), so weights are read through
// byte-addressed loads: a u32 at any byte offset is a funnel shift of two words.
fn ld_u32(byte: u32) -> u32 {
    let i = byte >> 2u;
    let s = (byte & 3u) * 8u;
    if (s == 0u) {
        return wq[i];
    }
    return (wq[i] >> s) | (wq[i + 1u] << (32u - s));
}

fn ld_u8(byte: u32) -> u32 {
    return (wq[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
}

// `byte` must be even (every GGUF f16 field is).
fn ld_u16(byte: u32) -> u32 {
    return (wq[byte >> 2u] >> ((byte & 2u) * 8u)) & 0xffffu;
}

fn ld_f16(byte: u32) -> f32 {
    return unpack2x16float(ld_u16(byte)).x;
}

// Byte `k` (0..3) of a word, as a signed 8-bit value.
fn sbyte(w: u32, k: u32) -> f32 {
    return f32(i32(w << (24u - 8u * k)) >> 24u);
}

// Rounds to f16 and back (llama.cpp's CPU path rounds some values through f16).
fn round_f16(x: f32) -> f32 {
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0))).x;
}

// tanh, clamped first: some drivers build it from exp and overflow to NaN for large |x|
// (tanh(+-10) is already +-1 in f32).
fn tanh_s(x: f32) -> f32 {
    return tanh(clamp(x, -10.0, 10.0));
}
