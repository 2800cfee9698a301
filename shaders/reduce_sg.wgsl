// Workgroup reductions for 64-invocation workgroups using subgroup operations: one subgroup
// reduction, then the per-subgroup results through workgroup memory. Chosen only when the
// adapter reports one fixed subgroup size dividing 64; subgroups of a 1-D workgroup are taken
// to be consecutive runs of local_invocation_index (as on Metal and Vulkan drivers).
// Call from uniform control flow after `sg_init`.
var<workgroup> red: array<f32, 64>;
var<workgroup> red_i: array<u32, 64>;
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
