//! Complex `dot` and `conv` on known values: the products of Complex.multiply summed, mixed
//! real/complex and c64/c128 operands with Nx's promotion, a deep contraction that takes the
//! split-K path, grouped and permuted convolutions. The random properties (any axes, views,
//! groups, dilations, permutations, Inf/NaN parts, null arms) run in `tests/dot.rs` and
//! `tests/conv.rs` over the complex dtypes too. Nothing here may take a host fallback.

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, DType, Tensor};
use nxvk_kernels::conv::{ConvOptions, conv};
use nxvk_kernels::dot::dot;

fn c64(
    device: &std::sync::Arc<nxvk_core::Device>,
    shape: &[usize],
    values: &[(f32, f32)],
) -> Tensor {
    let values: Vec<Complex32> = values
        .iter()
        .map(|&(re, im)| Complex32::new(re, im))
        .collect();
    Tensor::from_slice(device, shape, &values).unwrap()
}

fn no_fallbacks<T>(run: impl FnOnce() -> T) -> T {
    let before = device().counters().total_host_fallbacks();
    let result = run();
    assert_eq!(
        device().counters().total_host_fallbacks(),
        before,
        "a host fallback ran"
    );
    result
}

#[test]
fn dot_sums_complex_products() {
    let device = device();
    // (1 + 2i)(2 - i) + (3 - i)(0.5 + 4i) = (4 + 3i) + (5.5 + 11.5i)
    let a = c64(&device, &[1, 2], &[(1.0, 2.0), (3.0, -1.0)]);
    let b = c64(&device, &[2, 1], &[(2.0, -1.0), (0.5, 4.0)]);
    let product = no_fallbacks(|| dot(&a, &[1], &[], &b, &[0], &[]).unwrap());
    assert_eq!(product.shape(), &[1, 1]);
    assert_eq!(c64_values(&product), [(9.5, 14.5)]);
    // Null arm: the conjugate of b gives another result.
    let conjugated = nxvk_kernels::ops::conjugate(&b).unwrap();
    let other = dot(&a, &[1], &[], &conjugated, &[0], &[]).unwrap();
    assert_ne!(c64_values(&other), [(9.5, 14.5)]);
}

#[test]
fn dot_promotes_real_and_narrow_operands() {
    let device = device();
    let a = c64(&device, &[2], &[(1.0, 2.0), (3.0, -1.0)]);
    let real = Tensor::from_slice(&device, &[2], &[2.0f32, -1.0]).unwrap();
    let mixed = no_fallbacks(|| dot(&a, &[0], &[], &real, &[0], &[]).unwrap());
    assert_eq!(c64_values(&mixed), [(-1.0, 5.0)]);
    let wide = Tensor::from_slice(
        &device,
        &[2],
        &[Complex64::new(0.0, 1.0), Complex64::new(1.0, 0.0)],
    )
    .unwrap();
    let promoted = no_fallbacks(|| dot(&a, &[0], &[], &wide, &[0], &[]).unwrap());
    assert_eq!(promoted.dtype(), DType::C128);
    // (1 + 2i) i + (3 - i) = (-2 + i) + (3 - i)
    assert_eq!(
        promoted.to_vec::<Complex64>().unwrap(),
        [Complex64::new(1.0, 0.0)]
    );
}

#[test]
fn deep_complex_contractions_take_split_k() {
    // K = 5000 with 12 x 9 outputs: split-K partial sums. (1 + i)(1 - i) = 2 exactly, so every
    // output is 2K + 0i in f32 as well.
    let device = device();
    let (m, k, n) = (12, 5000, 9);
    let a = c64(&device, &[m, k], &vec![(1.0, 1.0); m * k]);
    let b = c64(&device, &[k, n], &vec![(1.0, -1.0); k * n]);
    let product = no_fallbacks(|| dot(&a, &[1], &[], &b, &[0], &[]).unwrap());
    assert!(
        c64_values(&product)
            .iter()
            .all(|&value| value == (2.0 * k as f32, 0.0))
    );
    // Batched: the same sums per batch entry.
    let a = c64(&device, &[2, 3, 40], &vec![(0.5, -0.5); 240]);
    let b = c64(&device, &[2, 4, 40], &vec![(2.0, 2.0); 320]);
    let product = no_fallbacks(|| dot(&a, &[2], &[0], &b, &[2], &[0]).unwrap());
    assert_eq!(product.shape(), &[2, 3, 4]);
    assert!(
        c64_values(&product)
            .iter()
            .all(|&value| value == (80.0, 0.0))
    );
}

#[test]
fn conv_sums_complex_products_per_window() {
    let device = device();
    // 1-D: x = [1, i, -1], w = [1 + i, 2]: y0 = (1 + i) + 2i, y1 = i (1 + i) - 2.
    let x = c64(&device, &[1, 1, 3], &[(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0)]);
    let w = c64(&device, &[1, 1, 2], &[(1.0, 1.0), (2.0, 0.0)]);
    let y = no_fallbacks(|| conv(&x, &w, &ConvOptions::default()).unwrap());
    assert_eq!(y.shape(), &[1, 1, 2]);
    assert_eq!(c64_values(&y), [(1.0, 3.0), (-3.0, 1.0)]);
    // Two feature groups, each filter seeing its own channel, with the output's batch and
    // channel axes swapped: filter 0 = 2 x channel 0, filter 1 = i x channel 1.
    let x = c64(
        &device,
        &[1, 2, 2],
        &[(1.0, 0.0), (2.0, 0.0), (0.0, 1.0), (3.0, -1.0)],
    );
    let w = c64(&device, &[2, 1, 1], &[(2.0, 0.0), (0.0, 1.0)]);
    let options = ConvOptions {
        feature_group_size: 2,
        output_permutation: Some(vec![1, 0, 2]),
        ..ConvOptions::default()
    };
    let y = no_fallbacks(|| conv(&x, &w, &options).unwrap());
    assert_eq!(y.shape(), &[2, 1, 2]);
    assert_eq!(
        c64_values(&y),
        [(2.0, 0.0), (4.0, 0.0), (-1.0, 0.0), (1.0, 3.0)]
    );
}
