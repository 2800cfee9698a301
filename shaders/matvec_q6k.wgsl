// Q6_K for `vec_k` (matvec_k.wgsl).
//
// On the GPU a Q6_K block is padded to 224 bytes (apple/src/weights.rs), fourteen 16-byte
// words: eight of low nibbles (ql), four of top bit pairs (qh), one of the sixteen i8 scales,
// one holding the f16 d (and padding). Nibble word q (0..8) covers half h = q / 4, bytes
// l0 = 16 (q % 2) .. +16 of units a = 4h + (q % 4) / 2 (low nibbles) and a + 2 (high
// nibbles); their top bits are in qh word 2h + q % 2, at bits 2c and 2c + 4 of each byte
// (c = (q % 4) / 2), and their scales are scale bytes 2a + q % 2 and 2a + 4 + q % 2.
// The 6-bit values read as v = 1 + q / 64, so sum((q - 32) x) = 64 sum(v x) - 96 sum(x).
const KW_BLOCK: u32 = 14u;
const KW_NIB: u32 = 0u;
const KW_HI: u32 = 16u;

// Only the block's first word: `kw_word` loads the top bits, scales and d itself, as the
// separate Q6_K entry did before the formats shared `vec_k` (both ran at 65 µs a call on the
// 30B shape's 6656 x 19968 matrix; BENCHMARKS.md, session 6).
struct KwMeta {
    b: u32,
}

fn kw_meta(b: u32, q: u32) -> KwMeta {
    return KwMeta(b);
}

fn kw_x(q: u32) -> u32 {
    return 8u * (4u * (q >> 2u) + ((q & 3u) >> 1u)) + 4u * (q & 1u);
}

// 1 + q / 64 for the four bytes of the low (`lo` = the word itself) nibbles of `w` with the
// two top bits at bits 0..2 of each byte of `t`.
fn k6_lo(w: u32, t: u32) -> vec4<f32> {
    let a = vec4<u32>(w << 17u, w << 9u, w << 1u, w >> 7u) & vec4<u32>(0x001e0000u);
    let b = vec4<u32>(t << 21u, t << 13u, t << 5u, t >> 3u) & vec4<u32>(0x00600000u);
    return bitcast<vec4<f32>>(a | b | vec4<u32>(0x3f800000u));
}

// The same for the high nibbles of `w`.
fn k6_hi(w: u32, t: u32) -> vec4<f32> {
    let a = vec4<u32>(w << 13u, w << 5u, w >> 3u, w >> 11u) & vec4<u32>(0x001e0000u);
    let b = vec4<u32>(t << 21u, t << 13u, t << 5u, t >> 3u) & vec4<u32>(0x00600000u);
    return bitcast<vec4<f32>>(a | b | vec4<u32>(0x3f800000u));
}

// Signed byte `k` of the 16-byte word `s`.
fn k6_scale(s: vec4<u32>, k: u32) -> f32 {
    return f32(bitcast<i32>(s[k >> 2u] << (24u - 8u * (k & 3u))) >> 24u);
}

// Nibble word `w` (word q of block `b`, whose first 16-byte word is at `b`) against its 32
// activations: `l*` for unit a (sum `sl`), `u*` for unit a + 2 (sum `su`).
fn kw_word(
    m: KwMeta, q: u32, w: vec4<u32>,
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    u0: vec4<f32>, u1: vec4<f32>, u2: vec4<f32>, u3: vec4<f32>,
    sl: f32, su: f32
) -> f32 {
    let b = m.b;
    let h = q >> 2u;
    let c = (q & 3u) >> 1u;
    let qh = wq4[b + 8u + 2u * h + (q & 1u)];
    let sc = wq4[b + 12u];
    let d = unpack2x16float(wq4[b + 13u].x).x;
    let a = 4u * h + c;
    let sa = k6_scale(sc, 2u * a + (q & 1u));
    let sb = k6_scale(sc, 2u * a + 4u + (q & 1u));
    let ta = qh >> vec4<u32>(2u * c);
    let tb = qh >> vec4<u32>(2u * c + 4u);
    let va = k6_lo(w.x, ta.x) * l0 + k6_lo(w.y, ta.y) * l1 + k6_lo(w.z, ta.z) * l2 + k6_lo(w.w, ta.w) * l3;
    let vb = k6_hi(w.x, tb.x) * u0 + k6_hi(w.y, tb.y) * u1 + k6_hi(w.z, tb.z) * u2 + k6_hi(w.w, tb.w) * u3;
    return d * (sa * (64.0 * hsum4(va) - 96.0 * sl) + sb * (64.0 * hsum4(vb) - 96.0 * su));
}
