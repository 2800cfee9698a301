// Dequantization of one unit of 32 consecutive weights of a row, straight from GGUF blocks.
//
// `rb` is the byte offset of the row in the weight pool, `u` the unit index within the row
// (32 elements: one block of the 32-element formats, one sub-block of 32 of a K-quant
// super-block). Results go to the private array `dq`, with the same f32 operations as the CPU
// reference's dequantization. The Rust side renames the chosen `deq_<fmt>` to `deq_unit`.
var<private> dq: array<f32, 32>;

// Nibbles of the 16 bytes at `qs`: element j from the low nibble of byte j, j + 16 from the
// high nibble, minus `off`, times `d`, plus `m`.
fn deq_nib32(qs: u32, d: f32, m: f32, off: f32) {
    for (var k = 0u; k < 4u; k = k + 1u) {
        let w = ld_u32(qs + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            let byte = (w >> (8u * b)) & 0xffu;
            dq[4u * k + b] = d * (f32(byte & 15u) - off) + m;
            dq[16u + 4u * k + b] = d * (f32(byte >> 4u) - off) + m;
        }
    }
}

// Q4_0, 18 bytes: f16 d, 16 bytes of nibbles; y = d * (q - 8).
fn deq_q4_0(rb: u32, u: u32) {
    let base = rb + u * 18u;
    deq_nib32(base + 2u, ld_f16(base), 0.0, 8.0);
}

// Q4_1, 20 bytes: f16 d, f16 m, nibbles; y = d * q + m.
fn deq_q4_1(rb: u32, u: u32) {
    let base = rb + u * 20u;
    deq_nib32(base + 4u, ld_f16(base), ld_f16(base + 2u), 0.0);
}

// Q5_0, 22 bytes: f16 d, u32 of fifth bits (bit j for element j), nibbles; y = d * (q - 16).
fn deq_q5_0(rb: u32, u: u32) {
    let base = rb + u * 22u;
    let d = ld_f16(base);
    let qh = ld_u32(base + 2u);
    for (var k = 0u; k < 4u; k = k + 1u) {
        let w = ld_u32(base + 6u + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            let j = 4u * k + b;
            let byte = (w >> (8u * b)) & 0xffu;
            let lo = (byte & 15u) | (((qh >> j) & 1u) << 4u);
            let hi = (byte >> 4u) | (((qh >> (j + 16u)) & 1u) << 4u);
            dq[j] = d * (f32(lo) - 16.0);
            dq[j + 16u] = d * (f32(hi) - 16.0);
        }
    }
}

// Q8_0, 34 bytes: f16 d, 32 signed bytes; y = d * q.
fn deq_q8_0(rb: u32, u: u32) {
    let base = rb + u * 34u;
    let d = ld_f16(base);
    for (var k = 0u; k < 8u; k = k + 1u) {
        let w = ld_u32(base + 2u + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            dq[4u * k + b] = d * sbyte(w, b);
        }
    }
}

// 6-bit scale and min of sub-block j of a Q4_K / Q5_K block whose 12 scale bytes are at `s`.
fn scale_min_k4(s: u32, j: u32) -> vec2<f32> {
    if (j < 4u) {
        return vec2<f32>(f32(ld_u8(s + j) & 63u), f32(ld_u8(s + j + 4u) & 63u));
    }
    let sc = (ld_u8(s + j + 4u) & 15u) | ((ld_u8(s + j - 4u) >> 6u) << 4u);
    let m = (ld_u8(s + j + 4u) >> 4u) | ((ld_u8(s + j) >> 6u) << 4u);
    return vec2<f32>(f32(sc), f32(m));
}

// Q4_K, 144 bytes per 256: f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles.
// Sub-block j: bytes 32(j/2).. low (j even) or high (j odd) nibbles; y = (d sc) q - (dmin m).
fn deq_q4_k(rb: u32, u: u32) {
    let base = rb + (u / 8u) * 144u;
    let j = u % 8u;
    let sm = scale_min_k4(base + 4u, j);
    let ds = ld_f16(base) * sm.x;
    let dm = ld_f16(base + 2u) * sm.y;
    let sh = (j & 1u) * 4u;
    for (var k = 0u; k < 8u; k = k + 1u) {
        let w = ld_u32(base + 16u + 32u * (j / 2u) + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            let q = (w >> (8u * b + sh)) & 15u;
            dq[4u * k + b] = ds * f32(q) - dm;
        }
    }
}

// Q5_K, 176 bytes per 256: as Q4_K plus 32 bytes of fifth bits at 16 (bit j of byte l is
// bit 4 of element 32j + l); the nibbles start at 48.
fn deq_q5_k(rb: u32, u: u32) {
    let base = rb + (u / 8u) * 176u;
    let j = u % 8u;
    let sm = scale_min_k4(base + 4u, j);
    let ds = ld_f16(base) * sm.x;
    let dm = ld_f16(base + 2u) * sm.y;
    let sh = (j & 1u) * 4u;
    for (var k = 0u; k < 8u; k = k + 1u) {
        let w = ld_u32(base + 48u + 32u * (j / 2u) + 4u * k);
        let h = ld_u32(base + 16u + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            let q = ((w >> (8u * b + sh)) & 15u) | (((h >> (8u * b + j)) & 1u) << 4u);
            dq[4u * k + b] = ds * f32(q) - dm;
        }
    }
}

// Q6_K, 210 bytes per 256: 128 bytes low nibbles, 64 bytes of top bit pairs, 16 i8 scales
// (one per 16 elements), f16 d. Unit j covers elements 32j..32j+32: half h = j / 4,
// quarter c = j % 4 takes nibble (c / 2) of ql[64h + 32(c % 2) + l] and bits 2c..2c+1 of
// qh[32h + l]; y = (d * scale) * (q - 32). On the GPU each block is followed by 14 bytes of
// padding (`Q6K_BLOCK` bytes apart; see apple/src/weights.rs), so blocks start 16-byte aligned.
const Q6K_BLOCK: u32 = 224u;

fn deq_q6_k(rb: u32, u: u32) {
    let base = rb + (u / 8u) * Q6K_BLOCK;
    let j = u % 8u;
    let h = j / 4u;
    let c = j % 4u;
    let d = ld_f16(base + 208u);
    let s0 = d * f32(i32(ld_u8(base + 192u + 2u * j) << 24u) >> 24u);
    let s1 = d * f32(i32(ld_u8(base + 193u + 2u * j) << 24u) >> 24u);
    let nsh = (c / 2u) * 4u;
    for (var k = 0u; k < 8u; k = k + 1u) {
        let wl = ld_u32(base + 64u * h + 32u * (c % 2u) + 4u * k);
        let wh = ld_u32(base + 128u + 32u * h + 4u * k);
        for (var b = 0u; b < 4u; b = b + 1u) {
            let lo = (wl >> (8u * b + nsh)) & 15u;
            let hi = (wh >> (8u * b + 2u * c)) & 3u;
            let q = f32(lo | (hi << 4u)) - 32.0;
            let l = 4u * k + b;
            dq[l] = select(s1, s0, l < 16u) * q;
        }
    }
}

// F32 weights.
fn deq_f32(rb: u32, u: u32) {
    for (var i = 0u; i < 32u; i = i + 1u) {
        dq[i] = bitcast<f32>(ld_u32(rb + (u * 32u + i) * 4u));
    }
}

// F16 weights.
fn deq_f16(rb: u32, u: u32) {
    for (var i = 0u; i < 16u; i = i + 1u) {
        let v = unpack2x16float(ld_u32(rb + u * 64u + 4u * i));
        dq[2u * i] = v.x;
        dq[2u * i + 1u] = v.y;
    }
}

// ---------------------------------------------------------------------------------------
// Fused dequantize-and-dot of one unit against 32 activations at `xo` of the staged chunk
// `xs` (below), for the one-row matvec (`vec` in matmul.wgsl). Each weight word is unpacked into a vec4 and dotted
// with four activations; constant parts of a unit (offsets, minima) are taken out of the sum
// (`sum((d q - m) x) = d sum(q x) - m sum(x)`), so nothing goes through the private `dq`
// array. The Rust side renames the chosen `dot_<fmt>` to `dot_unit`.

// The activations a `vec` workgroup has staged in workgroup memory (`XS_CHUNK` of them, as
// vec4s): `o` is an element offset within the chunk, a multiple of 4.
const XS_CHUNK: u32 = 2048u;
var<workgroup> xs: array<vec4<f32>, 512>;

fn xv(o: u32) -> vec4<f32> {
    return xs[o >> 2u];
}

fn hsum4(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// Low nibbles of the four bytes of `w`, shifted right by `sh` first.
fn nib4(w: u32, sh: u32) -> vec4<f32> {
    let v = vec4<u32>(w >> sh, w >> (8u + sh), w >> (16u + sh), w >> (24u + sh));
    return vec4<f32>(v & vec4<u32>(15u));
}

// Bits `j..j + 4` of `h`, as 0.0 / 1.0.
fn bits4(h: u32, j: u32) -> vec4<f32> {
    let v = vec4<u32>(h >> j, h >> (j + 1u), h >> (j + 2u), h >> (j + 3u));
    return vec4<f32>(v & vec4<u32>(1u));
}

// The four bytes of `w` as signed values.
fn sbytes4(w: u32) -> vec4<f32> {
    let v = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w));
    return vec4<f32>(v >> vec4<u32>(24u));
}

// Sum of q x and of x over a 32-nibble block at `qs` (low nibbles elements 0..16).
fn nib_dots(qs: u32, xo: u32) -> vec2<f32> {
    var s = vec4<f32>(0.0);
    var sx = vec4<f32>(0.0);
    for (var k = 0u; k < 4u; k = k + 1u) {
        let w = ld_u32(qs + 4u * k);
        let xl = xv(xo + 4u * k);
        let xh = xv(xo + 16u + 4u * k);
        s = s + nib4(w, 0u) * xl + nib4(w, 4u) * xh;
        sx = sx + xl + xh;
    }
    return vec2<f32>(hsum4(s), hsum4(sx));
}

fn dot_q4_0(rb: u32, u: u32, xo: u32) -> f32 {
    let base = rb + u * 18u;
    let t = nib_dots(base + 2u, xo);
    return ld_f16(base) * (t.x - 8.0 * t.y);
}

fn dot_q4_1(rb: u32, u: u32, xo: u32) -> f32 {
    let base = rb + u * 20u;
    let t = nib_dots(base + 4u, xo);
    return ld_f16(base) * t.x + ld_f16(base + 2u) * t.y;
}

fn dot_q5_0(rb: u32, u: u32, xo: u32) -> f32 {
    let base = rb + u * 22u;
    let qh = ld_u32(base + 2u);
    var s = vec4<f32>(0.0);
    var sx = vec4<f32>(0.0);
    for (var k = 0u; k < 4u; k = k + 1u) {
        let w = ld_u32(base + 6u + 4u * k);
        let xl = xv(xo + 4u * k);
        let xh = xv(xo + 16u + 4u * k);
        let ql = nib4(w, 0u) + 16.0 * bits4(qh, 4u * k);
        let qu = nib4(w, 4u) + 16.0 * bits4(qh, 16u + 4u * k);
        s = s + ql * xl + qu * xh;
        sx = sx + xl + xh;
    }
    return ld_f16(base) * (hsum4(s) - 16.0 * hsum4(sx));
}

fn dot_q8_0(rb: u32, u: u32, xo: u32) -> f32 {
    let base = rb + u * 34u;
    var s = vec4<f32>(0.0);
    for (var k = 0u; k < 8u; k = k + 1u) {
        s = s + sbytes4(ld_u32(base + 2u + 4u * k)) * xv(xo + 4u * k);
    }
    return ld_f16(base) * hsum4(s);
}

// Q4_K and Q5_K share their layout up to the fifth bits: a block of `bytes` with f16 d, f16
// dmin and the 12 scale bytes first, then (Q5_K only, `fifth`) 32 bytes of fifth bits, then
// the nibbles. Callers pass constants, so the unused branch folds away.
fn dot_k45(rb: u32, u: u32, xo: u32, bytes: u32, fifth: bool) -> f32 {
    let base = rb + (u / 8u) * bytes;
    let j = u % 8u;
    let sm = scale_min_k4(base + 4u, j);
    let sh = (j & 1u) * 4u;
    let qs = base + select(16u, 48u, fifth) + 32u * (j / 2u);
    var s = vec4<f32>(0.0);
    var sx = vec4<f32>(0.0);
    for (var k = 0u; k < 8u; k = k + 1u) {
        let x = xv(xo + 4u * k);
        var q = nib4(ld_u32(qs + 4u * k), sh);
        if (fifth) {
            let h = ld_u32(base + 16u + 4u * k);
            q = q + 16.0 * vec4<f32>((vec4<u32>(h >> j, h >> (8u + j), h >> (16u + j), h >> (24u + j))) & vec4<u32>(1u));
        }
        s = s + q * x;
        sx = sx + x;
    }
    return ld_f16(base) * sm.x * hsum4(s) - ld_f16(base + 2u) * sm.y * hsum4(sx);
}

fn dot_q4_k(rb: u32, u: u32, xo: u32) -> f32 {
    return dot_k45(rb, u, xo, 144u, false);
}

fn dot_q5_k(rb: u32, u: u32, xo: u32) -> f32 {
    return dot_k45(rb, u, xo, 176u, true);
}

fn dot_q6_k(rb: u32, u: u32, xo: u32) -> f32 {
    let base = rb + (u / 8u) * Q6K_BLOCK;
    let j = u % 8u;
    let h = j / 4u;
    let c = j % 4u;
    let d = ld_f16(base + 208u);
    let s0 = d * f32(i32(ld_u8(base + 192u + 2u * j) << 24u) >> 24u);
    let s1 = d * f32(i32(ld_u8(base + 193u + 2u * j) << 24u) >> 24u);
    let nsh = (c / 2u) * 4u;
    let ql = base + 64u * h + 32u * (c % 2u);
    let qh = base + 128u + 32u * h;
    var t0 = vec4<f32>(0.0);
    var t1 = vec4<f32>(0.0);
    for (var k = 0u; k < 8u; k = k + 1u) {
        let wh = ld_u32(qh + 4u * k) >> (2u * c);
        let hi = vec4<f32>(vec4<u32>(wh, wh >> 8u, wh >> 16u, wh >> 24u) & vec4<u32>(3u));
        let q = nib4(ld_u32(ql + 4u * k), nsh) + 16.0 * hi - vec4<f32>(32.0);
        let p = q * xv(xo + 4u * k);
        if (k < 4u) {
            t0 = t0 + p;
        } else {
            t1 = t1 + p;
        }
    }
    return s0 * hsum4(t0) + s1 * hsum4(t1);
}

fn dot_f32(rb: u32, u: u32, xo: u32) -> f32 {
    var s = vec4<f32>(0.0);
    for (var k = 0u; k < 8u; k = k + 1u) {
        let o = rb + (u * 32u + 4u * k) * 4u;
        let w = vec4<f32>(bitcast<f32>(ld_u32(o)), bitcast<f32>(ld_u32(o + 4u)), bitcast<f32>(ld_u32(o + 8u)), bitcast<f32>(ld_u32(o + 12u)));
        s = s + w * xv(xo + 4u * k);
    }
    return hsum4(s);
}

fn dot_f16(rb: u32, u: u32, xo: u32) -> f32 {
    var s = vec4<f32>(0.0);
    for (var k = 0u; k < 8u; k = k + 1u) {
        let o = rb + u * 64u + 8u * k;
        let w = vec4<f32>(unpack2x16float(ld_u32(o)), unpack2x16float(ld_u32(o + 4u)));
        s = s + w * xv(xo + 4u * k);
    }
    return hsum4(s);
}
