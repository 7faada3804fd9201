//! Fused kernels compute the f32 refined helpers (log, tanh, sigmoid, ...) in the form the
//! device's `f32_math` says, as the catalog does: bit for bit the eager ops on devices with the
//! `f32_math_via_f64` knob on and off.

use nxvk_core::{Context, ContextOptions, DType, Device, Knobs, Tensor};
use nxvk_fusion::{GraphBuilder, PlanCache};
use nxvk_kernels::{F32Math, UnaryOp, f32_math, unary};
use std::sync::{Arc, OnceLock};

/// The chain: sigmoid(log1p(tanh(x))).
const CHAIN: [UnaryOp; 3] = [UnaryOp::Tanh, UnaryOp::Log1p, UnaryOp::Sigmoid];

fn context_with_knob(value: &str) -> Context {
    Context::with_options(ContextOptions {
        knobs: Knobs::from_env().with_variant("f32_math_via_f64", value),
        ..ContextOptions::default()
    })
    .expect("a Vulkan device (lavapipe in CI)")
}

fn device_with_knob(value: &'static str) -> Arc<Device> {
    static ON: OnceLock<Context> = OnceLock::new();
    static OFF: OnceLock<Context> = OnceLock::new();
    let cell = if value == "on" { &ON } else { &OFF };
    cell.get_or_init(|| context_with_knob(value))
        .device()
        .expect("device")
}

/// Inputs spread over (-8, 8), where the chain's three ops all round differently in the two
/// forms somewhere.
fn input(device: &Arc<Device>) -> Tensor {
    let values: Vec<f32> = (0..4096)
        .map(|i| (i as f32 - 2048.0) / 256.0 + 1e-3)
        .collect();
    Tensor::from_slice(device, &[values.len()], &values).unwrap()
}

/// The chain fused into one kernel and op by op, on `device`.
fn fused_and_eager(device: &Arc<Device>) -> (Vec<f32>, Vec<f32>) {
    let x = input(device);
    let mut builder = GraphBuilder::new();
    let mut node = builder.parameter(DType::F32, x.shape()).unwrap();
    for op in CHAIN {
        node = builder.unary(op, node).unwrap();
    }
    let graph = builder.finish(&[node]).unwrap();
    let fused = PlanCache::new(device).run(&graph, &[&x]).unwrap();
    let mut eager = x;
    for op in CHAIN {
        eager = unary(op, &eager).unwrap();
    }
    (fused[0].to_vec().unwrap(), eager.to_vec().unwrap())
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|value| value.to_bits()).collect()
}

#[test]
fn fused_kernels_follow_the_devices_f32_math() {
    let accurate = device_with_knob("on");
    let portable = device_with_knob("off");
    assert_eq!(
        f32_math(&accurate),
        F32Math::ViaF64,
        "lavapipe has shaderFloat64"
    );
    assert_eq!(f32_math(&portable), F32Math::F32Only);
    let (fused_accurate, eager_accurate) = fused_and_eager(&accurate);
    let (fused_portable, eager_portable) = fused_and_eager(&portable);
    assert_eq!(bits(&fused_accurate), bits(&eager_accurate));
    assert_eq!(bits(&fused_portable), bits(&eager_portable));
    // Null arm: the two forms differ, so the comparisons above could fail.
    assert_ne!(bits(&fused_accurate), bits(&fused_portable));
}
