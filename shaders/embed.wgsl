// Embedding rows: out[t] = dequant(table[tokens[t]]) for the tokens whose row lies in this
// piece of the table. Needs quant.wgsl with the table format's `deq_unit`.
// One workgroup per token; invocations take units of 32 elements.
struct P {
    row0: u32,      // first table row in this piece
    rows: u32,      // table rows in this piece
    row_bytes: u32,
    w_base: u32,    // byte offset of the piece in the pool
    cols: u32,
    n_tok: u32,
    tok_off: u32,   // host: token ids
    out_off: u32,   // a0: (n_tok, cols)
}
@group(0) @binding(0) var<uniform> p: P;

@compute @workgroup_size(64)
fn main(
    @builtin(local_invocation_index) lid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>
) {
    let t = flat_wg(wid, nwg);
    if (t >= p.n_tok) {
        return;
    }
    let tok = host[p.tok_off + t];
    if (tok < p.row0 || tok - p.row0 >= p.rows) {
        return;
    }
    let rb = p.w_base + (tok - p.row0) * p.row_bytes;
    for (var u = lid; u < p.cols / 32u; u = u + 64u) {
        deq_unit(rb, u);
        for (var i = 0u; i < 32u; i = i + 1u) {
            a0[p.out_off + t * p.cols + u * 32u + i] = dq[i];
        }
    }
}
