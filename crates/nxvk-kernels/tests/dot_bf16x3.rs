//! The opt-in f32 GEMM through split bf16 products (`NXVK_KNOB_F32_DOT=bf16x3`,
//! `DotPrecision::Bf16x3`): the split of f32 values into bf16 heads and tails, checked on any
//! device against a host model and against its error bound; and f32 products at that
//! precision within their documented bound of an f64 reference, infinities and NaNs included.
//! Devices without bf16 cooperative matrices (lavapipe) compute those products at the highest
//! precision, which meets the same bound; on one with them (the H200) the profile must show
//! the split kernel.

mod common;

use common::{SplitMix, non_finite_match};
use nxvk_core::{Context, ContextOptions, DType, Device, Knobs, Tensor};
use nxvk_kernels::Elem;
use nxvk_kernels::dot::{DotPrecision, dot};
use nxvk_kernels::dot_cooperative::has_cooperative_matrices;
use nxvk_kernels::dot_split::{BF16_SPLIT_GLSL, split_planes};
use std::sync::{Arc, OnceLock};

/// A device whose f32 products run at bf16x3 precision.
fn bf16x3_device() -> Arc<Device> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| {
        Context::with_options(ContextOptions {
            knobs: Knobs::from_env().with_variant("f32_dot", "bf16x3"),
            ..ContextOptions::default()
        })
        .expect("a Vulkan device (lavapipe in CI)")
    });
    context.device().expect("device")
}

// --- The split ---

/// The nearest bf16 to `bits` (ties to even), as the kernel rounds, for finite values.
fn nearest_bf16(bits: u32) -> u32 {
    (bits + 0x7fff + ((bits >> 16) & 1)) >> 16
}

/// The host model of `nx_bf16_split_one`: (head, tail).
fn split_model(bits: u32) -> (u32, u32) {
    if bits & 0x7f80_0000 == 0x7f80_0000 {
        let head = if bits & 0x007f_ffff != 0 {
            (bits >> 16) | 0x40
        } else {
            bits >> 16
        };
        return (head, 0);
    }
    let mut head = nearest_bf16(bits);
    if head & 0x7f80 == 0x7f80 {
        head = bits >> 16;
    }
    let rest = f32::from_bits(bits) - f32::from_bits(head << 16);
    (head, nearest_bf16(rest.to_bits()))
}

/// Splits `values` on `device`: (heads, finite heads, tails) as bf16 bit patterns.
fn split_on(device: &Arc<Device>, values: &[f32]) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
    let body = format!(
        "layout(local_size_x = 64) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Vectors {{ uvec4 v[]; }};
layout(push_constant, scalar) uniform Push {{ uint64_t source; uint64_t heads; uint64_t finite; uint64_t tails; uint count; }} push;
{BF16_SPLIT_GLSL}
void main() {{
    uint index = gl_GlobalInvocationID.x;
    if (index >= push.count) return;
    uvec4 tails;
    uvec4 heads = nx_bf16_split(Vectors(push.source).v[2u * index], Vectors(push.source).v[2u * index + 1u], tails);
    Vectors(push.heads).v[index] = heads;
    Vectors(push.finite).v[index] = nx_bf16_finite(heads);
    Vectors(push.tails).v[index] = tails;
}}
"
    );
    assert_eq!(values.len() % 8, 0);
    let groups = values.len() / 8;
    let kernel = device
        .kernel_from_glsl("bf16_split_test", &body, &[])
        .unwrap();
    let input = Tensor::from_slice(device, &[values.len()], values).unwrap();
    let outputs: Vec<Tensor> = (0..3)
        .map(|_| Tensor::empty(device, DType::U16, &[values.len()]).unwrap())
        .collect();
    let mut push = Vec::new();
    for tensor in std::iter::once(&input).chain(&outputs) {
        push.extend_from_slice(&tensor.device_address().unwrap().to_le_bytes());
    }
    push.extend_from_slice(&(groups as u32).to_le_bytes());
    let accesses = [
        nxvk_core::BufferAccess::Read(input.buffer()),
        nxvk_core::BufferAccess::Write(outputs[0].buffer()),
        nxvk_core::BufferAccess::Write(outputs[1].buffer()),
        nxvk_core::BufferAccess::Write(outputs[2].buffer()),
    ];
    device
        .dispatch(
            &kernel,
            [(groups as u32).div_ceil(64), 1, 1],
            &push,
            &accesses,
        )
        .unwrap();
    let read = |tensor: &Tensor| tensor.to_vec::<u16>().unwrap();
    (read(&outputs[0]), read(&outputs[1]), read(&outputs[2]))
}

fn bf16_value(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

/// The split's edge values and a random sample.
fn split_inputs() -> Vec<f32> {
    let mut values: Vec<f32> = [
        0x0000_0000u32, // +0
        0x8000_0000,    // -0
        0x3f80_0000,    // 1
        0x3f80_8000,    // 1 + 2^-8: a tie, to even (down)
        0x3f81_8000,    // a tie, to even (up)
        0x7f7f_ffff,    // the largest f32: rounding up would overflow, so it truncates
        0xff7f_ffff,
        0x0080_0000, // the smallest normal
        0x0000_0001, // the smallest subnormal
        0x7f80_0000, // +inf
        0xff80_0000, // -inf
        0x7fc0_0000, // a quiet NaN
        0x7f80_0001, // a NaN whose payload lies below the head
        0xffff_ffff,
        0x4049_0fdb, // pi
        0xc2f6_e979,
    ]
    .map(f32::from_bits)
    .to_vec();
    let mut random = SplitMix(0xb16);
    while values.len() < 4096 {
        let magnitude = 2f64.powi(random.below(200) as i32 - 100);
        let sign = if random.below(2) == 0 { 1.0 } else { -1.0 };
        values.push((sign * magnitude * (1.0 + random.unit())) as f32);
    }
    values
}

#[test]
fn f32_values_split_into_bf16_heads_and_tails() {
    let device = common::device();
    let values = split_inputs();
    let (heads, finite, tails) = split_on(&device, &values);
    let mut head_only_misses = 0;
    for (index, &value) in values.iter().enumerate() {
        let bits = value.to_bits();
        let (head, tail) = split_model(bits);
        let subnormal = value != 0.0 && value.abs() < f32::MIN_POSITIVE;
        assert_eq!(
            u32::from(heads[index]),
            head,
            "head of {value:e} ({bits:#x})"
        );
        // A driver that flushes subnormals (the H200's) subtracts them as zeros.
        assert!(
            u32::from(tails[index]) == tail || (subnormal && tails[index] == 0),
            "tail of {value:e} ({bits:#x}): {:#x}, expected {tail:#x}",
            tails[index]
        );
        let head_finite = head & 0x7f80 != 0x7f80;
        assert_eq!(
            u32::from(finite[index]),
            if head_finite { head } else { 0 },
            "finite head of {value:e}"
        );
        if value.is_finite() && value.abs() >= f32::MIN_POSITIVE {
            // What the split keeps: all but 2^-17 of the value (heads round to 8 bits, tails
            // round the rest to 8 more).
            let x = f64::from(value);
            let kept = bf16_value(heads[index]) + bf16_value(tails[index]);
            let bound = 2f64.powi(-17) * x.abs();
            assert!((x - kept).abs() <= bound, "{value:e}: kept {kept:e}");
            // Null arm: the head alone misses that bound for most values.
            if (x - bf16_value(heads[index])).abs() > bound {
                head_only_misses += 1;
            }
        }
    }
    assert!(head_only_misses > values.len() / 2, "{head_only_misses}");
}

/// The split pass over whole matrices, row-major and transposed: plane `p` of batch `b` holds
/// element (`o`, `i`) of the source at its dense axis `i`.
#[test]
fn matrices_split_into_three_planes() {
    let device = common::device();
    let values = split_inputs();
    let (batches, rows, columns) = (2, 16, 24);
    let source = &values[..batches * rows * columns];
    let tensor = Tensor::from_slice(&device, &[batches, rows, columns], source).unwrap();
    for transposed in [false, true] {
        let view = if transposed {
            // [batches, columns, rows], dense along its middle axis.
            tensor.transpose(&[0, 2, 1]).unwrap()
        } else {
            tensor.clone()
        };
        let planes = split_planes(&view).unwrap();
        let (outer, inner) = (rows, columns);
        assert_eq!(planes.shape(), [3, batches, outer, inner]);
        let bits: Vec<u16> = planes
            .to_vec::<nxvk_core::bf16>()
            .unwrap()
            .into_iter()
            .map(|value| value.to_bits())
            .collect();
        let plane_length = batches * outer * inner;
        for index in 0..plane_length {
            let value = source[index];
            let (head, tail) = split_model(value.to_bits());
            let finite = if head & 0x7f80 == 0x7f80 { 0 } else { head };
            let subnormal = value != 0.0 && value.abs() < f32::MIN_POSITIVE;
            let found = [0, 1, 2].map(|plane| u32::from(bits[plane * plane_length + index]));
            assert!(
                found[0] == head && found[1] == finite && (found[2] == tail || subnormal),
                "transposed {transposed}, element {index} ({value:e}): {found:x?}"
            );
        }
    }
    // What the pass cannot address is refused rather than split wrongly: rows of 12 elements
    // (not whole 8-element vectors) and f16 values.
    let ragged = Tensor::from_slice(&device, &[2, 16, 12], &source[..384]).unwrap();
    assert!(split_planes(&ragged).is_err());
    let halves = nxvk_kernels::as_type(&tensor, DType::F16).unwrap();
    assert!(split_planes(&halves).is_err());
}

// --- Products at bf16x3 precision ---

/// The documented bound of one bf16x3 element of C: 2^-16 of sum |a b| for the split (the
/// dropped tail x tail and the tails' own rounding, about 3 x 2^-18), plus an f32 sum of
/// length k rounded at each step.
fn bf16x3_bound(k: usize, magnitude: f64) -> f64 {
    (2f64.powi(-16) + (k as f64 + 2.0) * 2f64.powi(-23)) * magnitude
}

struct Product {
    m: usize,
    n: usize,
    k: usize,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Product {
    fn random(m: usize, n: usize, k: usize, seed: u64) -> Product {
        let mut random = SplitMix(seed);
        let mut draw = |count: usize| -> Vec<f32> {
            (0..count)
                .map(|_| (random.unit() * 2.0 - 1.0) as f32)
                .collect()
        };
        Product {
            m,
            n,
            k,
            a: draw(m * k),
            b: draw(k * n),
        }
    }

    /// (value, sum |a b|) of each element of C in f64, with each product taken by `multiply`
    /// (IEEE semantics for infinities and NaNs).
    fn reference(&self, multiply: impl Fn(f32, f32) -> f64) -> Vec<(f64, f64)> {
        let mut result = Vec::with_capacity(self.m * self.n);
        for row in 0..self.m {
            for column in 0..self.n {
                let (mut sum, mut magnitude) = (0.0, 0.0);
                for inner in 0..self.k {
                    let product = multiply(
                        self.a[row * self.k + inner],
                        self.b[inner * self.n + column],
                    );
                    sum += product;
                    magnitude += product.abs();
                }
                result.push((sum, magnitude));
            }
        }
        result
    }

    /// Elements of `actual` outside the bf16x3 bound of the exact product.
    fn misses(&self, actual: &[f64]) -> Vec<String> {
        let exact = self.reference(|a, b| f64::from(a) * f64::from(b));
        exact
            .iter()
            .zip(actual)
            .enumerate()
            .filter_map(|(index, (&(expected, magnitude), &value))| {
                let within = non_finite_match(value, expected)
                    .unwrap_or((value - expected).abs() <= bf16x3_bound(self.k, magnitude));
                (!within).then(|| format!("C[{index}] = {value:e}, expected {expected:e}"))
            })
            .collect()
    }

    /// C on `device` from A stored row-major, or column-major when `a_transposed`.
    fn run(&self, device: &Arc<Device>, a_transposed: bool) -> Vec<f64> {
        let c = if a_transposed {
            let mut stored = vec![0f32; self.m * self.k];
            for row in 0..self.m {
                for inner in 0..self.k {
                    stored[inner * self.m + row] = self.a[row * self.k + inner];
                }
            }
            let a = Tensor::from_slice(device, &[self.k, self.m], &stored).unwrap();
            let b = Tensor::from_slice(device, &[self.k, self.n], &self.b).unwrap();
            dot(&a, &[0], &[], &b, &[0], &[]).unwrap()
        } else {
            let a = Tensor::from_slice(device, &[self.m, self.k], &self.a).unwrap();
            let b = Tensor::from_slice(device, &[self.k, self.n], &self.b).unwrap();
            dot(&a, &[1], &[], &b, &[0], &[]).unwrap()
        };
        c.to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect()
    }
}

/// Runs `product` on the bf16x3 device, asserting that the split kernel ran where the device
/// has bf16 cooperative matrices.
fn run_bf16x3(product: &Product, a_transposed: bool) -> Vec<f64> {
    let device = bf16x3_device();
    assert_eq!(DotPrecision::of(&device), DotPrecision::Bf16x3);
    if has_cooperative_matrices(device.capabilities(), Elem::BF16) {
        let profile = device
            .profile_dispatches(|| {
                product.run(&device, a_transposed);
                Ok(())
            })
            .unwrap();
        assert!(
            profile
                .dispatches
                .iter()
                .any(|dispatch| dispatch.kernel.contains("f32_bf16x3")),
            "{:?}",
            profile.dispatches
        );
    }
    product.run(&device, a_transposed)
}

#[test]
fn bf16x3_products_stay_within_their_bound() {
    for (m, n, k, a_transposed, seed) in [
        (128, 128, 64, false, 1),
        (256, 128, 16, true, 2),
        (128, 256, 4096, false, 3),
        (128, 128, 1024, true, 4),
    ] {
        let product = Product::random(m, n, k, seed);
        let actual = run_bf16x3(&product, a_transposed);
        let misses = product.misses(&actual);
        assert!(
            misses.is_empty(),
            "{m}x{k}x{n}: {:?}",
            &misses[..misses.len().min(8)]
        );
    }
}

/// The bound catches a kernel that drops the tails: bf16 heads alone miss it.
#[test]
fn bf16x3_bound_rejects_head_only_products() {
    let product = Product::random(128, 128, 64, 1);
    let heads = |value: f32| f64::from(f32::from_bits(split_model(value.to_bits()).0 << 16));
    let head_only: Vec<f64> = product
        .reference(|a, b| heads(a) * heads(b))
        .into_iter()
        .map(|(value, _)| value)
        .collect();
    assert!(product.misses(&head_only).len() > 128 * 128 / 2);
}

/// Infinities and NaNs in the operands reach C as IEEE products do: an infinite head times a
/// zero tail must not turn an infinite element into NaN.
#[test]
fn bf16x3_products_keep_infinities_and_nans() {
    let mut product = Product::random(128, 128, 32, 5);
    // Row 3 of A holds +inf at k = 7, and row 7 of B holds 0.5, a bf16 value (its tails are
    // zero), outside column 9; column 9 of B holds -inf at k = 2; A[5][11] is NaN.
    product.a[3 * 32 + 7] = f32::INFINITY;
    product.b[2 * 128 + 9] = f32::NEG_INFINITY;
    for column in 0..128 {
        if column != 9 {
            product.b[7 * 128 + column] = 0.5;
        }
    }
    product.a[5 * 32 + 11] = f32::NAN;
    let actual = run_bf16x3(&product, false);
    let misses = product.misses(&actual);
    assert!(misses.is_empty(), "{:?}", &misses[..misses.len().min(8)]);
    assert_eq!(actual[3 * 128], f64::INFINITY);
    assert!(actual[5 * 128 + 1].is_nan());
}
