// Row-wise argmax (lowest index among equal maxima): one workgroup per row; the index is
// written to part[row] as u32 bits. Needs a reduce_*.wgsl.
struct P {
    x_off: u32, // a0: (rows, n)
    n: u32,
    rows: u32,
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
    var bv = -3.4e38;
    var bi = 0xffffffffu;
    for (var i = lid; i < p.n; i = i + 64u) {
        let v = a0[p.x_off + r * p.n + i];
        if (v > bv) {
            bv = v;
            bi = i;
        }
    }
    let best = wg_argmax(bv, bi, lid);
    if (lid == 0u) {
        part[r] = bitcast<f32>(best);
    }
}
