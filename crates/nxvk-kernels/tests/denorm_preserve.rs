//! f32 subnormals survive the kernels on devices that can be asked to keep them
//! (`shaderDenormPreserveFloat32`: every kernel then declares DenormPreserve, see
//! `nxvk_glsl::request_denorm_preserve`). Elsewhere (lavapipe reports the property false) the
//! test prints why it checks nothing; the patch itself is unit-tested in nxvk-glsl.

mod common;

use common::*;
use nxvk_core::Tensor;
use nxvk_kernels::ops;
use nxvk_kernels::reference::Value;

#[test]
fn f32_subnormals_survive_where_the_device_keeps_them() {
    let device = device();
    let capabilities = device.capabilities();
    let widths = capabilities.denorm_preserve_widths();
    if widths.is_empty() {
        eprintln!(
            "skipped: {} reports shaderDenormPreserveFloat32 = {} ({:?} independence), so its kernels may flush f32 subnormals",
            capabilities.summary(),
            capabilities.shader_denorm_preserve_float32,
            capabilities.denorm_behavior_independence
        );
        return;
    }
    assert!(widths.contains(&32));
    let subnormals = [
        f32::from_bits(1),
        1e-40,
        -3e-42,
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
    ];
    let x = Tensor::from_slice(&device, &[subnormals.len()], &subnormals).unwrap();
    let one = Tensor::from_slice(&device, &[], &[1.0f32]).unwrap();
    let half = Tensor::from_slice(&device, &[], &[0.5f32]).unwrap();
    let cases = [
        (
            "x * 1",
            ops::multiply(&x, &one).unwrap(),
            subnormals.map(|v| v * 1.0),
        ),
        (
            "x + x",
            ops::add(&x, &x).unwrap(),
            subnormals.map(|v| v + v),
        ),
        (
            "x * 0.5",
            ops::multiply(&x, &half).unwrap(),
            subnormals.map(|v| v * 0.5),
        ),
    ];
    for (what, output, expected) in cases {
        let expected: Vec<Value> = expected
            .iter()
            .map(|&v| Value::Float(f64::from(v)))
            .collect();
        check_output_exact(what, &output, &[subnormals.len()], &expected).unwrap();
        // Null arm: a flushed result (zeros) fails the same comparison.
        let flushed: Vec<Value> = expected
            .iter()
            .map(|value| match value {
                Value::Float(v) if v.abs() < f64::from(f32::MIN_POSITIVE) => Value::Float(0.0),
                other => *other,
            })
            .collect();
        assert!(check_output_exact(what, &output, &[subnormals.len()], &flushed).is_err());
    }
}
