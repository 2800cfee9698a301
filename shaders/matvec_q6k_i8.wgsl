// Q6_K decode matvec on int8 activations: `vec_k8`. Appended to the Q6_K matmul module after
// matvec_k.wgsl, matvec_q6k.wgsl and matvec_k8.wgsl (it uses `wq4`, `flat_wg`, `seg_sum4_n`,
// `k6_scale`, `xq4`, `k8_dot`); the
// activation row was quantized by `q8` (quantize.wgsl), as for Q4_K (matvec_q4k_i8.wgsl).
//
// The work layout and the block words are vec_k's (see matvec_q6k.wgsl): nibble word q of the
// padded 224-byte block gives 16 values of unit a = 4 (q / 4) + (q % 4) / 2 in its low nibbles
// and 16 of unit a + 2 in its high nibbles, their top two bits in qh word 2 (q / 4) + q % 2.
// A byte's 6-bit value v (0..63) is the nibble OR-ed with its two top bits shifted up by four:
// five bit operations for four values, then one dot4I8Packed (v < 128 reads the same as a
// signed byte). sum((v - 32) x) = d_x sum(v q_x) - 32 sum(x), with the exact sum of x.

// Nibble word `w` (word q of the block at 16-byte word `b`) against int8 activations `xa`
// (unit a's half) and `xb` (unit a + 2's), whose (d, sum) are `fa`, `fb`.
fn k68_word(b: u32, q: u32, w: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>, fa: vec2<f32>, fb: vec2<f32>) -> f32 {
    let h = q >> 2u;
    let c = (q & 3u) >> 1u;
    let qh = wq4[b + 8u + 2u * h + (q & 1u)];
    let sc = wq4[b + 12u];
    let d = unpack2x16float(wq4[b + 13u].x).x;
    let a = 4u * h + c;
    let m4 = vec4<u32>(0x0f0f0f0fu);
    let m2 = vec4<u32>(0x03030303u);
    let va = (w & m4) | (((qh >> vec4<u32>(2u * c)) & m2) << vec4<u32>(4u));
    let vb = ((w >> vec4<u32>(4u)) & m4) | (((qh >> vec4<u32>(2u * c + 4u)) & m2) << vec4<u32>(4u));
    let sa = k6_scale(sc, 2u * a + (q & 1u));
    let sb = k6_scale(sc, 2u * a + 4u + (q & 1u));
    return d * (sa * (fa.x * f32(k8_dot(va, xa)) - 32.0 * fa.y)
        + sb * (fb.x * f32(k8_dot(vb, xb)) - 32.0 * fb.y));
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
        let b0 = wb0 + KW_BLOCK * blk;
        let b1 = wb1 + KW_BLOCK * blk;
        let w0 = wq4[b0 + q];
        let w1 = wq4[b1 + q];
        let ua = 8u * blk + 4u * (q >> 2u) + ((q & 3u) >> 1u);
        let half = q & 1u;
        let xa = xq4[p.x_off + 2u * ua + half];
        let xb = xq4[p.x_off + 2u * (ua + 2u) + half];
        let da = bitcast<vec4<f32>>(xq4[ds + ua]);
        let db = bitcast<vec4<f32>>(xq4[ds + ua + 2u]);
        let fa = vec2<f32>(da.x, select(da.y, da.z, half == 1u));
        let fb = vec2<f32>(db.x, select(db.y, db.z, half == 1u));
        acc = acc + vec2<f32>(
            k68_word(b0, q, w0, xa, xb, fa, fb),
            k68_word(b1, q, w1, xa, xb, fa, fb)
        );
    }
    let s = seg_sum4_n(vec4<f32>(acc, 0.0, 0.0), lid, 32u);
    if (t < 2u && r0 + t < p.rows) {
        a1[p.out_off + r0 + t] = s[t];
    }
}
