//! A tensor larger than maxStorageBufferRange (128 MiB on lavapipe) works: kernels reach it by
//! device address, so no descriptor range limits it.

mod common;
use common::{add_one, add_one_kernel, context, device};
use nxvk_core::{DType, Tensor};

#[test]
fn tensor_larger_than_the_storage_buffer_range() {
    let device = device();
    let range = context().capabilities().max_storage_buffer_range;
    let n_elements = ((range + (32 << 20)) / 4) as usize; // 32 MiB past the limit
    assert!(n_elements as u64 * 4 > range);
    let data: Vec<f32> = (0..n_elements).map(|i| (i % 1_000_003) as f32).collect();
    let source = Tensor::from_slice(&device, &[n_elements], &data).unwrap();
    let target = Tensor::empty(&device, DType::F32, &[n_elements]).unwrap();
    add_one(&device, &add_one_kernel(&device), &source, &target);
    let result: Vec<f32> = target.to_vec().unwrap();
    let wrong = result
        .iter()
        .zip(&data)
        .position(|(out, input)| *out != input + 1.0);
    assert_eq!(wrong, None, "first wrong element");
    // The last elements sit beyond the range a descriptor could bind.
    let tail = target
        .slice(&[n_elements - 3], &[3])
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(
        tail,
        data[n_elements - 3..]
            .iter()
            .map(|v| v + 1.0)
            .collect::<Vec<_>>()
    );
}
