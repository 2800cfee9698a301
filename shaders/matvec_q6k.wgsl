// One-row matvec (decode) for Q6_K weights, read as aligned 16-byte words.
// Appended to the Q6_K matmul module after matmul.wgsl; uses its `P` and `flat_wg`.
//
// On the GPU a Q6_K block is padded to 224 bytes (apple/src/weights.rs), fourteen 16-byte
// words: eight of low nibbles (ql), four of top bit pairs (qh), one of the sixteen i8 scales,
// one holding the f16 d (and padding). Nibble word q (0..8) covers half h = q / 4, bytes
// l0 = 16 (q % 2) .. +16 of units a = 4h + (q % 4) / 2 (low nibbles) and a + 2 (high
// nibbles); their top bits are in qh word 2h + q % 2, at bits 2c and 2c + 4 of each byte
// (c = (q % 4) / 2), and their scales are scale bytes 2a + q % 2 and 2a + 4 + q % 2.
//
// The layout of the work is that of `vec_q4k`: 32 invocations a row pair, one nibble word of
// each row a step, no private arrays. The 6-bit values become floats in the top mantissa bits
// of 1.0 (v = 1 + q / 64), so sum((q - 32) x) = 64 sum(v x) - 96 sum(x).
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> wq4: array<vec4<u32>>;

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

fn k6_hsum(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// Signed byte `k` of the 16-byte word `s`.
fn k6_scale(s: vec4<u32>, k: u32) -> f32 {
    return f32(bitcast<i32>(s[k >> 2u] << (24u - 8u * (k & 3u))) >> 24u);
}

// Nibble word `w` (word q of block `b`, whose first 16-byte word is at `b`) against its 32
// activations: `l*` for unit a (sum `sl`), `u*` for unit a + 2 (sum `su`).
fn k6_word(
    b: u32, q: u32, w: vec4<u32>,
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    u0: vec4<f32>, u1: vec4<f32>, u2: vec4<f32>, u3: vec4<f32>,
    sl: f32, su: f32
) -> f32 {
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
    return d * (sa * (64.0 * k6_hsum(va) - 96.0 * sl) + sb * (64.0 * k6_hsum(vb) - 96.0 * su));
}

@compute @workgroup_size(64)
fn vec_q6k(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let t = lid % 32u;
    let r0 = (flat_wg(wid, nwg) * 2u + lid / 32u) * 2u;
    let nw = (p.cols / 256u) * 8u;
    let wb0 = (p.w_base + min(r0, p.rows - 1u) * p.row_bytes) / 16u;
    let wb1 = (p.w_base + min(r0 + 1u, p.rows - 1u) * p.row_bytes) / 16u;
    let xo = p.x_off / 4u;
    var acc0 = 0.0;
    var acc1 = 0.0;
    for (var e = t; e < nw; e = e + 32u) {
        let blk = e >> 3u;
        let q = e & 7u;
        let b0 = wb0 + 14u * blk;
        let b1 = wb1 + 14u * blk;
        let w0 = wq4[b0 + q];
        let w1 = wq4[b1 + q];
        let a = 4u * (q >> 2u) + ((q & 3u) >> 1u);
        let xb = xo + 64u * blk + 8u * a + 4u * (q & 1u);
        let l0 = x4[xb];
        let l1 = x4[xb + 1u];
        let l2 = x4[xb + 2u];
        let l3 = x4[xb + 3u];
        let u0 = x4[xb + 16u];
        let u1 = x4[xb + 17u];
        let u2 = x4[xb + 18u];
        let u3 = x4[xb + 19u];
        let sl = k6_hsum((l0 + l1) + (l2 + l3));
        let su = k6_hsum((u0 + u1) + (u2 + u3));
        acc0 = acc0 + k6_word(b0, q, w0, l0, l1, l2, l3, u0, u1, u2, u3, sl, su);
        acc1 = acc1 + k6_word(b1, q, w1, l0, l1, l2, l3, u0, u1, u2, u3, sl, su);
    }
    let s = seg_sum4_n(vec4<f32>(acc0, acc1, 0.0, 0.0), lid, 32u);
    if (t < 2u && r0 + t < p.rows) {
        a1[p.out_off + r0 + t] = s[t];
    }
}
