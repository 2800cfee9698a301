// Q4_K decode matvec on int8 activations: `vec_k8`. Appended to the Q4_K matmul module after
// matvec_k.wgsl, matvec_q4k.wgsl and matvec_k8.wgsl (it uses `k4_scales`, `wq4`, `flat_wg`,
// `seg_sum4_n`, `xq4`, `k8_dot`).
//
// The activation row was first quantized by `q8` (quantize.wgsl) into `part`: per 32 values,
// 32 int8 and (d, sum of the first 16, sum of the last 16). The layout of work is vec_k's:
// 32 invocations per pair of rows, one 16-byte nibble word of each row per step. A nibble
// word's 16 low nibbles multiply 16 int8 activations of sub-block a (one 16-byte word) and
// its high nibbles 16 of sub-block a + 1, through eight dot4I8Packed; the nibbles (0..15) are
// the same as signed bytes. So a word costs 12 bit operations and 8 four-way integer dots
// where the float form (kw_word) costs about 100 operations, and the activations read are a
// quarter of the bytes. The rounding of the activations (at most d / 2 = max|x| / 254 per
// value, relative to its 32-value block) is the price; the minima use the exact sums.

// Nibble word `w` (word q of a block with header `h`) against int8 activations `xa` (sub-block
// a's half) and `xb` (sub-block a + 1's), whose (d, sum) are `fa`, `fb`.
fn k8_word(h: vec4<u32>, w: vec4<u32>, q: u32, xa: vec4<u32>, xb: vec4<u32>, fa: vec2<f32>, fb: vec2<f32>) -> f32 {
    let m = vec4<u32>(0x0f0f0f0fu);
    let ia = k8_dot(w & m, xa);
    let ib = k8_dot((w >> vec4<u32>(4u)) & m, xb);
    let s = k4_scales(h, q >> 1u);
    let dm = unpack2x16float(h.x);
    return dm.x * (s.x * fa.x * f32(ia) + s.y * fb.x * f32(ib)) - dm.y * (s.z * fa.y + s.w * fb.y);
}

@compute @workgroup_size(64)
fn vec_k8(
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
    let ds = p.x_off + 2u * (p.cols / 32u);
    var acc = vec2<f32>(0.0);
    for (var e = t; e < nw; e = e + 32u) {
        let blk = e >> 3u;
        let q = e & 7u;
        let h0 = wq4[wb0 + 9u * blk];
        let w0 = wq4[wb0 + 9u * blk + 1u + q];
        let h1 = wq4[wb1 + 9u * blk];
        let w1 = wq4[wb1 + 9u * blk + 1u + q];
        let sa = 8u * blk + 2u * (q >> 1u);
        let half = q & 1u;
        let xa = xq4[p.x_off + 2u * sa + half];
        let xb = xq4[p.x_off + 2u * sa + 2u + half];
        let da = bitcast<vec4<f32>>(xq4[ds + sa]);
        let db = bitcast<vec4<f32>>(xq4[ds + sa + 1u]);
        let fa = vec2<f32>(da.x, select(da.y, da.z, half == 1u));
        let fb = vec2<f32>(db.x, select(db.y, db.z, half == 1u));
        acc = acc + vec2<f32>(
            k8_word(h0, w0, q, xa, xb, fa, fb),
            k8_word(h1, w1, q, xa, xb, fa, fb)
        );
    }
    let s = seg_sum4_n(vec4<f32>(acc, 0.0, 0.0), lid, 32u);
    if (t < 2u && r0 + t < p.rows) {
        a1[p.out_off + r0 + t] = s[t];
    }
}
