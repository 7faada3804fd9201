//! A device created with raw Vulkan calls (nxvk-core's `newer_features.rs`, the path a device
//! offering VK_KHR_shader_bfloat16 takes) runs kernels that need each feature nxvk enables, with
//! the same results, byte for byte, as the device vulkano creates. Lavapipe offers none of the
//! newer features, so the raw path is forced here. On a device that offers them (the H100 and
//! H200) both contexts are created raw, and the test shows only that the raw device computes.

mod common;

use common::{SplitMix, device};
use nxvk_core::{Context, ContextOptions, DType, Device, Tensor};
use nxvk_kernels::index::indexed_add;
use nxvk_kernels::unary;
use nxvk_kernels::{BinaryOp, ReduceOp, ReduceOptions, UnaryOp, as_type, binary, dot, reduce};
use std::sync::Arc;

fn raw_device() -> Arc<Device> {
    let context = Context::with_options(ContextOptions {
        raw_device_creation: true,
        ..ContextOptions::default()
    })
    .expect("a device created with raw calls");
    context.device().expect("device")
}

fn random_f64(count: usize, seed: u64) -> Vec<f64> {
    let mut random = SplitMix(seed);
    (0..count).map(|_| random.unit() * 8.0 - 4.0).collect()
}

/// The workloads: each result's bytes. Each one needs one of the enabled features: f64
/// arithmetic and math (shaderFloat64), f16 and u8 storage and arithmetic (16- and 8-bit
/// storage, shaderFloat16, shaderInt8), 64-bit integers, a subgroup reduction, float atomics
/// (indexed_add) and the tiled GEMM; every kernel reaches its buffers by device address.
fn workloads(device: &Arc<Device>) -> Vec<(&'static str, Vec<u8>)> {
    let values = random_f64(4099, 0x5eed);
    let f64s = Tensor::from_slice(device, &[4099], &values).unwrap();
    let f32s = as_type(&f64s, DType::F32).unwrap();
    let f16s = as_type(&f64s, DType::F16).unwrap();
    let u8s = as_type(&unary(UnaryOp::Abs, &f32s).unwrap(), DType::U8).unwrap();
    let s64s = as_type(&f64s, DType::S64).unwrap();
    let matrix = f32s
        .slice(&[0], &[64 * 64])
        .unwrap()
        .reshape(&[64, 64])
        .unwrap();
    let targets = Tensor::zeros(device, DType::F32, &[16]).unwrap();
    let positions: Vec<i32> = (0..4099).map(|index| index * 7 % 16).collect();
    let indices = Tensor::from_slice(device, &[4099, 1], &positions).unwrap();
    // Whole numbers add up exactly in any order, so the atomics' order cannot show.
    let whole = unary(UnaryOp::Round, &f32s).unwrap();
    let results = [
        ("exp f64", unary(UnaryOp::Exp, &f64s)),
        ("f16 add", binary(BinaryOp::Add, &f16s, &f16s)),
        ("u8 multiply", binary(BinaryOp::Multiply, &u8s, &u8s)),
        ("s64 remainder", binary(BinaryOp::Remainder, &s64s, &s64s)),
        (
            "f32 sum",
            reduce(ReduceOp::Sum, &f32s, &ReduceOptions::default()),
        ),
        (
            "f32 indexed_add",
            indexed_add(&targets, &indices, &whole, None),
        ),
        ("f32 dot", dot(&matrix, &[1], &[], &matrix, &[0], &[])),
    ];
    results
        .into_iter()
        .map(|(name, result)| {
            let tensor = result.unwrap_or_else(|error| panic!("{name}: {error}"));
            (name, tensor.to_bytes().unwrap())
        })
        .collect()
}

#[test]
fn a_raw_created_device_computes_what_vulkanos_does() {
    let expected = workloads(&device());
    let actual = workloads(&raw_device());
    for ((name, expected), (_, actual)) in expected.iter().zip(&actual) {
        assert!(
            expected == actual,
            "{name} differs on the raw-created device"
        );
    }
    // Null arm: the comparison tells different workloads apart.
    assert_ne!(expected[0].1, expected[1].1);
}
