// Matvec (decode, `vec_k`) and small-batch matmul (`mat_k`, 4 activation rows a workgroup)
// for K-quant weights read as aligned 16-byte words, shared by Q4_K and Q6_K. Appended to those formats' matmul modules after quant.wgsl
// and matmul.wgsl (it uses their `hsum4`, `P` and `flat_wg`), followed by the format's file
// (matvec_q4k.wgsl or matvec_q6k.wgsl), which provides:
//   KW_BLOCK      16-byte words per 256-value block as the GPU holds it;
//   KW_NIB        the first of the block's eight nibble words;
//   kw_x(q)       the offset, in 16-byte activation words from the block's first, of the 16
//                 activations the low nibbles of nibble word q multiply (the high nibbles'
//                 are KW_HI words further);
//   KwMeta, kw_meta(b, q)  what else nibble word q of the block at word b needs (Q4_K: the
//                 header word, loaded with the nibble word so both loads are in flight
//                 together; Q6_K: the block's index, its kw_word loads the rest);
//   kw_word(..)   the dot of one nibble word with its 32 activations.
// The host takes this entry only when the rows start 16-byte aligned in the pool (pieces at
// 256-byte offsets, rows of whole blocks) and the activations at a multiple of 4 values.
//
// A 64-invocation workgroup computes 4 weight rows: each run of 32 invocations takes 2 rows, every
// invocation one nibble word of each row per step (consecutive invocations read consecutive
// words, so the loads are coalesced), and each activation load serves both rows. Nothing
// goes through private arrays: drivers may put those in local memory, which made a variant
// that kept its values in arrays 1.4-1.7x slower (BENCHMARKS.md, session 5).
//
// Quantized values become floats without an int-to-float conversion: placed in the top
// mantissa bits of 1.0 they read as 1 + q / 2^bits, and the sums of the activations, which
// the formats' offsets and minima need anyway, take the 1 back out.
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> wq4: array<vec4<u32>>;

// The 16 low-nibble and 16 high-nibble activations of nibble word `q` at `xb` (a 16-byte word
// index) dotted with word `w0` of one row's block (with `m0`) and `w1` of the other's.
fn kw_rows(xb: u32, q: u32, m0: KwMeta, w0: vec4<u32>, m1: KwMeta, w1: vec4<u32>) -> vec2<f32> {
    let l0 = x4[xb];
    let l1 = x4[xb + 1u];
    let l2 = x4[xb + 2u];
    let l3 = x4[xb + 3u];
    let u0 = x4[xb + KW_HI];
    let u1 = x4[xb + KW_HI + 1u];
    let u2 = x4[xb + KW_HI + 2u];
    let u3 = x4[xb + KW_HI + 3u];
    let sl = hsum4((l0 + l1) + (l2 + l3));
    let su = hsum4((u0 + u1) + (u2 + u3));
    return vec2<f32>(
        kw_word(m0, q, w0, l0, l1, l2, l3, u0, u1, u2, u3, sl, su),
        kw_word(m1, q, w1, l0, l1, l2, l3, u0, u1, u2, u3, sl, su)
    );
}

// The body of `mat_k`: rows r0, r0 + 1 against activation rows bz .. bz + nb (nb at most
// `nb_max`). Weight words are loaded once for all activation rows.
fn kw_body(lid: u32, wid: vec3<u32>, nwg: vec3<u32>, nb_max: u32) {
    let t = lid % 32u;
    let r0 = (flat_wg(wid, nwg) * 2u + lid / 32u) * 2u;
    let bz = wid.z * nb_max;
    let nb = min(nb_max, p.batch - min(bz, p.batch));
    let nw = (p.cols / 256u) * 8u;
    let wb0 = (p.w_base + min(r0, p.rows - 1u) * p.row_bytes) / 16u;
    let wb1 = (p.w_base + min(r0 + 1u, p.rows - 1u) * p.row_bytes) / 16u;
    let xo = (p.x_off + bz * p.cols) / 4u;
    let xs = p.cols / 4u;
    var acc0 = vec2<f32>(0.0);
    var acc1 = vec2<f32>(0.0);
    var acc2 = vec2<f32>(0.0);
    var acc3 = vec2<f32>(0.0);
    for (var e = t; e < nw; e = e + 32u) {
        let blk = e >> 3u;
        let q = e & 7u;
        let b0 = wb0 + KW_BLOCK * blk;
        let b1 = wb1 + KW_BLOCK * blk;
        let m0 = kw_meta(b0, q);
        let w0 = wq4[b0 + KW_NIB + q];
        let m1 = kw_meta(b1, q);
        let w1 = wq4[b1 + KW_NIB + q];
        let xb = xo + 64u * blk + kw_x(q);
        acc0 = acc0 + kw_rows(xb, q, m0, w0, m1, w1);
        if (nb > 1u) {
            acc1 = acc1 + kw_rows(xb + xs, q, m0, w0, m1, w1);
        }
        if (nb > 2u) {
            acc2 = acc2 + kw_rows(xb + 2u * xs, q, m0, w0, m1, w1);
        }
        if (nb > 3u) {
            acc3 = acc3 + kw_rows(xb + 3u * xs, q, m0, w0, m1, w1);
        }
    }
    // Lane b of each total: activation row bz + b.
    let s0 = seg_sum4_n(vec4<f32>(acc0.x, acc1.x, acc2.x, acc3.x), lid, 32u);
    let s1 = seg_sum4_n(vec4<f32>(acc0.y, acc1.y, acc2.y, acc3.y), lid, 32u);
    if (t < nb) {
        let o = p.out_off + (bz + t) * p.out_stride + r0;
        if (r0 < p.rows) {
            a1[o] = s0[t];
        }
        if (r0 + 1u < p.rows) {
            a1[o + 1u] = s1[t];
        }
    }
}

// One activation row (decode). Not `kw_body` with one row: the driver kept that body's
// registers for four, and decode ran 17 % slower (BENCHMARKS.md, session 5).
@compute @workgroup_size(64)
fn vec_k(
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
    var acc = vec2<f32>(0.0);
    for (var e = t; e < nw; e = e + 32u) {
        let blk = e >> 3u;
        let q = e & 7u;
        let b0 = wb0 + KW_BLOCK * blk;
        let b1 = wb1 + KW_BLOCK * blk;
        let m0 = kw_meta(b0, q);
        let w0 = wq4[b0 + KW_NIB + q];
        let m1 = kw_meta(b1, q);
        let w1 = wq4[b1 + KW_NIB + q];
        acc = acc + kw_rows(xo + 64u * blk + kw_x(q), q, m0, w0, m1, w1);
    }
    let s = seg_sum4_n(vec4<f32>(acc, 0.0, 0.0), lid, 32u);
    if (t < 2u && r0 + t < p.rows) {
        a1[p.out_off + r0 + t] = s[t];
    }
}

// Up to 4 activation rows a workgroup (z: groups of 4), for prefill chunks: each weight word
// read serves 4 rows of activations.
@compute @workgroup_size(64)
fn mat_k(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    kw_body(lid, wid, nwg, 4u);
}
