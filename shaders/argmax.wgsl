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

// Wide rows (a vocabulary of 200k) in two dispatches, so that one row is not one workgroup's
// serial walk: `chunk` gives each workgroup `CHUNK` values of a row (workgroup c + K r for
// chunk c of row r, K = p.chunks), four independent loads an invocation a step, and writes
// the chunk's best (value, index) to part[p.rows + 2 (K r + c)]; `merge` reduces a row's K
// pairs to its index at part[r]. Ties keep the lowest index at every stage.
const CHUNK: u32 = 1024u;

struct PC {
    x_off: u32,
    n: u32,
    rows: u32,
    chunks: u32,
}
@group(0) @binding(0) var<uniform> pc: PC;

fn am_take(v: f32, i: u32, n: u32, best: ptr<function, vec2<f32>>) {
    if (i < n && v > (*best).x) {
        *best = vec2<f32>(v, bitcast<f32>(i));
    }
}

@compute @workgroup_size(64)
fn chunk(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let g = flat_wg(wid, nwg);
    let r = g / pc.chunks;
    if (r >= pc.rows) {
        return;
    }
    let c0 = (g % pc.chunks) * CHUNK;
    let xo = pc.x_off + r * pc.n;
    let last = pc.n - 1u;
    var best = vec2<f32>(-3.4e38, bitcast<f32>(0xffffffffu));
    for (var k = 0u; k < CHUNK; k = k + 256u) {
        let i = c0 + k + lid;
        let v0 = a0[xo + min(i, last)];
        let v1 = a0[xo + min(i + 64u, last)];
        let v2 = a0[xo + min(i + 128u, last)];
        let v3 = a0[xo + min(i + 192u, last)];
        am_take(v0, i, pc.n, &best);
        am_take(v1, i + 64u, pc.n, &best);
        am_take(v2, i + 128u, pc.n, &best);
        am_take(v3, i + 192u, pc.n, &best);
    }
    let bi = wg_argmax(best.x, bitcast<u32>(best.y), lid);
    // Every invocation has the winning index; the one holding it writes its value.
    if (bitcast<u32>(best.y) == bi && bi != 0xffffffffu) {
        part[pc.rows + 2u * g] = best.x;
        part[pc.rows + 2u * g + 1u] = best.y;
    }
    if (lid == 0u && bi == 0xffffffffu) {
        part[pc.rows + 2u * g] = -3.4e38;
        part[pc.rows + 2u * g + 1u] = bitcast<f32>(0xffffffffu);
    }
}

@compute @workgroup_size(64)
fn merge(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let r = flat_wg(wid, nwg);
    if (r >= pc.rows) {
        return;
    }
    var bv = -3.4e38;
    var bi = 0xffffffffu;
    for (var c = lid; c < pc.chunks; c = c + 64u) {
        let o = pc.rows + 2u * (r * pc.chunks + c);
        let v = part[o];
        let i = bitcast<u32>(part[o + 1u]);
        if (i != 0xffffffffu && (v > bv || (v == bv && i < bi))) {
            bv = v;
            bi = i;
        }
    }
    let best = wg_argmax(bv, bi, lid);
    if (lid == 0u) {
        part[r] = bitcast<f32>(best);
    }
}
