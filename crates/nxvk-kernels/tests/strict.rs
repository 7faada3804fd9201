//! Strict mode (its own test binary: `set_strict` is process-wide). Under `Raise` a host
//! fallback is refused with an error naming op, dtype and shapes, while GPU ops still run; the
//! allowlist only tells the coverage check which fallbacks are expected, it never lets one
//! through strict mode.

mod common;

use nxvk_core::{DType, Error, Strict, Tensor, set_strict};
use nxvk_kernels::ops;

#[test]
fn strict_raise_refuses_fallbacks_and_keeps_gpu_ops() {
    let device = common::device();
    set_strict(Some(Strict::Raise));
    let nibbles = Tensor::from_bytes(&device, DType::S4, &[2], &[0x12]).unwrap();
    // Reductions of sub-byte types have no kernel.
    let error = nxvk_kernels::reduce::sum(&nibbles, None, false).unwrap_err();
    assert!(
        matches!(
            error,
            Error::HostFallbackRefused {
                op: "sum",
                dtype: DType::S4,
                ..
            }
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("sum") && message.contains("s4") && message.contains("[2]"),
        "{message}"
    );
    // Refused even though `* s4` is on the allowlist.
    assert!(nxvk_kernels::is_allowlisted("sum", DType::S4));
    // Element-wise ops on packed sub-byte tensors run on the GPU, except those whose result
    // depends on the width, which are fallbacks refused the same way.
    let packed = Tensor::from_bytes(&device, DType::U4, &[2], &[0x12]).unwrap();
    assert!(ops::as_type(&packed, DType::F32).is_ok());
    assert!(ops::negate(&packed).is_ok());
    let error = ops::population_count(&packed).unwrap_err();
    assert!(
        matches!(
            error,
            Error::HostFallbackRefused {
                op: "population_count",
                dtype: DType::U4,
                ..
            }
        ),
        "{error}"
    );
    // GPU paths are unaffected.
    let x = Tensor::from_slice(&device, &[3], &[1.0f32, 2.0, 3.0]).unwrap();
    assert_eq!(
        ops::multiply(&x, &x).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 9.0]
    );
    set_strict(None);
}
