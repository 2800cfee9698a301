// Shared by the int8-activation matvecs (`vec_k8` in matvec_q4k_i8.wgsl and
// matvec_q6k_i8.wgsl), appended before either: the int8 activation row that `q8`
// (quantize.wgsl) left in `part`, and the dot of one 16-byte weight word with 16 int8 values.
//
// The row's layout, in 16-byte words from p.x_off: per 32 values two words of int8, then
// (cols / 32 of them) one word of (d, sum of values 0..16, sum of values 16..32, 0) as f32 bits.
@group(0) @binding(7) var<storage, read_write> xq4: array<vec4<u32>>;

// Four dot4I8Packed: 16 signed bytes of `w` against 16 of `x`.
fn k8_dot(w: vec4<u32>, x: vec4<u32>) -> i32 {
    return (dot4I8Packed(w.x, x.x) + dot4I8Packed(w.y, x.y))
        + (dot4I8Packed(w.z, x.z) + dot4I8Packed(w.w, x.w));
}
