// Quantized matvec / small-batch matmul: out[b][r] = W[r] · x[b] for a piece of W's rows.
// Needs quant.wgsl (with the format's `deq_unit`) and a reduce_*.wgsl.
//
// A 64-invocation workgroup computes RPW = 4 output rows, 16 invocations each, for a group of
// NB = 4 activation rows (z). Each invocation dequantizes units of 32 weights (u = lane,
// lane + 16, ...) once and dots them with the NB activation rows; each run of 16 then sums
// its NB partial dots in one segmented reduction. (Rows of 576-2048 weights are 18-64 units,
// so 16 invocations a row keep most of them busy.) One activation row (decode) takes the
// `vec` entry below instead.
struct P {
    rows: u32,       // weight rows in this piece
    cols: u32,       // elements per row (a multiple of 32)
    row_bytes: u32,  // bytes per row
    w_base: u32,     // byte offset of the piece's first row in the pool
    x_off: u32,      // a0: activations (batch, cols)
    out_off: u32,    // a1: element of out[0][first row of the piece]
    out_stride: u32, // elements between activation rows of out (W's total rows)
    batch: u32,      // activation rows
}
@group(0) @binding(0) var<uniform> p: P;

const NB: u32 = 4u;
const TPR: u32 = 16u;
const RPW: u32 = 4u;

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg) * RPW + lid / TPR;
    let lane = lid % TPR;
    let b0 = wid.z * NB;
    let units = p.cols / 32u;
    var acc = vec4<f32>(0.0);
    if (r < p.rows) {
        let rb = p.w_base + r * p.row_bytes;
        for (var u = lane; u < units; u = u + TPR) {
            deq_unit(rb, u);
            for (var b = 0u; b < NB; b = b + 1u) {
                if (b0 + b < p.batch) {
                    let xo = p.x_off + (b0 + b) * p.cols + u * 32u;
                    var s = 0.0;
                    for (var i = 0u; i < 32u; i = i + 1u) {
                        s = s + dq[i] * a0[xo + i];
                    }
                    acc[b] = acc[b] + s;
                }
            }
        }
    }
    let t = seg_sum4(acc, lid);
    if (r < p.rows && lane < NB && b0 + lane < p.batch) {
        a1[p.out_off + (b0 + lane) * p.out_stride + r] = t[lane];
    }
}

// The 64 invocations of a workgroup copy activations `c0 .. c0 + n` of the (one) activation
// row into `xs`, as 16-byte words; the caller puts the barrier after it.
fn stage_x(lid: u32, c0: u32, n: u32) {
    for (var i = lid; i < n / 4u; i = i + 64u) {
        let o = p.x_off + c0 + 4u * i;
        xs[i] = vec4<f32>(a0[o], a0[o + 1u], a0[o + 2u], a0[o + 3u]);
    }
}

// One activation row (decode): the same 4 rows × 16 invocations a workgroup. The row of
// activations goes through workgroup memory `XS_CHUNK` values at a time (all 64 invocations
// load a chunk, then each dots its units of the chunk with `dot_unit`, which dequantizes and
// multiplies in one pass), so it is read from the arena once per workgroup, not once per
// weight row; then one segmented reduction.
@compute @workgroup_size(64)
fn vec(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg) * RPW + lid / TPR;
    let lane = lid % TPR;
    let units = p.cols / 32u;
    var s = 0.0;
    let rb = p.w_base + min(r, p.rows - 1u) * p.row_bytes;
    for (var c0 = 0u; c0 < p.cols; c0 = c0 + XS_CHUNK) {
        let n = min(XS_CHUNK, p.cols - c0);
        stage_x(lid, c0, n);
        workgroupBarrier();
        if (r < p.rows) {
            for (var u = lane; u < n / 32u; u = u + TPR) {
                s = s + dot_unit(rb, c0 / 32u + u, u * 32u);
            }
        }
        workgroupBarrier();
    }
    let t = seg_sum4(vec4<f32>(s, 0.0, 0.0, 0.0), lid);
    if (r < p.rows && lane == 0u) {
        a1[p.out_off + r] = t[0];
    }
}

// One weight row per invocation, LANE_ROWS rows a workgroup: the layout for CPU adapters
// (lavapipe), where invocations are the SIMD lanes of one core and every workgroup costs a
// fixed setup (tens of µs) that 4-row workgroups pay 16 times as often. Each invocation
// dequantizes its row's units once and dots them with the NB activation rows of group z; no
// reduction across invocations.
const LANE_ROWS: u32 = 64u;

// The activations as 16-byte words (binding 2, which common.wgsl declares as `a0`; an entry
// point uses one of the two). `main_rows` reads them through it, four values a load, so it
// takes activations that start on a 4-value boundary (others take `main`).
@group(0) @binding(2) var<storage, read_write> a0v: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg) * LANE_ROWS + lid;
    if (r >= p.rows) {
        return;
    }
    let b0 = wid.z * NB;
    let nb = min(NB, p.batch - b0);
    let rb = p.w_base + r * p.row_bytes;
    var acc = vec4<f32>(0.0);
    for (var u = 0u; u < p.cols / 32u; u = u + 1u) {
        deq_unit(rb, u);
        for (var b = 0u; b < nb; b = b + 1u) {
            let xo = (p.x_off + (b0 + b) * p.cols + u * 32u) >> 2u;
            var s = vec4<f32>(0.0);
            for (var i = 0u; i < 8u; i = i + 1u) {
                let d = vec4<f32>(dq[4u * i], dq[4u * i + 1u], dq[4u * i + 2u], dq[4u * i + 3u]);
                s = s + d * a0v[xo + i];
            }
            acc[b] = acc[b] + hsum4(s);
        }
    }
    for (var b = 0u; b < nb; b = b + 1u) {
        a1[p.out_off + (b0 + b) * p.out_stride + r] = acc[b];
    }
}

// One activation row on the CPU-adapter layout: the row goes through workgroup memory as in
// `vec`, and each invocation dots its whole weight row with `dot_unit`.
@compute @workgroup_size(64)
fn vec_rows(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg) * LANE_ROWS + lid;
    let rb = p.w_base + min(r, p.rows - 1u) * p.row_bytes;
    var s = 0.0;
    for (var c0 = 0u; c0 < p.cols; c0 = c0 + XS_CHUNK) {
        let n = min(XS_CHUNK, p.cols - c0);
        stage_x(lid, c0, n);
        workgroupBarrier();
        for (var u = 0u; u < n / 32u; u = u + 1u) {
            s = s + dot_unit(rb, c0 / 32u + u, u * 32u);
        }
        workgroupBarrier();
    }
    if (r < p.rows) {
        a1[p.out_off + r] = s;
    }
}
