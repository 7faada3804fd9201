//! A shader that never ends: the wait returns a timeout error instead of hanging, and the
//! context rebuilds its device so the next call works.

mod common;
use common::{SPIN_GROUPS, SPIN_UNTIL_FLAG, add_one, add_one_kernel, context};
use nxvk_core::{BufferAccess, Error, Tensor};
use std::time::{Duration, Instant};

#[test]
fn endless_shader_times_out_and_the_next_call_works() {
    let context = context();
    let device = context.device().unwrap();
    device.set_timeout(Duration::from_millis(500));
    let flag = Tensor::from_slice(&device, &[1], &[0u32]).unwrap();
    let spin = device
        .kernel_from_glsl("spin_until_flag", SPIN_UNTIL_FLAG, &[])
        .unwrap();
    let push = flag.device_address().unwrap().to_le_bytes();
    device
        .dispatch(
            &spin,
            SPIN_GROUPS,
            &push,
            &[BufferAccess::Read(flag.buffer())],
        )
        .unwrap();

    let start = Instant::now();
    let error = device.synchronize().unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the wait gave up in time"
    );
    assert!(device.has_failed());
    assert!(
        matches!(flag.to_vec::<u32>(), Err(Error::DeviceLost { .. })),
        "the failed device refuses work"
    );

    let fresh = context.device().unwrap();
    assert!(!fresh.has_failed());
    assert_eq!(context.counters().device_rebuilds, 1);
    let source = Tensor::from_slice(&fresh, &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let target = Tensor::empty(&fresh, nxvk_core::DType::F32, &[4]).unwrap();
    add_one(&fresh, &add_one_kernel(&fresh), &source, &target);
    assert_eq!(target.to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0, 5.0]);
}
