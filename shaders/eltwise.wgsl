// Element-wise ops on n elements, one invocation each: add, scale, softcap, sigmoid_mul, and
// the gated activations (SiLU, GELU-tanh with llama.cpp's f16 rounding).
struct P {
    x_off: u32, // a0
    y_off: u32, // a1
    n: u32,
    f0: f32,
    f1: f32,
}
@group(0) @binding(0) var<uniform> p: P;

fn idx(lid: u32, wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return flat_wg(wid, nwg) * 64u + lid;
}

// x += y
@compute @workgroup_size(64)
fn add(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
       @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        a0[p.x_off + i] = a0[p.x_off + i] + a1[p.y_off + i];
    }
}

// x *= f0
@compute @workgroup_size(64)
fn scale(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        a0[p.x_off + i] = a0[p.x_off + i] * p.f0;
    }
}

// x = cap * tanh(x * scale / cap), cap = f0, scale = f1
@compute @workgroup_size(64)
fn softcap(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        a0[p.x_off + i] = p.f0 * tanh_s(a0[p.x_off + i] * p.f1 / p.f0);
    }
}

// x *= sigmoid(gate)
@compute @workgroup_size(64)
fn sigmoid_mul(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        a0[p.x_off + i] = a0[p.x_off + i] * (1.0 / (1.0 + exp(-a1[p.y_off + i])));
    }
}

// gate = silu(gate) * up
@compute @workgroup_size(64)
fn silu_mul(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        let g = a0[p.x_off + i];
        a0[p.x_off + i] = g / (1.0 + exp(-g)) * a1[p.y_off + i];
    }
}

// gate = gelu_tanh(gate) * up, the GELU evaluated on the input rounded to f16 and its result
// rounded to f16, as llama.cpp's CPU table does.
@compute @workgroup_size(64)
fn gelu_mul(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = idx(lid, wid, nwg);
    if (i < p.n) {
        let x = a0[p.x_off + i];
        var g = x;
        if (x <= -10.0) {
            g = 0.0;
        } else if (x < 10.0) {
            let xh = round_f16(x);
            g = round_f16(0.5 * xh * (1.0 + tanh_s(0.7978846 * xh * (1.0 + 0.044715 * xh * xh))));
        }
        a0[p.x_off + i] = g * a1[p.y_off + i];
    }
}
