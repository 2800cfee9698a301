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
    // Four independent loads an iteration: one row is one workgroup, so a loop of single
    // loads would wait out the memory latency once per 64 values (a 6656-wide row took
    // about 53 µs on an H200 that way).
    let n4 = p.dim / 4u;
    var ss = vec4<f32>(0.0);
    for (var i = lid; i < n4; i = i + 64u) {
        let o = xo + 4u * i;
        let v = vec4<f32>(a0[o], a0[o + 1u], a0[o + 2u], a0[o + 3u]);
        ss = ss + v * v;
    }
    var tail = 0.0;
    for (var i = 4u * n4 + lid; i < p.dim; i = i + 64u) {
        let v = a0[xo + i];
        tail = tail + v * v;
    }
    let total = wg_sum((ss.x + ss.y) + (ss.z + ss.w) + tail, lid);
    let scale = 1.0 / sqrt(total / f32(p.dim) + p.eps);
    let oo = p.out_off + r * p.dim;
    let wb = p.w_base >> 2u;
    for (var i = lid; i < n4; i = i + 64u) {
        let o = 4u * i;
        var y = vec4<f32>(a0[xo + o], a0[xo + o + 1u], a0[xo + o + 2u], a0[xo + o + 3u]) * scale;
        if (p.has_w != 0u) {
            y = y * vec4<f32>(bitcast<f32>(wq[wb + o]), bitcast<f32>(wq[wb + o + 1u]),
                bitcast<f32>(wq[wb + o + 2u]), bitcast<f32>(wq[wb + o + 3u]));
        }
        a1[oo + o] = y.x;
        a1[oo + o + 1u] = y.y;
        a1[oo + o + 2u] = y.z;
        a1[oo + o + 3u] = y.w;
    }
    for (var i = 4u * n4 + lid; i < p.dim; i = i + 64u) {
        var y = a0[xo + i] * scale;
        if (p.has_w != 0u) {
            y = y * bitcast<f32>(wq[wb + i]);
        }
        a1[oo + i] = y;
    }
}

// The same for rows of a multiple of 4 values starting at multiples of 4 (x, out and the
// weight), as 16-byte words, by 256 invocations: each step of the loops takes four
// independent words an invocation (4096 values a workgroup), so a 6656-wide decode row is 2
// steps a pass (one row is one workgroup, so a row's time is its chain of dependent loads).
// The sum of squares is reduced through workgroup memory, with no subgroup operations.
@group(0) @binding(2) var<storage, read_write> x4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> o4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> w4: array<vec4<f32>>;
var<workgroup> rs: array<f32, 256>;

fn rms_w4(i: u32) -> vec4<f32> {
    if (p.has_w != 0u) {
        return w4[(p.w_base >> 4u) + i];
    }
    return vec4<f32>(1.0);
}

@compute @workgroup_size(256)
fn main4(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let r = flat_wg(wid, nwg);
    if (r >= p.rows) {
        return;
    }
    let n4 = p.dim / 4u;
    let xo = (p.x_off + r * p.dim) / 4u;
    let oo = (p.out_off + r * p.dim) / 4u;
    var ss = vec4<f32>(0.0);
    for (var i = lid; i < n4; i = i + 1024u) {
        let a = x4[xo + i];
        let b = x4[xo + min(i + 256u, n4 - 1u)];
        let c = x4[xo + min(i + 512u, n4 - 1u)];
        let d = x4[xo + min(i + 768u, n4 - 1u)];
        ss = ss + a * a;
        ss = ss + select(vec4<f32>(0.0), b * b, i + 256u < n4);
        ss = ss + select(vec4<f32>(0.0), c * c, i + 512u < n4);
        ss = ss + select(vec4<f32>(0.0), d * d, i + 768u < n4);
    }
    rs[lid] = (ss.x + ss.y) + (ss.z + ss.w);
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            rs[lid] = rs[lid] + rs[lid + s];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(rs[0] / f32(p.dim) + p.eps);
    for (var i = lid; i < n4; i = i + 1024u) {
        let ib = min(i + 256u, n4 - 1u);
        let ic = min(i + 512u, n4 - 1u);
        let id = min(i + 768u, n4 - 1u);
        let a = x4[xo + i] * scale * rms_w4(i);
        let b = x4[xo + ib] * scale * rms_w4(ib);
        let c = x4[xo + ic] * scale * rms_w4(ic);
        let d = x4[xo + id] * scale * rms_w4(id);
        o4[oo + i] = a;
        if (i + 256u < n4) {
            o4[oo + ib] = b;
        }
        if (i + 512u < n4) {
            o4[oo + ic] = c;
        }
        if (i + 768u < n4) {
            o4[oo + id] = d;
        }
    }
}
