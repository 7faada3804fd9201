//! An allocation larger than the device heap is an out-of-memory error naming the op, and the
//! device keeps working.

mod common;
use common::{context, device};
use nxvk_core::{DType, Error, Tensor};

#[test]
fn allocation_beyond_the_heap_is_an_error_and_the_next_call_works() {
    let device = device();
    let heap = context().capabilities().device_local_heap_bytes;
    let error = device.alloc("test", heap * 2).unwrap_err();
    assert!(
        matches!(error, Error::OutOfDeviceMemory { requested, .. } if requested >= heap * 2),
        "{error}"
    );

    let elements = (heap / 4 + 1) as usize;
    let error = Tensor::empty(&device, DType::F64, &[elements]).unwrap_err();
    assert!(
        matches!(error, Error::OutOfDeviceMemory { op: "empty", .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("out of device memory"),
        "{error}"
    );

    let tensor = Tensor::from_slice(&device, &[3], &[1u8, 2, 3]).unwrap();
    assert_eq!(tensor.to_vec::<u8>().unwrap(), vec![1, 2, 3]);
    assert!(!device.has_failed());
}
