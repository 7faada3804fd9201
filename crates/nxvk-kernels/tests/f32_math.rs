//! The two forms of the f32 refined helpers (codegen.rs, `F64_REFINED_HELPERS`): through f64
//! with the `f32_math_via_f64` knob on, and in f32 alone with it off (the default, and what a
//! device without shaderFloat64 runs), each within its `accuracy::ulp_bound`; and the planning
//! that sends a device without shaderFloat64 to the f32 twins, or to the host where an op has
//! none.

mod common;

use common::device;
use nxvk_core::{Context, ContextOptions, DType, Device, Knobs};
use nxvk_kernels::Elem;
use nxvk_kernels::accuracy::{MeasuredOp, run, samples, ulp_bound, worst};
use nxvk_kernels::ops::{Path, binary_path, unary_path};
use nxvk_kernels::{BinaryOp, F32Math, UnaryOp, f32_math, unary_kernel};
use std::sync::{Arc, OnceLock};

const N_SAMPLES: usize = 1 << 12;

/// The refined ops: the measured ones whose f32 kernel has a twin.
fn refined_ops() -> Vec<MeasuredOp> {
    MeasuredOp::all()
        .into_iter()
        .filter(|op| {
            !matches!(
                op.name(),
                "sin" | "cos" | "tan" | "cbrt" | "pow" | "exp" | "cosh" | "rsqrt"
            )
        })
        .collect()
}

/// A context with the `f32_math_via_f64` knob set to `value`, whatever the environment says
/// (the fleet runs this binary under both).
fn context_with_knob(value: &str) -> Context {
    nxvk_kernels::set_output_poison(Some(common::POISON));
    Context::with_options(ContextOptions {
        knobs: Knobs::from_env().with_variant("f32_math_via_f64", value),
        ..ContextOptions::default()
    })
    .expect("a Vulkan device (lavapipe in CI)")
}

/// A device whose f32 kernels compute through f64 (lavapipe has shaderFloat64).
fn accurate_device() -> Arc<Device> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| context_with_knob("on"));
    context.device().expect("device")
}

/// A device whose f32 kernels compute in f32 alone.
fn f32_only_device() -> Arc<Device> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| context_with_knob("off"));
    context.device().expect("device")
}

/// `op`'s f32 results on the shared samples on `device`, and their largest error.
fn results_and_max_ulps(device: &Arc<Device>, op: MeasuredOp) -> (Vec<f64>, u64) {
    let inputs = samples(op, DType::F32, N_SAMPLES, 0xf32);
    let actual = run(device, op, DType::F32, &inputs).unwrap();
    let max_ulps = worst(op, DType::F32, &inputs, &actual).max_ulps;
    (actual, max_ulps)
}

#[test]
fn both_forms_meet_their_bounds() {
    let accurate = accurate_device();
    let portable = f32_only_device();
    assert_eq!(
        f32_math(&accurate),
        F32Math::ViaF64,
        "lavapipe has shaderFloat64"
    );
    assert_eq!(f32_math(&portable), F32Math::F32Only);
    let ops = refined_ops();
    assert_eq!(ops.len(), 16, "{ops:?}");
    let mut failures = Vec::new();
    let mut forms_differ = 0;
    for op in ops {
        let (via_f64_results, via_f64) = results_and_max_ulps(&accurate, op);
        let (f32_only_results, f32_only) = results_and_max_ulps(&portable, op);
        if via_f64 > ulp_bound(op.name(), DType::F32, F32Math::ViaF64)
            || f32_only > ulp_bound(op.name(), DType::F32, F32Math::F32Only)
        {
            failures.push(format!(
                "{}: {via_f64} ulps via f64, {f32_only} in f32",
                op.name()
            ));
        }
        let same_bits = |a: &f64, b: &f64| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
        forms_differ += usize::from(
            !via_f64_results
                .iter()
                .zip(&f32_only_results)
                .all(|(a, b)| same_bits(a, b)),
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Null arm: the knob really switches forms. The f64 forms round once, the f32 ones
    // (within 1 or 2 ulps) differ from them somewhere on the samples of nearly every op.
    assert!(
        forms_differ >= 14,
        "{forms_differ} of 16 ops differ between the forms"
    );
}

#[test]
fn refined_kernels_have_twins_without_float64() {
    let log = unary_kernel(UnaryOp::Log, Elem::F32).unwrap();
    assert!(log.float64);
    let portable = f32_only_device();
    let twin = log.for_device(&portable);
    assert_eq!(twin.name, "log_f32_portable");
    assert!(!twin.float64);
    assert_eq!(log.for_device(&accurate_device()).name, "log_f32");
    // f16 kernels keep the f32 forms; sin has no f32 form, so no twin.
    assert!(!unary_kernel(UnaryOp::Log, Elem::F16).unwrap().float64);
    let sin = unary_kernel(UnaryOp::Sin, Elem::F32).unwrap();
    assert!(sin.float64);
    assert_eq!(sin.for_device(&portable).name, "sin_f32");
}

#[test]
fn a_device_without_float64_runs_the_twins_and_sends_the_rest_to_the_host() {
    let device = device();
    let mut without = device.capabilities().clone();
    without.shader_float64 = false;
    let on = |capabilities| unary_path(UnaryOp::Log, DType::F32, capabilities).unwrap();
    assert_eq!(on(&without), Path::Gpu);
    assert_eq!(
        unary_path(UnaryOp::Sin, DType::F32, &without).unwrap(),
        Path::Fallback(DType::F32)
    );
    assert_eq!(
        binary_path(BinaryOp::Pow, DType::F32, DType::F32, &without).unwrap(),
        Path::Fallback(DType::F32)
    );
    assert_eq!(
        binary_path(BinaryOp::Add, DType::F32, DType::F32, &without).unwrap(),
        Path::Gpu
    );
    // Null arm: with shaderFloat64 every one of them runs on the GPU.
    let with = device.capabilities();
    assert_eq!(on(with), Path::Gpu);
    assert_eq!(
        unary_path(UnaryOp::Sin, DType::F32, with).unwrap(),
        Path::Gpu
    );
    assert_eq!(
        binary_path(BinaryOp::Pow, DType::F32, DType::F32, with).unwrap(),
        Path::Gpu
    );
}
