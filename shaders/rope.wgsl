// Rotary position embedding in place, both GGML styles. One invocation per rotated pair.
// The angle of pair i is pos * theta_scale^i, built by repeated multiplication in f32 as the
// CPU reference does (theta_scale = base^(-2/rope_dim), computed on the host).
struct P {
    x_off: u32,     // a0: (rows, n_heads, head_dim)
    n_heads: u32,
    head_dim: u32,
    rope_dim: u32,
    rows: u32,
    pos_off: u32,   // host: positions
    neox: u32,      // 0: pairs (2i, 2i+1); 1: pairs (i, i + rope_dim/2)
    theta_scale: f32,
}
@group(0) @binding(0) var<uniform> p: P;

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let g = flat_wg(wid, nwg) * 64u + lid;
    let hr = p.rope_dim / 2u;
    if (g >= p.rows * p.n_heads * hr) {
        return;
    }
    let i = g % hr;
    let head = g / hr;
    let row = head / p.n_heads;
    var theta = f32(host[p.pos_off + row]);
    for (var k = 0u; k < i; k = k + 1u) {
        theta = theta * p.theta_scale;
    }
    // Reduce to [-pi, pi] first (GPU sin/cos are only accurate there): 2 pi = HI + LO with
    // HI = 201/32 exact in 8 bits, so k * HI is exact for k < 2^16.
    let k = round(theta * 0.15915494);
    let r = (theta - k * 6.28125) - k * 0.0019353071795864769;
    let s = sin(r);
    let c = cos(r);
    let base = p.x_off + head * p.head_dim;
    var ia = base + 2u * i;
    var ib = ia + 1u;
    if (p.neox != 0u) {
        ia = base + i;
        ib = ia + hr;
    }
    let x0 = a0[ia];
    let x1 = a0[ib];
    a0[ia] = x0 * c - x1 * s;
    a0[ib] = x0 * s + x1 * c;
}
