//! `cargo xtask bench`: nxvk's benchmarks, one JSON line per workload in the format of the
//! peers' README (`{"name","value","unit","better","impl"}`).
//!
//! Workloads run the catalog's eager ops (what a user gets). `add_f32_256M@vec4_unroll4` runs
//! a hand-vectorised add kernel kept here as the bandwidth reference the catalog's template is
//! measured against. GPU-side workloads are timed with GPU timestamps (median of 20 after 3
//! warm-up runs, which also bring the GPU's clocks up), host-visible ones (chains, round trips,
//! transfers) with the wall clock, as the torch peer times them. `--quick` shrinks the large
//! workloads (and renames them by size) so lavapipe can run them as a regression check.

use nxvk_core::{BufferAccess, Context, ContextOptions, DType, Device, Knobs, Result, Tensor};
use nxvk_kernels::codegen::{F64Math, f64_math};
use nxvk_kernels::fft::{self, Transform};
use nxvk_kernels::sort::{self, Direction};
use nxvk_kernels::{
    ConvOptions, Elem, TieBreak, TileConfig, UnaryOp, conv, cumulative_sum, dot, dot_autotune,
    index, movement, ops, reduce, select,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The harness shared with nxvk-fusion's bench_fusion.
mod bench_harness;
use bench_harness::{
    Arguments, Record, Workload, gpu_median, open_context, random_f32, random_f32_tensor,
    run_workloads, wall_median,
};

const ADD_VEC4: &str = "layout(local_size_x = 256) in;
layout(constant_id = 0) const uint UNROLL = 1;
layout(buffer_reference, scalar) buffer Vec4s { vec4 values[]; };
layout(push_constant, scalar) uniform Push { Vec4s a; Vec4s b; Vec4s c; uint count; } push;
void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint index = gl_GlobalInvocationID.x;
    for (; index + (UNROLL - 1) * stride < push.count; index += UNROLL * stride) {
        vec4 sums[UNROLL];
        for (uint u = 0; u < UNROLL; u++) {
            sums[u] = push.a.values[index + u * stride] + push.b.values[index + u * stride];
        }
        for (uint u = 0; u < UNROLL; u++) {
            push.c.values[index + u * stride] = sums[u];
        }
    }
    for (; index < push.count; index += stride) {
        push.c.values[index] = push.a.values[index] + push.b.values[index];
    }
}
";

/// The unary ops whose f32 helpers have a form computed in f64 (the kernel knob
/// `f32_math_via_f64`), as the catalog decides it.
fn refined_f32_ops() -> Vec<UnaryOp> {
    UnaryOp::ALL
        .iter()
        .filter(|op| {
            op.spec()
                .glsl
                .float
                .is_some_and(|glsl| f64_math(glsl, Elem::F32) == F64Math::Refining)
        })
        .copied()
        .collect()
}

fn main() {
    let arguments = Arguments::from_command_line();
    let quick = arguments.quick;
    let context = open_context();
    let device = context.device().expect("device");
    let bench = Bench { device, quick };

    // Full sizes are the peers' workloads; --quick names smaller ones by their size.
    let (big, big_label) = if quick {
        (1 << 22, "4M")
    } else {
        (1 << 28, "256M")
    };
    let (half, half_label) = if quick {
        (1 << 21, "2M")
    } else {
        (1 << 27, "128M")
    };
    let (side, side_label) = if quick {
        (1 << 10, "1Kx1K")
    } else {
        (1 << 14, "16Kx16K")
    };
    // lavapipe runs the tiled GEMM at well under a GFLOP/s: --quick sizes stay small.
    let (gemm_side, batched_gemm) = if quick {
        (256, (8, 64))
    } else {
        (8192, (512, 256))
    };
    let conv_batch = if quick { 1 } else { 32 };
    let (sort_elements, sort_label) = if quick {
        (1 << 20, "1M")
    } else {
        (1 << 24, "16M")
    };
    // (table rows, row width, picks) and (rows, row length).
    let (gather, gather_name) = if quick {
        ((1 << 14, 64, 1 << 16), "gather_f32_16Kx64_64K")
    } else {
        ((1 << 20, 64, 1 << 22), "gather_f32_1Mx64_4M")
    };
    let (fft_rows, fft_name) = if quick {
        ((64, 1 << 12), "fft_c64_64x4K")
    } else {
        ((1 << 10, 1 << 14), "fft_c64_1Kx16K")
    };
    // A mixed-radix length (3 * 2^k: the four-step pair of mixed passes) and many sorted rows.
    let (mixed_fft_rows, mixed_fft_name) = if quick {
        ((64, 3 << 10), "fft_c64_64x3K")
    } else {
        ((1 << 10, 3 << 12), "fft_c64_1Kx12K")
    };
    let (sort_rows, sort_rows_name) = if quick {
        ((256, 1 << 12), "sort_f32_256x4K")
    } else {
        ((1 << 12, 1 << 12), "sort_f32_4Kx4K")
    };
    let mut workloads: Vec<(String, Workload<Bench>)> = vec![
        (
            format!("conv_f32_n{conv_batch}c64h56k64r3"),
            Box::new(move |b| b.conv(DType::F32, conv_batch)),
        ),
        (
            format!("conv_c64_n{conv_batch}c64h56k64r3"),
            Box::new(move |b| b.conv(DType::C64, conv_batch)),
        ),
        (
            format!("cgemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::C64, 1, gemm_side, None)),
        ),
        (
            format!("zgemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::C128, 1, gemm_side, None)),
        ),
        (
            format!("sum_c64_{half_label}"),
            Box::new(move |b| b.sum(DType::C64, half)),
        ),
        (
            format!("product_c64_{half_label}"),
            Box::new(move |b| b.product(DType::C64, half)),
        ),
        (
            format!("cumsum_c64_{half_label}"),
            Box::new(move |b| b.cumulative_sum(DType::C64, &[half], 0)),
        ),
        (
            format!("sgemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::F32, 1, gemm_side, None)),
        ),
        (
            format!("sgemm_{gemm_side}@bf16x3"),
            Box::new(move |b| {
                b.with_knob("f32_dot", "bf16x3")?
                    .gemm(DType::F32, 1, gemm_side, None)
            }),
        ),
        (
            format!("dgemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::F64, 1, gemm_side, None)),
        ),
        (
            format!("hgemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::F16, 1, gemm_side, None)),
        ),
        (
            format!("bf16gemm_{gemm_side}"),
            Box::new(move |b| b.gemm(DType::BF16, 1, gemm_side, None)),
        ),
        (
            format!("bgemm_f32_{}x{}", batched_gemm.0, batched_gemm.1),
            Box::new(move |b| b.gemm(DType::F32, batched_gemm.0, batched_gemm.1, None)),
        ),
        (
            format!("add_f32_{big_label}"),
            Box::new(move |b| b.add(big)),
        ),
        (
            format!("add_f32_{big_label}@vec4_unroll4"),
            Box::new(move |b| b.add_vec4(big)),
        ),
        (
            format!("uniform_f32_{big_label}"),
            Box::new(move |b| b.uniform_f32(big)),
        ),
        (
            format!("sum_f32_{big_label}"),
            Box::new(move |b| b.sum(DType::F32, big)),
        ),
        (
            format!("sum_f64_{half_label}"),
            Box::new(move |b| b.sum(DType::F64, half)),
        ),
        (
            format!("rowsum_f32_{side_label}"),
            Box::new(move |b| b.axis_sum(side, 1)),
        ),
        (
            format!("colsum_f32_{side_label}"),
            Box::new(move |b| b.axis_sum(side, 0)),
        ),
        (
            format!("transpose_f32_{side_label}"),
            Box::new(move |b| b.transpose(side)),
        ),
        (
            format!("argmax_f32_{side_label}"),
            Box::new(move |b| b.argmax(side)),
        ),
        (
            format!("argmax_row_f32_{big_label}"),
            Box::new(move |b| b.argmax_row(big)),
        ),
        (
            format!("concatenate_f32_s32_{half_label}"),
            Box::new(move |b| b.concatenate_mixed(half)),
        ),
        (
            format!("slice_tensor_start_f32_{side_label}"),
            Box::new(move |b| b.slice_at_tensor_start(side)),
        ),
        (
            format!("as_type_f32_f8_e4m3fn_{big_label}"),
            Box::new(move |b| b.as_type(DType::F32, DType::F8E4M3FN, big)),
        ),
        (
            format!("as_type_u4_f32_{big_label}"),
            Box::new(move |b| b.as_type(DType::U4, DType::F32, big)),
        ),
        (
            format!("sort_f32_{sort_label}"),
            Box::new(move |b| b.sort(DType::F32, &[sort_elements])),
        ),
        (
            format!("sort_f32_{sort_label}@signed_zeros"),
            Box::new(move |b| b.sort_patterned(sort_elements, signed_zeros)),
        ),
        (
            format!("sort_f32_{sort_label}@two_values"),
            Box::new(move |b| b.sort_patterned(sort_elements, two_values)),
        ),
        (
            format!("argsort_f32_{sort_label}"),
            Box::new(move |b| b.argsort(DType::F32, &[sort_elements])),
        ),
        (
            format!("sort_f64_{sort_label}"),
            Box::new(move |b| b.sort(DType::F64, &[sort_elements])),
        ),
        (
            sort_rows_name.into(),
            Box::new(move |b| b.sort(DType::F32, &[sort_rows.0, sort_rows.1])),
        ),
        (
            gather_name.into(),
            Box::new(move |b| b.gather_rows(gather.0, gather.1, gather.2)),
        ),
        (
            fft_name.into(),
            Box::new(move |b| b.fft_rows(fft_rows.0, fft_rows.1)),
        ),
        (
            mixed_fft_name.into(),
            Box::new(move |b| b.fft_rows(mixed_fft_rows.0, mixed_fft_rows.1)),
        ),
        (
            "small_op_chain_us".into(),
            Box::new(|b| b.small_op_chain(false)),
        ),
        (
            "small_op_chain_us@record_only".into(),
            Box::new(|b| b.small_op_chain(true)),
        ),
        (
            "small_roundtrip_us".into(),
            Box::new(|b| b.small_roundtrip()),
        ),
        (
            "small_roundtrip_us@sync_only".into(),
            Box::new(|b| b.sync_only(false)),
        ),
        (
            "small_roundtrip_us@submit_only".into(),
            Box::new(|b| b.sync_only(true)),
        ),
        (
            format!("upload_f32_{big_label}"),
            Box::new(move |b| b.upload(big)),
        ),
        (
            format!("download_f32_{big_label}"),
            Box::new(move |b| b.download(big)),
        ),
        (
            format!("pow_f32_{half_label}"),
            Box::new(move |b| b.pow_f32(half)),
        ),
        (
            format!("cumsum_f32_{big_label}"),
            Box::new(move |b| b.cumulative_sum(DType::F32, &[big], 0)),
        ),
        (
            format!("cumsum_rows_f32_{side_label}"),
            Box::new(move |b| b.cumulative_sum(DType::F32, &[side, side], 1)),
        ),
        (
            format!("select_f32_{half_label}"),
            Box::new(move |b| b.select(half)),
        ),
    ];
    // f64 transcendentals on [0, 1) (the f64 library, `glsl_f64_math.glsl`).
    for op in [
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sin,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::ErfInv,
    ] {
        workloads.push((
            format!("{}_f64_{half_label}", op.name()),
            Box::new(move |b| b.unary(op, DType::F64, half)),
        ));
    }
    // The f32 ops with an f64-refined form (`codegen::F64_REFINED_HELPERS`), eager: what the
    // knob `f32_math_via_f64` costs each one when nothing else hides it.
    for op in refined_f32_ops() {
        workloads.push((
            format!("{}_f32_{half_label}", op.name()),
            Box::new(move |b| b.refined_unary_f32(op, half)),
        ));
    }
    // f16 and bf16 GEMMs off the subgroup kernel's tile (a side of 88 less: a multiple of 8,
    // not of 128), which the tiled template runs, or, with `NXVK_KNOB_COOPMAT2_TILE` on or a
    // tile, the workgroup-scope kernel where the device offers it: that knob's race.
    let ragged_side = gemm_side - 88;
    for (prefix, dtype) in [("hgemm", DType::F16), ("bf16gemm", DType::BF16)] {
        workloads.push((
            format!("{prefix}_{ragged_side}"),
            Box::new(move |b| b.gemm(dtype, 1, ragged_side, None)),
        ));
        let others = nxvk_kernels::dot_cooperative2::TILES[1..]
            .iter()
            .map(|(m, n, k)| format!("{m}x{n}x{k}"));
        for value in std::iter::once("on".to_owned()).chain(others) {
            workloads.push((
                format!("{prefix}_{ragged_side}@coopmat2_{value}"),
                Box::new(move |b| {
                    b.with_knob("coopmat2_tile", &value)?
                        .gemm(dtype, 1, ragged_side, None)
                }),
            ));
        }
    }
    // Every tile configuration of the f64 and f32 GEMMs at half the side, forced: the
    // autotuner's race is skipped when one default run exceeds its budget, so these show
    // what each configuration does at full scale.
    let config_side = gemm_side / 2;
    for (prefix, dtype) in [("dgemm", DType::F64), ("sgemm", DType::F32)] {
        let elem = nxvk_kernels::elem_of(dtype).expect("a native dtype");
        for config in dot_autotune::candidates(elem, context.capabilities()) {
            let TileConfig {
                tile_m,
                tile_n,
                tile_k,
                thread_m,
                thread_n,
            } = config;
            workloads.push((
                format!(
                    "{prefix}_{config_side}@tile{tile_m}x{tile_n}x{tile_k}r{thread_m}x{thread_n}"
                ),
                Box::new(move |b| b.gemm(dtype, 1, config_side, Some(config))),
            ));
        }
    }
    run_workloads(&arguments, &bench, workloads);
    eprintln!("{{\"counters\": {:?}}}", context.counters());
}

struct Bench {
    device: Arc<Device>,
    quick: bool,
}

/// Real flops per multiply-add of `dtype`: 2, or 8 for complex types.
fn flops_per_multiply_add(dtype: DType) -> f64 {
    if dtype.is_complex() { 8.0 } else { 2.0 }
}

impl Bench {
    /// Random values of `dtype`: uniform f32 converted, or for complex types pairs of them
    /// (the f32 data read as c64, then converted).
    fn tensor(&self, shape: &[usize], dtype: DType) -> Result<Tensor> {
        if dtype.is_complex() {
            let parts_shape = [shape, &[2]].concat();
            let parts = random_f32_tensor(&self.device, &parts_shape, 0x5eed)?;
            let complex = Tensor::from_parts(
                parts.buffer().clone(),
                nxvk_core::Layout::contiguous(shape),
                DType::C64,
            )?;
            return ops::as_type(&complex, dtype);
        }
        let tensor = random_f32_tensor(&self.device, shape, 0x5eed)?;
        if dtype == DType::F32 {
            Ok(tensor)
        } else {
            ops::as_type(&tensor, dtype)
        }
    }

    /// The same benchmarks on a device of their own whose knob `name` is `value`.
    fn with_knob(&self, name: &str, value: &str) -> Result<Bench> {
        let context = Context::with_options(ContextOptions {
            knobs: Knobs::from_env().with_variant(name, value),
            ..ContextOptions::default()
        })?;
        Ok(Bench {
            device: context.device()?,
            quick: self.quick,
        })
    }

    /// `batches` products of two `side x side` matrices of `dtype` (f16/bf16 accumulate in
    /// f32), through `dot` with its autotuned tiles; 2 * batches * side^3 flops (8 for complex
    /// types: four real multiply-adds per complex one, as CGEMM/ZGEMM rates count them).
    /// A (batched) square GEMM with the autotuner's configuration, or with `config` forced.
    fn gemm(
        &self,
        dtype: DType,
        batches: usize,
        side: usize,
        config: Option<TileConfig>,
    ) -> Result<Record> {
        let shape = [batches, side, side];
        let a = self.tensor(&shape, dtype)?;
        let b = self.tensor(&shape, dtype)?;
        let run = || dot::dot_with_config(&a, &[2], &[0], &b, &[1], &[0], config).map(drop);
        // The first call races the tile configurations (once per device and size bucket).
        run()?;
        let time = gpu_median(&self.device, self.quick, run)?;
        Ok(Record::teraflops(
            flops_per_multiply_add(dtype) * batches as f64 * (side as f64).powi(3),
            time,
        ))
    }

    /// NCHW conv of `batch` x 64 x 56 x 56 with 64 3x3 filters, padding 1 (the peer's
    /// conv2d), through `conv`'s implicit GEMM; 2 * batch * 64 * 56^2 * 64 * 9 flops (8 for
    /// complex types).
    fn conv(&self, dtype: DType, batch: usize) -> Result<Record> {
        let input = self.tensor(&[batch, 64, 56, 56], dtype)?;
        let kernel = self.tensor(&[64, 64, 3, 3], dtype)?;
        let options = ConvOptions {
            padding: vec![(1, 1), (1, 1)],
            ..ConvOptions::default()
        };
        let run = || conv(&input, &kernel, &options).map(drop);
        run()?;
        let time = gpu_median(&self.device, self.quick, run)?;
        Ok(Record::teraflops(
            flops_per_multiply_add(dtype) * batch as f64 * 64.0 * 56.0 * 56.0 * 64.0 * 9.0,
            time,
        ))
    }

    fn add(&self, elements: usize) -> Result<Record> {
        let a = self.tensor(&[elements], DType::F32)?;
        let b = self.tensor(&[elements], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || ops::add(&a, &b).map(drop))?;
        Ok(Record::gigabytes_per_second(
            3.0 * elements as f64 * 4.0,
            time,
        ))
    }

    fn add_vec4(&self, elements: usize) -> Result<Record> {
        let device = &self.device;
        let kernel = device.kernel_from_glsl(
            "bench_add_vec4",
            ADD_VEC4,
            &[(0, nxvk_core::SpecValue::U32(4))],
        )?;
        let a = self.tensor(&[elements], DType::F32)?;
        let b = self.tensor(&[elements], DType::F32)?;
        let c = Tensor::empty(device, DType::F32, &[elements])?;
        let vec4_count = (elements / 4) as u32;
        let mut push: Vec<u8> = [&a, &b, &c]
            .iter()
            .flat_map(|tensor| tensor.device_address().expect("f32").to_le_bytes())
            .collect();
        push.extend_from_slice(&vec4_count.to_le_bytes());
        push.extend_from_slice(&0u32.to_le_bytes());
        let workgroups = vec4_count
            .div_ceil(256)
            .min(device.capabilities().max_workgroup_count[0]);
        let time = gpu_median(&self.device, self.quick, || {
            device.dispatch(
                &kernel,
                [workgroups, 1, 1],
                &push,
                &[
                    BufferAccess::Read(a.buffer()),
                    BufferAccess::Read(b.buffer()),
                    BufferAccess::Write(c.buffer()),
                ],
            )
        })?;
        Ok(Record::gigabytes_per_second(
            3.0 * elements as f64 * 4.0,
            time,
        ))
    }

    /// A unary op on `dtype`, as bytes read and written per second.
    fn unary(&self, op: UnaryOp, dtype: DType, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], dtype)?;
        let time = gpu_median(&self.device, self.quick, || ops::unary(op, &x).map(drop))?;
        let bytes = 2.0 * elements as f64 * dtype.byte_size().unwrap_or(4) as f64;
        Ok(Record::gigabytes_per_second(bytes, time))
    }

    /// Nx.Random's uniform f32 draws (threefry2x32), as bytes written per second.
    fn uniform_f32(&self, elements: usize) -> Result<Record> {
        let key = nxvk_kernels::random::key(&self.device, 42)?;
        let time = gpu_median(&self.device, self.quick, || {
            nxvk_kernels::random::uniform(&key, &[elements], (0.0, 1.0), DType::F32).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(4.0 * elements as f64, time))
    }

    /// f32 `op` on values in its domain: [0, 1) (random_f32's range) for all but acosh, which
    /// takes exp of them, [1, e).
    fn refined_unary_f32(&self, op: UnaryOp, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], DType::F32)?;
        let x = if op == UnaryOp::Acosh {
            ops::unary(UnaryOp::Exp, &x)?
        } else {
            x
        };
        let time = gpu_median(&self.device, self.quick, || ops::unary(op, &x).map(drop))?;
        Ok(Record::gigabytes_per_second(8.0 * elements as f64, time))
    }

    /// f32 pow (computed in f64 and rounded once) on two operands.
    fn pow_f32(&self, elements: usize) -> Result<Record> {
        let x = ops::abs(&self.tensor(&[elements], DType::F32)?)?;
        let y = self.tensor(&[elements], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || ops::pow(&x, &y).map(drop))?;
        Ok(Record::gigabytes_per_second(
            3.0 * elements as f64 * 4.0,
            time,
        ))
    }

    /// Nx's cumulative_sum along `axis` of a tensor of `shape`.
    fn cumulative_sum(&self, dtype: DType, shape: &[usize], axis: usize) -> Result<Record> {
        let x = self.tensor(shape, dtype)?;
        let time = gpu_median(&self.device, self.quick, || {
            cumulative_sum(&x, axis, false).map(drop)
        })?;
        let elements: usize = shape.iter().product();
        Ok(Record::gigabytes_per_second(
            2.0 * elements as f64 * dtype.byte_size().unwrap_or(4) as f64,
            time,
        ))
    }

    /// Nx's product of every element (complex: Complex.multiply in a workgroup tree).
    fn product(&self, dtype: DType, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], dtype)?;
        let time = gpu_median(&self.device, self.quick, || {
            reduce::product(&x, None, false).map(drop)
        })?;
        let bytes = elements as f64 * dtype.byte_size().unwrap_or(4) as f64;
        Ok(Record::gigabytes_per_second(bytes, time))
    }

    /// Nx's select with a u8 predicate and two f32 branches (bytes: predicate, one branch,
    /// output).
    fn select(&self, elements: usize) -> Result<Record> {
        let values = self.tensor(&[elements], DType::F32)?;
        // The values are uniform in [0, 1): about half the predicate is true.
        let half = Tensor::from_slice(&self.device, &[], &[0.5f32])?;
        let predicate = ops::greater(&values, &half)?;
        let other = ops::negate(&values)?;
        let time = gpu_median(&self.device, self.quick, || {
            select(&predicate, &values, &other).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(9.0 * elements as f64, time))
    }

    fn sum(&self, dtype: DType, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], dtype)?;
        let time = gpu_median(&self.device, self.quick, || {
            reduce::sum(&x, None, false).map(drop)
        })?;
        let bytes = elements as f64 * dtype.byte_size().unwrap_or(4) as f64;
        Ok(Record::gigabytes_per_second(bytes, time))
    }

    /// Sum over axis 1 (rows) or axis 0 (columns) of a square f32 matrix.
    fn axis_sum(&self, side: usize, axis: usize) -> Result<Record> {
        let x = self.tensor(&[side, side], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || {
            reduce::sum(&x, Some(&[axis]), false).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(
            (side * side) as f64 * 4.0,
            time,
        ))
    }

    fn transpose(&self, side: usize) -> Result<Record> {
        let x = self.tensor(&[side, side], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || {
            movement::transpose(&x, &[1, 0]).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(
            2.0 * (side * side) as f64 * 4.0,
            time,
        ))
    }

    fn argmax(&self, side: usize) -> Result<Record> {
        let x = self.tensor(&[side, side], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || {
            reduce::argmax(&x, Some(1), TieBreak::Low, false).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// argmax of one row of `elements` f32 (rows past 16M elements take two passes).
    fn argmax_row(&self, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], DType::F32)?;
        let time = gpu_median(&self.device, self.quick, || {
            reduce::argmax(&x, None, TieBreak::Low, false).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(elements as f64 * 4.0, time))
    }

    /// concatenate of an f32 and an s32 vector of `elements` each into f32 (the s32 operand
    /// converted on load).
    fn concatenate_mixed(&self, elements: usize) -> Result<Record> {
        let floats = self.tensor(&[elements], DType::F32)?;
        let integers = self.tensor(&[elements], DType::S32)?;
        let time = gpu_median(&self.device, self.quick, || {
            movement::concatenate_as(&[&floats, &integers], 0, DType::F32).map(drop)
        })?;
        Ok(Record::gigabytes_per_second(
            4.0 * elements as f64 * 4.0,
            time,
        ))
    }

    /// Half the rows of a `side x side` f32 matrix from a start given as a tensor (clamped on
    /// the device, then copied).
    fn slice_at_tensor_start(&self, side: usize) -> Result<Record> {
        let x = self.tensor(&[side, side], DType::F32)?;
        let starts = Tensor::from_slice(&self.device, &[2], &[(side / 3) as i64, 0])?;
        let time = gpu_median(&self.device, self.quick, || {
            movement::slice_at(
                &x,
                movement::Starts::Tensor(&starts),
                &[side / 2, side],
                &[1, 1],
            )
            .map(drop)
        })?;
        Ok(Record::gigabytes_per_second(
            2.0 * (side / 2 * side) as f64 * 4.0,
            time,
        ))
    }

    /// `as_type` of `elements` values from `from` to `to` (a narrow type on one side).
    fn as_type(&self, from: DType, to: DType, elements: usize) -> Result<Record> {
        let x = self.tensor(&[elements], from)?;
        let time = gpu_median(&self.device, self.quick, || ops::as_type(&x, to).map(drop))?;
        let bytes = from.storage_bytes(elements as u64) + to.storage_bytes(elements as u64);
        Ok(Record::gigabytes_per_second(bytes as f64, time))
    }

    /// A stable ascending sort along the last axis of random values of `dtype` in `shape`.
    fn sort(&self, dtype: DType, shape: &[usize]) -> Result<Record> {
        let x = self.tensor(shape, dtype)?;
        let time = gpu_median(&self.device, self.quick, || {
            sort::sort(&x, shape.len() - 1, Direction::Ascending).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// The ascending sort of `elements` f32 values, random ones passed through `pattern` with
    /// their index.
    fn sort_patterned(&self, elements: usize, pattern: fn(usize, f32) -> f32) -> Result<Record> {
        let values: Vec<f32> = random_f32(elements, 0x5eed)
            .into_iter()
            .enumerate()
            .map(|(i, value)| pattern(i, value))
            .collect();
        let x = Tensor::from_slice(&self.device, &[elements], &values)?;
        let time = gpu_median(&self.device, self.quick, || {
            sort::sort(&x, 0, Direction::Ascending).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// A stable ascending argsort (s32 positions) along the last axis of random values of
    /// `dtype` in `shape`: the radix items carry positions, as torch.sort's do.
    fn argsort(&self, dtype: DType, shape: &[usize]) -> Result<Record> {
        let x = self.tensor(shape, dtype)?;
        let time = gpu_median(&self.device, self.quick, || {
            sort::argsort(&x, shape.len() - 1, Direction::Ascending, DType::S32).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// `take` of `picks` random rows (s32 indices) of a `rows` x `width` f32 table.
    fn gather_rows(&self, rows: usize, width: usize, picks: usize) -> Result<Record> {
        let table = self.tensor(&[rows, width], DType::F32)?;
        let indices: Vec<i32> = random_f32(picks, 0x1dc5)
            .into_iter()
            .map(|unit| ((unit * rows as f32) as usize).min(rows - 1) as i32)
            .collect();
        let indices = Tensor::from_slice(&self.device, &[picks], &indices)?;
        let time = gpu_median(&self.device, self.quick, || {
            index::take(&table, &indices, 0).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// Forward c64 FFTs of `rows` rows of `length` along the last axis.
    fn fft_rows(&self, rows: usize, length: usize) -> Result<Record> {
        let parts = random_f32(2 * rows * length, 0xff7);
        let values: Vec<nxvk_core::Complex32> = parts
            .chunks_exact(2)
            .map(|pair| nxvk_core::Complex32::new(pair[0], pair[1]))
            .collect();
        let x = Tensor::from_slice(&self.device, &[rows, length], &values)?;
        let time = gpu_median(&self.device, self.quick, || {
            fft::fft(&x, Transform::Forward, None, 1).map(drop)
        })?;
        Ok(Record::milliseconds(time))
    }

    /// 1000 dependent sigmoids on f32[1024], one sync at the end. With `record_only`, the time
    /// until the last op is recorded (the host's share).
    fn small_op_chain(&self, record_only: bool) -> Result<Record> {
        let x = self.tensor(&[1024], DType::F32)?;
        let chain = || -> Result<Duration> {
            let start = Instant::now();
            let mut y = x.clone();
            for _ in 0..1000 {
                y = ops::sigmoid(&y)?;
            }
            let recorded = start.elapsed();
            self.device.synchronize()?;
            Ok(if record_only {
                recorded
            } else {
                start.elapsed()
            })
        };
        let time = wall_median(1, 5, chain)?;
        Ok(Record::microseconds_per_op(time, 1000))
    }

    /// One sigmoid on f32[1024] and its result back on the host.
    fn small_roundtrip(&self) -> Result<Record> {
        let x = Tensor::from_slice(&self.device, &[1024], &[0.5f32; 1024])?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let values = ops::sigmoid(&x)?.to_vec::<f32>()?;
            let elapsed = start.elapsed();
            assert!((values[0] - 0.622_459_3).abs() < 1e-6);
            Ok(elapsed)
        };
        Ok(Record::microseconds(wall_median(20, 200, once)?))
    }

    /// The floor under a round trip: one tiny fill, submit, and wait; no kernel, no copy back.
    /// With `submit_only`, the host time until the submission returns, without the wait.
    fn sync_only(&self, submit_only: bool) -> Result<Record> {
        let scratch = self.device.alloc("bench", 256)?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            self.device.fill(&scratch, 0)?;
            self.device.flush()?;
            let submitted = start.elapsed();
            self.device.synchronize()?;
            Ok(if submit_only {
                submitted
            } else {
                start.elapsed()
            })
        };
        Ok(Record::microseconds(wall_median(20, 200, once)?))
    }

    fn upload(&self, elements: usize) -> Result<Record> {
        let data = vec![1.5f32; elements];
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let tensor = Tensor::from_slice(&self.device, &[elements], &data)?;
            self.device.synchronize()?;
            let elapsed = start.elapsed();
            drop(tensor);
            Ok(elapsed)
        };
        let time = wall_median(1, 5, once)?;
        Ok(Record::gigabytes_per_second(elements as f64 * 4.0, time))
    }

    fn download(&self, elements: usize) -> Result<Record> {
        let tensor = Tensor::from_slice(&self.device, &[elements], &vec![1.5f32; elements])?;
        self.device.synchronize()?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let values = tensor.to_vec::<f32>()?;
            let elapsed = start.elapsed();
            assert_eq!(values.len(), elements);
            Ok(elapsed)
        };
        let time = wall_median(1, 5, once)?;
        Ok(Record::gigabytes_per_second(elements as f64 * 4.0, time))
    }
}

/// Every fourth value -0.0 and every fourth +0.0: every radix tile holds a zero unlike its
/// key's, so the sort's fix-up rewrites all zeros (its worst case; random values leave it
/// nothing to do).
fn signed_zeros(index: usize, value: f32) -> f32 {
    match index % 4 {
        0 => -0.0,
        1 => 0.0,
        _ => value,
    }
}

/// One of two values that differ in each of their three low bytes, at random: every radix
/// count round of a subgroup holds both digits about equally often, the counting's most
/// repeated digits short of one digit for all.
fn two_values(_: usize, value: f32) -> f32 {
    f32::from_bits(if value < 0.5 {
        0x3F12_3456
    } else {
        0x3F65_4321
    })
}
