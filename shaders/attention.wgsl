// Decode/prefill attention over one layer of the hybrid KV cache (see kv.wgsl), split-K.
//
// `partial`: one workgroup per (row, head, split). A split is a run of at most SPLIT keys of
// the positions visible to the row's query (the last `window` ones for a sliding layer, all
// up to its own position otherwise). It writes the split's running max m, the sum l of
// exp(score - m), and the unnormalised output sum exp(score - m) v into `part`.
// `combine`: one workgroup per (row, head) merges the splits and writes the output row.
// With an f16 cache the query is rounded to f16 first, as llama.cpp does.
// Needs a reduce_*.wgsl.
struct P {
    q_off: u32,     // a0: (rows, n_head, hd), rows from row0
    out_off: u32,   // a1: (rows, n_head, hdv)
    rows: u32,      // rows in this group
    row0: u32,      // first row of the group (positions index)
    n_head: u32,
    group: u32,     // query heads per KV head
    hd: u32,
    hdv: u32,
    window: u32,    // 0: none
    pos_off: u32,   // host: positions
    cap: u32,       // slots of this layer
    f16: u32,
    n_split: u32,
    split_len: u32,
    scale: f32,
}
@group(0) @binding(0) var<uniform> p: P;

const SPLIT: u32 = 256u;
var<workgroup> qs: array<vec4<f32>, 128>;
// The cache as 16-byte words (binding 6, which common.wgsl declares as `kv`; this module
// reads it only through `kv4`, as an entry point may use one of the two). f16 keys with heads
// of a multiple of 8 values are read eight values a load (a key row then starts 16-byte
// aligned); everything else a word at a time through `kvw`. Cache buffers are sized in
// whole 16-byte words.
@group(0) @binding(6) var<storage, read_write> kv4: array<vec4<u32>>;

fn kvw(w: u32) -> u32 {
    return kv4[w >> 2u][w & 3u];
}
var<workgroup> sc: array<f32, SPLIT>;

fn key(slot: u32, kvh: u32, d: u32) -> f32 {
    let e = slot * p.hd * (p.n_head / p.group) + kvh * p.hd + d;
    if (p.f16 != 0u) {
        let v = unpack2x16float(kvw(e >> 1u));
        return select(v.x, v.y, (e & 1u) != 0u);
    }
    return bitcast<f32>(kvw(e));
}

fn value(slot: u32, kvh: u32, d: u32) -> f32 {
    let n_kv = p.n_head / p.group;
    let kwords = select(p.hd * n_kv, p.hd * n_kv / 2u, p.f16 != 0u);
    let e = slot * p.hdv * n_kv + kvh * p.hdv + d;
    if (p.f16 != 0u) {
        let v = unpack2x16float(kvw(p.cap * kwords + (e >> 1u)));
        return select(v.x, v.y, (e & 1u) != 0u);
    }
    return bitcast<f32>(kvw(p.cap * kwords + e));
}

// q . key for an f16 cache and hd % 8 == 0, eight values a load.
fn key_dot8(slot: u32, kvh: u32) -> f32 {
    let e = (slot * p.hd * (p.n_head / p.group) + kvh * p.hd) / 8u;
    var acc = vec4<f32>(0.0);
    for (var d8 = 0u; d8 < p.hd / 8u; d8 = d8 + 1u) {
        let w = kv4[e + d8];
        let k0 = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
        let k1 = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
        acc = acc + k0 * qs[2u * d8] + k1 * qs[2u * d8 + 1u];
    }
    return (acc.x + acc.y) + (acc.z + acc.w);
}

fn part_base(row: u32, h: u32, s: u32) -> u32 {
    return ((row * p.n_head + h) * p.n_split + s) * (p.hdv + 2u);
}

@compute @workgroup_size(64)
fn partial(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32> SG_ARGS
) {
    SG_INIT
    let id = flat_wg(wid, nwg);
    if (id >= p.rows * p.n_head * p.n_split) {
        return;
    }
    let s = id % p.n_split;
    let h = (id / p.n_split) % p.n_head;
    let row = id / (p.n_split * p.n_head);
    let kvh = h / p.group;
    let pos = host[p.pos_off + p.row0 + row];
    var first = 0u;
    if (p.window != 0u && pos + 1u > p.window) {
        first = pos + 1u - p.window;
    }
    let start = first + s * p.split_len;
    let end = min(start + p.split_len, pos + 1u);
    var n = 0u;
    if (end > start) {
        n = end - start;
    }
    let qo = p.q_off + (row * p.n_head + h) * p.hd;
    for (var d = lid; d < p.hd; d = d + 64u) {
        var q = a0[qo + d];
        if (p.f16 != 0u) {
            q = round_f16(q);
        }
        qs[d >> 2u][d & 3u] = q;
    }
    workgroupBarrier();
    var m = -3.0e38;
    for (var j = lid; j < n; j = j + 64u) {
        let slot = (start + j) % p.cap;
        var dot = 0.0;
        if (p.f16 != 0u && p.hd % 8u == 0u) {
            dot = key_dot8(slot, kvh);
        } else {
            for (var d = 0u; d < p.hd; d = d + 1u) {
                dot = dot + qs[d >> 2u][d & 3u] * key(slot, kvh, d);
            }
        }
        let v = dot * p.scale;
        sc[j] = v;
        m = max(m, v);
    }
    m = wg_max(m, lid);
    var l = 0.0;
    for (var j = lid; j < n; j = j + 64u) {
        let e = exp(sc[j] - m);
        sc[j] = e;
        l = l + e;
    }
    l = wg_sum(l, lid);
    let base = part_base(row, h, s);
    let n_kv = p.n_head / p.group;
    if (p.f16 != 0u && p.hdv % 8u == 0u && (p.hd * n_kv) % 8u == 0u) {
        values8(lid, start, n, kvh, base);
    } else {
        values1(lid, start, n, kvh, base);
    }
    if (lid == 0u) {
        part[base + p.hdv] = m;
        part[base + p.hdv + 1u] = l;
    }
}

// The weighted value sum of a split for an f16 cache with hdv % 8 == 0: value rows then start
// 16-byte aligned, and G = hdv / 8 invocations cover one row, eight values a load. The 64
// invocations take 64 / G keys at a time (each invocation every (64 / G)-th key, two keys a
// step so that two loads are in flight), and the key lanes are summed through workgroup
// memory. One invocation per value and key, as `values1` does, left 32-bit loads in a long
// dependent chain: the split took 62 µs at 48 keys (BENCHMARKS.md, session 6).
var<workgroup> vo: array<vec4<f32>, 128>;

fn values8(lid: u32, start: u32, n: u32, kvh: u32, base: u32) {
    let g = p.hdv / 8u;
    let lanes = max(64u / g, 1u);
    let c = lid % g;
    let kl = lid / g;
    let n_kv = p.n_head / p.group;
    // 16-byte word of the first value row, and words per cache slot.
    let v0 = (p.cap * p.hd * n_kv / 2u) / 4u + kvh * g + c;
    let stride = p.hdv * n_kv / 8u;
    var oa = vec4<f32>(0.0);
    var ob = vec4<f32>(0.0);
    if (kl < lanes) {
        var j = kl;
        for (; j + lanes < n; j = j + 2u * lanes) {
            let w0 = kv4[v0 + ((start + j) % p.cap) * stride];
            let w1 = kv4[v0 + ((start + j + lanes) % p.cap) * stride];
            let s0 = sc[j];
            let s1 = sc[j + lanes];
            oa = oa + s0 * vec4<f32>(unpack2x16float(w0.x), unpack2x16float(w0.y))
                + s1 * vec4<f32>(unpack2x16float(w1.x), unpack2x16float(w1.y));
            ob = ob + s0 * vec4<f32>(unpack2x16float(w0.z), unpack2x16float(w0.w))
                + s1 * vec4<f32>(unpack2x16float(w1.z), unpack2x16float(w1.w));
        }
        if (j < n) {
            let w0 = kv4[v0 + ((start + j) % p.cap) * stride];
            let s0 = sc[j];
            oa = oa + s0 * vec4<f32>(unpack2x16float(w0.x), unpack2x16float(w0.y));
            ob = ob + s0 * vec4<f32>(unpack2x16float(w0.z), unpack2x16float(w0.w));
        }
    }
    vo[2u * lid] = oa;
    vo[2u * lid + 1u] = ob;
    workgroupBarrier();
    if (lid < g) {
        var ta = vec4<f32>(0.0);
        var tb = vec4<f32>(0.0);
        for (var k = 0u; k < lanes; k = k + 1u) {
            ta = ta + vo[2u * (k * g + lid)];
            tb = tb + vo[2u * (k * g + lid) + 1u];
        }
        let o = base + 8u * lid;
        part[o] = ta.x;
        part[o + 1u] = ta.y;
        part[o + 2u] = ta.z;
        part[o + 3u] = ta.w;
        part[o + 4u] = tb.x;
        part[o + 5u] = tb.y;
        part[o + 6u] = tb.z;
        part[o + 7u] = tb.w;
    }
}

// The weighted value sum of a split, one invocation per value (any cache type and width).
fn values1(lid: u32, start: u32, n: u32, kvh: u32, base: u32) {
    for (var d = lid; d < p.hdv; d = d + 64u) {
        // Four keys a step: four independent loads in flight.
        var o = 0.0;
        var j = 0u;
        for (; j + 4u <= n; j = j + 4u) {
            let v0 = value((start + j) % p.cap, kvh, d);
            let v1 = value((start + j + 1u) % p.cap, kvh, d);
            let v2 = value((start + j + 2u) % p.cap, kvh, d);
            let v3 = value((start + j + 3u) % p.cap, kvh, d);
            o = o + ((sc[j] * v0 + sc[j + 1u] * v1) + (sc[j + 2u] * v2 + sc[j + 3u] * v3));
        }
        for (; j < n; j = j + 1u) {
            o = o + sc[j] * value((start + j) % p.cap, kvh, d);
        }
        part[base + d] = o;
    }
}

@compute @workgroup_size(64)
fn combine(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let id = flat_wg(wid, nwg);
    if (id >= p.rows * p.n_head) {
        return;
    }
    let h = id % p.n_head;
    let row = id / p.n_head;
    var mx = -3.0e38;
    for (var s = 0u; s < p.n_split; s = s + 1u) {
        mx = max(mx, part[part_base(row, h, s) + p.hdv]);
    }
    var l = 0.0;
    for (var s = 0u; s < p.n_split; s = s + 1u) {
        let b = part_base(row, h, s);
        l = l + part[b + p.hdv + 1u] * exp(part[b + p.hdv] - mx);
    }
    let oo = p.out_off + (row * p.n_head + h) * p.hdv;
    for (var d = lid; d < p.hdv; d = d + 64u) {
        var o = 0.0;
        for (var s = 0u; s < p.n_split; s = s + 1u) {
            let b = part_base(row, h, s);
            o = o + part[b + d] * exp(part[b + p.hdv] - mx);
        }
        a1[oo + d] = o / l;
    }
}
