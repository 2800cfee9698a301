// Workgroup reductions for 64-invocation workgroups using subgroup operations: one subgroup
// reduction, then the per-subgroup results through workgroup memory. Chosen only when the
// adapter reports one fixed subgroup size dividing 64; subgroups of a 1-D workgroup are taken
// to be consecutive runs of local_invocation_index (as on Metal and Vulkan drivers).
// Call from uniform control flow after `sg_init`.
var<workgroup> red: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;
var<workgroup> red4: array<vec4<f32>, 64>;
var<private> sg_size: u32;
var<private> sg_lane: u32;

fn sg_init(size: u32, lane: u32) {
    sg_size = size;
    sg_lane = lane;
}

fn wg_sum(v: f32, lid: u32) -> f32 {
    let s = subgroupAdd(v);
    if (sg_lane == 0u) {
        red[lid / sg_size] = s;
    }
    workgroupBarrier();
    var t = 0.0;
    for (var k = 0u; k < 64u / sg_size; k = k + 1u) {
        t = t + red[k];
    }
    workgroupBarrier();
    return t;
}

fn wg_max(v: f32, lid: u32) -> f32 {
    let s = subgroupMax(v);
    if (sg_lane == 0u) {
        red[lid / sg_size] = s;
    }
    workgroupBarrier();
    var t = red[0];
    for (var k = 1u; k < 64u / sg_size; k = k + 1u) {
        t = max(t, red[k]);
    }
    workgroupBarrier();
    return t;
}

fn wg_argmax(v: f32, i: u32, lid: u32) -> u32 {
    let m = subgroupMax(v);
    let c = subgroupMin(select(0xffffffffu, i, v == m));
    if (sg_lane == 0u) {
        red[lid / sg_size] = m;
        red_i[lid / sg_size] = c;
    }
    workgroupBarrier();
    var bv = red[0];
    var bi = red_i[0];
    for (var k = 1u; k < 64u / sg_size; k = k + 1u) {
        if (red[k] > bv || (red[k] == bv && red_i[k] < bi)) {
            bv = red[k];
            bi = red_i[k];
        }
    }
    workgroupBarrier();
    return bi;
}

// Four sums at once (one set of barriers).
fn wg_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
    let s = subgroupAdd(v);
    if (sg_lane == 0u) {
        red4[lid / sg_size] = s;
    }
    workgroupBarrier();
    var t = vec4<f32>(0.0);
    for (var k = 0u; k < 64u / sg_size; k = k + 1u) {
        t = t + red4[k];
    }
    workgroupBarrier();
    return t;
}

// Sums over aligned runs of `n` invocations (a power of two up to 64; one matmul row or row
// group each), every invocation of a run getting its run's total: a butterfly of subgroup
// shuffles within runs of min(n, subgroup size), then the run totals through workgroup
// memory when subgroups are narrower than `n`. `n` must be the same for the whole workgroup.
fn seg_sum4_n(v: vec4<f32>, lid: u32, n: u32) -> vec4<f32> {
    var t = v;
    let w = min(n, sg_size);
    for (var m = 1u; m < w; m = m << 1u) {
        t = t + subgroupShuffleXor(t, m);
    }
    red4[lid] = t;
    workgroupBarrier();
    var s = vec4<f32>(0.0);
    for (var k = 0u; k < n; k = k + w) {
        s = s + red4[(lid & ~(n - 1u)) + k];
    }
    workgroupBarrier();
    return s;
}

// Sums over aligned runs of 16 invocations (one matmul row each).
fn seg_sum4(v: vec4<f32>, lid: u32) -> vec4<f32> {
    return seg_sum4_n(v, lid, 16u);
}
