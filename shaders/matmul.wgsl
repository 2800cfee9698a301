// Quantized matvec / small-batch matmul: out[b][r] = W[r] · x[b] for a piece of W's rows.
// Needs quant.wgsl (with the format's `deq_unit`) and a reduce_*.wgsl.
//
// A 64-invocation workgroup computes RPW = 4 output rows, 16 invocations each, for a group of
// NB = 4 activation rows (z). Each invocation dequantizes units of 32 weights (u = lane,
// lane + 16, ...) once and dots them with the NB activation rows; each run of 16 then sums
// its NB partial dots in one segmented reduction. (Rows of 576-2048 weights are 18-64 units,
// so 16 invocations a row keep most of them busy.)
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
