// Activations to int8 for the integer-dot matvecs (`vec_k8` in matvec_q4k_i8.wgsl).
//
// `q8`: eight invocations per 32-value block of one activation row of `cols` values (a
// multiple of 32) at a0[x_off], each taking four values; the block's maximum and its two
// half sums are reduced in workgroup memory. Block b becomes, in the scratch buffer `part`
// (as 16-byte words from q_off):
//   words q_off + 2b, +1      the 32 values as int8, round(x / d) with d = max|x| / 127,
//                             four to a u32, value k of the block at byte k % 4 of u32 k / 4;
//   word  q_off + 2n + b      (d, sum of values 0..16, sum of values 16..32, 0) as f32 bits,
// where n = cols / 32. The sums are of the f32 values, so the formats' minima (Q4_K's dmin
// terms) lose nothing to the rounding. (One invocation per block, looping over its 32
// values, took 11.8 µs a row of 6656 on the H200: BENCHMARKS.md, session 6.)
struct P {
    x_off: u32,  // a0: the activation row
    cols: u32,
    q_off: u32,  // part, in 16-byte words
}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(7) var<storage, read_write> pq4: array<vec4<u32>>;

var<workgroup> qred: array<vec4<f32>, 64>;

@compute @workgroup_size(64)
fn q8(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let n = p.cols / 32u;
    let b = flat_wg(wid, nwg) * 8u + lid / 8u;
    let k = lid % 8u;
    let live = b < n;
    let x0 = p.x_off + 32u * min(b, n - 1u) + 4u * k;
    let v = vec4<f32>(a0[x0], a0[x0 + 1u], a0[x0 + 2u], a0[x0 + 3u]);
    let av = abs(v);
    let s = (v.x + v.y) + (v.z + v.w);
    qred[lid] = vec4<f32>(max(max(av.x, av.y), max(av.z, av.w)), select(0.0, s, k < 4u), select(s, 0.0, k < 4u), 0.0);
    workgroupBarrier();
    for (var st = 4u; st > 0u; st = st >> 1u) {
        if (k < st) {
            let o = qred[lid + st];
            let m = qred[lid];
            qred[lid] = vec4<f32>(max(m.x, o.x), m.y + o.y, m.z + o.z, 0.0);
        }
        workgroupBarrier();
    }
    let r = qred[lid - k];
    let amax = r.x;
    let id = select(0.0, 127.0 / amax, amax > 0.0);
    let q = bitcast<vec4<u32>>(clamp(vec4<i32>(round(v * id)), vec4<i32>(-127), vec4<i32>(127)))
        & vec4<u32>(0xffu);
    if (live) {
        pq4[p.q_off + 2u * b + k / 4u][k % 4u] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
        if (k == 0u) {
            pq4[p.q_off + 2u * n + b] = bitcast<vec4<u32>>(vec4<f32>(amax / 127.0, r.y, r.z, 0.0));
        }
    }
}
