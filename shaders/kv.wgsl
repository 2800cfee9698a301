// KV store: writes the keys and values of `rows` tokens into one layer's cache.
//
// A layer's cache is one buffer of u32 words: keys (cap, kw) then values (cap, vw), where a row
// of width d takes d/2 words as packed f16 pairs, or d words of f32 bits. Position `pos` lives
// in slot pos % cap (a ring for sliding-window layers, linear for global ones).
// One invocation per stored word.
struct P {
    k_off: u32, // a0: (rows, kd)
    v_off: u32, // a1: (rows, vd)
    kd: u32,
    vd: u32,
    rows: u32,
    pos_off: u32, // host: positions
    cap: u32,
    f16: u32,
}
@group(0) @binding(0) var<uniform> p: P;

fn store(src_is_k: bool, src: u32, dst: u32) {
    if (p.f16 != 0u) {
        var v = vec2<f32>(0.0, 0.0);
        if (src_is_k) {
            v = vec2<f32>(a0[src], a0[src + 1u]);
        } else {
            v = vec2<f32>(a1[src], a1[src + 1u]);
        }
        kv[dst] = pack2x16float(v);
    } else {
        if (src_is_k) {
            kv[dst] = bitcast<u32>(a0[src]);
        } else {
            kv[dst] = bitcast<u32>(a1[src]);
        }
    }
}

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let g = flat_wg(wid, nwg) * 64u + lid;
    let per = select(1u, 2u, p.f16 != 0u); // elements per word
    let kw = p.kd / per;
    let vw = p.vd / per;
    if (g >= p.rows * (kw + vw)) {
        return;
    }
    let row = g / (kw + vw);
    let w = g % (kw + vw);
    let slot = host[p.pos_off + row] % p.cap;
    if (w < kw) {
        store(true, p.k_off + row * p.kd + w * per, slot * kw + w);
    } else {
        let wv = w - kw;
        store(false, p.v_off + row * p.vd + wv * per, p.cap * kw + slot * vw + wv);
    }
}
