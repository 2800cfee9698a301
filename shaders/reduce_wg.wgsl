// Workgroup reductions for 64-invocation workgroups, in workgroup memory (no subgroups).
// Call from uniform control flow. `sg_init` is the no-op twin of the subgroup variant's.
var<workgroup> red: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;
var<workgroup> red4: array<vec4<f32>, 64>;

fn sg_init(size: u32, lane: u32) {}

fn wg_sum(v: f32, lid: u32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red[lid] = red[lid] + red[lid + s];
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

fn wg_max(v: f32, lid: u32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Index of the largest value (lowest index among ties); `i` is 0xffffffff for no candidate.
fn wg_argmax(v: f32, i: u32, lid: u32) -> u32 {
    red[lid] = v;
    red_i[lid] = i;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            let ov = red[lid + s];
            let oi = red_i[lid + s];
            if (ov > red[lid] || (ov == red[lid] && oi < red_i[lid])) {
                red[lid] = ov;
                red_i[lid] = oi;
            }
        }
        workgroupBarrier();
    }
    let r = red_i[0];
    workgroupBarrier();
    return r;
}

// Four sums at once (one set of barriers).
fn wg_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
    red4[lid] = v;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red4[lid] = red4[lid] + red4[lid + s];
        }
        workgroupBarrier();
    }
    let r = red4[0];
    workgroupBarrier();
    return r;
}

// Sums over aligned runs of `n` invocations (a power of two up to 64; one matmul row or row
// group each); every invocation of a run gets its run's total. `n` must be the same for the
// whole workgroup.
fn seg_sum4_n(v: vec4<f32>, lid: u32, n: u32) -> vec4<f32> {
    red4[lid] = v;
    workgroupBarrier();
    for (var s = n >> 1u; s > 0u; s = s >> 1u) {
        if ((lid & (n - 1u)) < s) {
            red4[lid] = red4[lid] + red4[lid + s];
        }
        workgroupBarrier();
    }
    let r = red4[lid & ~(n - 1u)];
    workgroupBarrier();
    return r;
}

// Sums over aligned runs of 16 invocations (one matmul row each).
fn seg_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
    return seg_sum4_n(v, lid, 16u);
}
