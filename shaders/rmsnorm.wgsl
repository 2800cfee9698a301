// Row-wise RMSNorm: out = x / sqrt(mean(x^2) + eps) * w (no weight: scale 1). In place
// when x and out are the same region. One workgroup per row. Needs a reduce_*.wgsl.
struct P {
    x_off: u32,  // a0
    out_off: u32, // a1
    dim: u32,
    rows: u32,
    w_base: u32, // byte offset of the f32 weight in the pool
    has_w: u32,
    eps: f32,
}
@group(0) @binding(0) var<uniform> p: P;

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg);
    if (r >= p.rows) {
        return;
    }
    let xo = p.x_off + r * p.dim;
    var ss = 0.0;
    for (var i = lid; i < p.dim; i = i + 64u) {
        let v = a0[xo + i];
        ss = ss + v * v;
    }
    let total = wg_sum(ss, lid);
    let scale = 1.0 / sqrt(total / f32(p.dim) + p.eps);
    let oo = p.out_off + r * p.dim;
    for (var i = lid; i < p.dim; i = i + 64u) {
        var y = a0[xo + i] * scale;
        if (p.has_w != 0u) {
            y = y * bitcast<f32>(wq[(p.w_base >> 2u) + i]);
        }
        a1[oo + i] = y;
    }
}
