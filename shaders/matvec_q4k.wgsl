// Q4_K for `vec_k` (matvec_k.wgsl).
//
// A Q4_K block (144 bytes per 256 weights) is nine 16-byte words: the header (f16 d, f16 dmin,
// 12 bytes of 6-bit scales and minima) and eight words of nibbles. Nibble word q holds
// elements 16(q % 2)..+16 of sub-block 2(q / 2) in its low nibbles and of sub-block
// 2(q / 2) + 1 in its high nibbles. Rows of `144 n` bytes start 16-byte aligned as stored.
// Nibbles read as v = 1 + q / 16, so sum(q x) = 16 (sum(v x) - sum(x)); scales and minima
// (6 bits) go through the mantissa of 2^23.
const KW_BLOCK: u32 = 9u;
const KW_NIB: u32 = 1u;
const KW_HI: u32 = 8u;

// The block header (d, dmin, scales), loaded beside the nibble word: fetching it inside
// `kw_word`, after the activations, made Q4_K 19 % slower on the H200 (BENCHMARKS.md, session 6).
struct KwMeta {
    h: vec4<u32>,
}

fn kw_meta(b: u32, q: u32) -> KwMeta {
    return KwMeta(wq4[b]);
}

fn kw_x(q: u32) -> u32 {
    return 16u * (q >> 1u) + 4u * (q & 1u);
}

// 1 + q / 16 for the low nibble of each byte of `w`.
fn k4_lo(w: u32) -> vec4<f32> {
    let v = vec4<u32>(w << 19u, w << 11u, w << 3u, w >> 5u);
    return bitcast<vec4<f32>>((v & vec4<u32>(0x00780000u)) | vec4<u32>(0x3f800000u));
}

// 1 + q / 16 for the high nibble of each byte of `w`.
fn k4_hi(w: u32) -> vec4<f32> {
    let v = vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u);
    return bitcast<vec4<f32>>((v & vec4<u32>(0x00780000u)) | vec4<u32>(0x3f800000u));
}

// (scale a, scale b, min a, min b) of sub-blocks a = 2 pp and b = 2 pp + 1 from the header
// word `h` (h.y: scale bytes 0..4, h.z: 4..8, h.w: 8..12).
fn k4_scales(h: vec4<u32>, pp: u32) -> vec4<f32> {
    var v: vec4<u32>;
    if (pp < 2u) {
        let s = 16u * pp;
        v = vec4<u32>(h.y >> s, h.y >> (s + 8u), h.z >> s, h.z >> (s + 8u)) & vec4<u32>(63u);
    } else {
        let s = 16u * (pp - 2u);
        let lo = vec4<u32>(h.w >> s, h.w >> (s + 8u), h.w >> (s + 4u), h.w >> (s + 12u)) & vec4<u32>(15u);
        let hi = vec4<u32>(h.y >> (s + 6u), h.y >> (s + 14u), h.z >> (s + 6u), h.z >> (s + 14u)) & vec4<u32>(3u);
        v = lo | (hi << vec4<u32>(4u));
    }
    return bitcast<vec4<f32>>(v | vec4<u32>(0x4b000000u)) - vec4<f32>(8388608.0);
}

// Nibble word `w` (word q of the block whose header is `m.h`) against its 32
// activations (`l*`: the low nibbles' 16, `u*`: the high nibbles' 16, whose sums are `sl`,
// `su`).
fn kw_word(
    m: KwMeta, q: u32, w: vec4<u32>,
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    u0: vec4<f32>, u1: vec4<f32>, u2: vec4<f32>, u3: vec4<f32>,
    sl: f32, su: f32
) -> f32 {
    let h = m.h;
    let s = k4_scales(h, q >> 1u);
    let dm = unpack2x16float(h.x);
    let vl = k4_lo(w.x) * l0 + k4_lo(w.y) * l1 + k4_lo(w.z) * l2 + k4_lo(w.w) * l3;
    let vu = k4_hi(w.x) * u0 + k4_hi(w.y) * u1 + k4_hi(w.z) * u2 + k4_hi(w.w) * u3;
    return 16.0 * dm.x * (s.x * (hsum4(vl) - sl) + s.y * (hsum4(vu) - su))
        - dm.y * (s.z * sl + s.w * su);
}
