//! The variant lab behind `shaders/matvec_k.wgsl`: Q4_K one-row matvec variants
//! (`matvec_lab.wgsl`) timed on their own with GPU timestamps, beside a plain read of the same
//! bytes (the WGSL load ceiling). A measuring tool, not part of the product.
//!
//! ```text
//! cargo build --release -p glimmer-apple --example matvec_lab
//! target/release/examples/matvec_lab
//! ```
//! For each shape (30B-class on a GPU, one small shape on a CPU adapter), random Q4_K weights
//! are cycled over up to 768 MB (out of the L2), each variant runs about 0.3 s to warm up, then
//! 9 timed passes; it prints the median µs per matvec, GB/s of weights, the spread of the 9
//! and the largest error against an f64 reference (relative to the largest output). The
//! kernels assume 32-wide subgroups (as on NVIDIA and Apple); on other adapters only the
//! variants with T at most the subgroup size are right, which the error column shows.
//! Findings and figures: BENCHMARKS.md, "wgpu backend", session 5.

use std::num::NonZeroU64;

use rand::{Rng, SeedableRng};
use wgpu::util::DeviceExt;

const LAB: &str = include_str!("matvec_lab.wgsl");

fn f16b(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}

/// Random Q4_K row bytes.
fn q4k_rows(rng: &mut rand::rngs::StdRng, rows: usize, cols: usize) -> Vec<u8> {
    let nb = cols / 256;
    let mut v = vec![0u8; rows * nb * 144];
    for b in v.chunks_exact_mut(144) {
        b[0..2].copy_from_slice(&f16b(rng.random_range(0.001..0.01)).to_le_bytes());
        b[2..4].copy_from_slice(&f16b(rng.random_range(0.001..0.01)).to_le_bytes());
        for x in &mut b[4..] {
            *x = rng.random();
        }
    }
    v
}

fn q4k_dot(row: &[u8], x: &[f32]) -> f64 {
    let mut s = 0.0f64;
    for (bi, b) in row.chunks_exact(144).enumerate() {
        let d = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32() as f64;
        let dm = half::f16::from_bits(u16::from_le_bytes([b[2], b[3]])).to_f32() as f64;
        let sc = &b[4..16];
        for j in 0..8 {
            let (s6, m6) = if j < 4 {
                (sc[j] & 63, sc[j + 4] & 63)
            } else {
                (
                    (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4),
                    (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4),
                )
            };
            for l in 0..32 {
                let byte = b[16 + 32 * (j / 2) + l];
                let q = if j % 2 == 0 { byte & 15 } else { byte >> 4 };
                let w = d * s6 as f64 * q as f64 - dm * m6 as f64;
                s += w * x[bi * 256 + 32 * j + l] as f64;
            }
        }
    }
    s
}

/// The `flat` entry for `r` rows a thread: no private arrays, no inner loops.
fn flat_src(r: usize) -> String {
    let mut s = String::from(
        "@compute @workgroup_size(WGSu)\nfn flat(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n    let g = lid / T;\n    let t = lid % T;\n    let r0 = ((wid.x + wid.y * nwg.x) * G + g) * R;\n    let nb = p.cols / 256u;\n",
    );
    for i in 0..r {
        s += &format!("    let wb{i} = p.w_base_v4 + min(r0 + {i}u, p.rows - 1u) * p.row_v4;\n    var acc{i} = 0.0;\n");
    }
    s += "    for (var e = t; e < nb * 8u; e = e + T) {\n        let blk = e >> 3u;\n        let q = e & 7u;\n        let pp = q >> 1u;\n        let xb = p.x_off_v4 + blk * 64u + pp * 16u + (q & 1u) * 4u;\n";
    for i in 0..r {
        s += &format!("        let h{i} = wq4[wb{i} + blk * 9u];\n        let q{i} = wq4[wb{i} + blk * 9u + 1u + q];\n");
    }
    s += "        let xl0 = x4[xb];\n        let xl1 = x4[xb + 1u];\n        let xl2 = x4[xb + 2u];\n        let xl3 = x4[xb + 3u];\n        let xh0 = x4[xb + 8u];\n        let xh1 = x4[xb + 9u];\n        let xh2 = x4[xb + 10u];\n        let xh3 = x4[xb + 11u];\n        let sxl = hsum((xl0 + xl1) + (xl2 + xl3));\n        let sxh = hsum((xh0 + xh1) + (xh2 + xh3));\n";
    for i in 0..r {
        s += &format!("        {{\n            let s = sc6x2(h{i}, pp);\n            let dm = unpack2x16float(h{i}.x);\n            let sl = nf_lo(q{i}.x) * xl0 + nf_lo(q{i}.y) * xl1 + nf_lo(q{i}.z) * xl2 + nf_lo(q{i}.w) * xl3;\n            let su = nf_hi(q{i}.x) * xh0 + nf_hi(q{i}.y) * xh1 + nf_hi(q{i}.z) * xh2 + nf_hi(q{i}.w) * xh3;\n            acc{i} = acc{i} + 16.0 * dm.x * (s.x * (hsum(sl) - sxl) + s.y * (hsum(su) - sxh)) - dm.y * (s.z * sxl + s.w * sxh);\n        }}\n");
    }
    s += "    }\n";
    for i in 0..r {
        s += &format!("    let o{i} = red(acc{i}, lid);\n    if (t == 0u && r0 + {i}u < p.rows) {{\n        out[p.out_off + r0 + {i}u] = o{i};\n    }}\n");
    }
    s += "}\n";
    s
}

fn main() {
    let inst =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = pollster::block_on(inst.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .expect("adapter");
    println!("adapter: {:?}", adapter.get_info());
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: None,
        required_features: wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY,
        required_limits: limits.clone(),
        ..Default::default()
    }))
    .expect("device");
    let cpu = adapter.get_info().device_type == wgpu::DeviceType::Cpu;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let shapes: &[(usize, usize)] = if cpu {
        &[(64, 1024)]
    } else {
        &[(19968, 6656), (6656, 19968), (4096, 6656), (256, 6656)]
    };
    let budget: usize = if cpu { 1 << 20 } else { 768 << 20 };
    let pool_cap = (limits.max_storage_buffer_binding_size as usize).min(budget);
    let period = queue.get_timestamp_period() as f64 * 1e-9;
    let qs = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Timestamp,
        count: 2,
    });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let tread = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let read_u64 = |buf: &wgpu::Buffer, n: usize| -> Vec<u8> {
        let s = buf.slice(..n as u64);
        s.map_async(wgpu::MapMode::Read, |_| {});
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let v = s.get_mapped_range().unwrap().to_vec();
        buf.unmap();
        v
    };
    for &(rows, cols) in shapes {
        let row_bytes = cols / 256 * 144;
        let mat = rows * row_bytes;
        let copies = (pool_cap / mat).clamp(1, 64);
        let mut w = Vec::with_capacity(copies * mat);
        for _ in 0..copies {
            w.extend(q4k_rows(&mut rng, rows, cols));
        }
        let x: Vec<f32> = (0..cols).map(|_| rng.random_range(-1.0..1.0)).collect();
        let reps = 4 * copies.max(8);
        let last = (reps - 1) % copies * mat;
        let want: Vec<f64> = (0..rows)
            .map(|r| q4k_dot(&w[last + r * row_bytes..last + (r + 1) * row_bytes], &x))
            .collect();
        let wbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &w,
            usage: wgpu::BufferUsages::STORAGE,
        });
        let xbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::cast_slice(&x),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let obuf = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (rows * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let oread = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (rows * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        println!(
            "\n== Q4_K {rows} x {cols}: {:.1} MB a matrix, {copies} copies cycled",
            mat as f64 / 1e6
        );
        let mut variants: Vec<(String, &str, usize, usize, usize)> =
            vec![("readbw".into(), "readbw", 1, 64, 64)];
        let mut v6: Vec<(&str, usize, usize, usize)> = Vec::new();
        if cpu {
            v6.extend([
                ("fast", 8, 2, 64),
                ("flat", 8, 1, 64),
                ("flat", 8, 2, 64),
                ("flat", 8, 4, 64),
            ]);
        } else {
            v6.extend([
                ("single", 32, 2, 64),
                ("single", 16, 4, 64),
                ("pair", 16, 4, 64),
                ("fast", 32, 2, 64),
                ("flat", 16, 4, 64),
            ]);
            for (t, r, wg) in [
                (32, 1, 64),
                (32, 2, 64),
                (32, 4, 64),
                (32, 2, 128),
                (32, 2, 256),
                (64, 1, 64),
                (64, 2, 64),
                (64, 4, 64),
                (128, 1, 128),
                (128, 2, 128),
                (256, 1, 256),
            ] {
                v6.push(("flat", t, r, wg));
            }
        }
        for (entry, t, r, wg) in v6 {
            variants.push((format!("{entry} T{t} R{r} W{wg}"), entry, r, t, wg));
        }
        for (name, entry, r, t, wg) in variants {
            let src = (LAB.to_string() + &flat_src(r))
                .replace("RRu", &format!("{r}u"))
                .replace("TTu", &format!("{t}u"))
                .replace("WGSu", &format!("{wg}u"));
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: None,
                source: wgpu::ShaderSource::Wgsl(src.into()),
            });
            let pipe = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
            let rows_per_wg = r * wg / t;
            let mut params = Vec::new();
            for i in 0..reps {
                let c = i % copies;
                let p: [u32; 64] = {
                    let mut a = [0u32; 64];
                    if entry.starts_with("readbw") {
                        a[2] = (mat / 16) as u32;
                        a[3] = (c * mat / 16) as u32;
                    } else {
                        a[0] = rows as u32;
                        a[1] = cols as u32;
                        a[2] = (row_bytes / 16) as u32;
                        a[3] = (c * mat / 16) as u32;
                    }
                    a
                };
                params.extend_from_slice(&p);
            }
            let pbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let bgl = pipe.get_bind_group_layout(0);
            let groups: Vec<wgpu::BindGroup> = (0..reps)
                .map(|i| {
                    let mut e = vec![
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: &pbuf,
                                offset: (i * 256) as u64,
                                size: NonZeroU64::new(32),
                            }),
                        },
                        wgpu::BindGroupEntry {
                            binding: 3,
                            resource: obuf.as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 5,
                            resource: wbuf.as_entire_binding(),
                        },
                    ];
                    if !entry.starts_with("readbw") {
                        e.push(wgpu::BindGroupEntry {
                            binding: 2,
                            resource: xbuf.as_entire_binding(),
                        });
                    }
                    device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &bgl,
                        entries: &e,
                    })
                })
                .collect();
            let n_wg = if entry.starts_with("readbw") {
                132 * 64
            } else {
                rows.div_ceil(rows_per_wg)
            } as u32;
            let run_trial = |count: usize| -> f64 {
                let mut enc = device.create_command_encoder(&Default::default());
                {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                            query_set: &qs,
                            beginning_of_pass_write_index: Some(0),
                            end_of_pass_write_index: Some(1),
                        }),
                    });
                    pass.set_pipeline(&pipe);
                    for k in 0..count {
                        pass.set_bind_group(0, &groups[k % reps], &[]);
                        pass.dispatch_workgroups(n_wg.min(65535), n_wg.div_ceil(65535), 1);
                    }
                }
                enc.resolve_query_set(&qs, 0..2, &resolve, 0);
                enc.copy_buffer_to_buffer(&resolve, 0, &tread, 0, 16);
                enc.copy_buffer_to_buffer(&obuf, 0, &oread, 0, (rows * 4) as u64);
                queue.submit([enc.finish()]);
                let t = read_u64(&tread, 16);
                let t0 = u64::from_le_bytes(t[0..8].try_into().unwrap());
                let t1 = u64::from_le_bytes(t[8..16].try_into().unwrap());
                (t1 - t0) as f64 * period / count as f64
            };
            // Warm up (clocks, caches) for about 0.3 s of GPU time, then 9 timed trials.
            let first = run_trial(reps);
            let warm = ((0.3 / first) as usize).clamp(reps, 200 * reps);
            run_trial(warm);
            let mut ts: Vec<f64> = (0..9).map(|_| run_trial(reps)).collect();
            ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let best = ts[4];
            let spread = (ts[8] - ts[0]) / ts[4];
            let err = if entry.starts_with("readbw") {
                0.0
            } else {
                let o = read_u64(&oread, rows * 4);
                let got: &[f32] = bytemuck::cast_slice(&o);
                let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
                got.iter()
                    .zip(&want)
                    .fold(0f64, |m, (g, w)| m.max((*g as f64 - w).abs() / scale))
            };
            println!(
                "{name:>16}: {:8.2} us  {:7.1} GB/s  spread {:4.0} %  err {err:.2e}",
                best * 1e6,
                mat as f64 / best / 1e9,
                spread * 100.0
            );
        }
    }
}
