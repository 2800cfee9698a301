// One-row matvec (decode) for Q4_K weights, read as aligned 16-byte words.
// Appended to the Q4_K matmul module after matmul.wgsl; uses its `P` and `flat_wg`.
//
// A Q4_K block (144 bytes per 256 weights) is nine 16-byte words: the header (f16 d, f16 dmin,
// 12 bytes of 6-bit scales and minima) and eight words of nibbles. Word q (0..8) of the
// nibbles holds elements 16(q % 2)..+16 of sub-block 2(q / 2) in its low nibbles and of
// sub-block 2(q / 2) + 1 in its high nibbles. Rows of `144 n` bytes in a pool piece at a
// 256-byte offset start 16-byte aligned, so every weight load is one `vec4<u32>` (the host
// takes this entry only when the piece and the activations are aligned that way).
//
// A 64-invocation workgroup computes 4 rows: each run of 32 invocations takes 2 rows, every
// invocation one nibble word of each row per step (consecutive invocations read consecutive
// words), so each activation load serves two rows. Nothing goes through private arrays
// (drivers may put those in local memory, which made an earlier version 2-3x slower).
//
// Nibbles become floats without an int-to-float conversion: placed in the top 4 mantissa bits
// of 1.0 they read as v = 1 + q / 16, and sum(q x) = 16 (sum(v x) - sum(x)); the sums of the
// activations are needed for the minima anyway. Scales and minima (6 bits) go through the
// mantissa of 2^23 the same way.
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> wq4: array<vec4<u32>>;

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

fn k4_hsum(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// One nibble word `w` of a block with header `h` against its 32 activations (`l*`: the low
// nibbles' 16, `u*`: the high nibbles' 16, whose sums are `sl`, `su`).
fn k4_word(
    h: vec4<u32>, w: vec4<u32>, pp: u32,
    l0: vec4<f32>, l1: vec4<f32>, l2: vec4<f32>, l3: vec4<f32>,
    u0: vec4<f32>, u1: vec4<f32>, u2: vec4<f32>, u3: vec4<f32>,
    sl: f32, su: f32
) -> f32 {
    let s = k4_scales(h, pp);
    let dm = unpack2x16float(h.x);
    let vl = k4_lo(w.x) * l0 + k4_lo(w.y) * l1 + k4_lo(w.z) * l2 + k4_lo(w.w) * l3;
    let vu = k4_hi(w.x) * u0 + k4_hi(w.y) * u1 + k4_hi(w.z) * u2 + k4_hi(w.w) * u3;
    return 16.0 * dm.x * (s.x * (k4_hsum(vl) - sl) + s.y * (k4_hsum(vu) - su))
        - dm.y * (s.z * sl + s.w * su);
}

@compute @workgroup_size(64)
fn vec_q4k(
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
        let pp = q >> 1u;
        let h0 = wq4[wb0 + 9u * blk];
        let w0 = wq4[wb0 + 9u * blk + 1u + q];
        let h1 = wq4[wb1 + 9u * blk];
        let w1 = wq4[wb1 + 9u * blk + 1u + q];
        let xb = xo + 64u * blk + 16u * pp + 4u * (q & 1u);
        let l0 = x4[xb];
        let l1 = x4[xb + 1u];
        let l2 = x4[xb + 2u];
        let l3 = x4[xb + 3u];
        let u0 = x4[xb + 8u];
        let u1 = x4[xb + 9u];
        let u2 = x4[xb + 10u];
        let u3 = x4[xb + 11u];
        let sl = k4_hsum((l0 + l1) + (l2 + l3));
        let su = k4_hsum((u0 + u1) + (u2 + u3));
        acc0 = acc0 + k4_word(h0, w0, pp, l0, l1, l2, l3, u0, u1, u2, u3, sl, su);
        acc1 = acc1 + k4_word(h1, w1, pp, l0, l1, l2, l3, u0, u1, u2, u3, sl, su);
    }
    let s = seg_sum4_n(vec4<f32>(acc0, acc1, 0.0, 0.0), lid, 32u);
    if (t < 2u && r0 + t < p.rows) {
        a1[p.out_off + r0 + t] = s[t];
    }
}
