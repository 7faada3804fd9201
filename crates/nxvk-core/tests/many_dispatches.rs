//! 100,000 small dependent dispatches through the pool: the result is right, the pool reuses
//! buffers instead of allocating, and device memory returns to its baseline afterwards.

mod common;
use common::{add_one, add_one_kernel, private_device};
use nxvk_core::{DType, Tensor};

const DISPATCHES: usize = 100_000;

#[test]
fn hundred_thousand_dispatches_return_memory_to_baseline() {
    let device = private_device();
    let kernel = add_one_kernel(&device);
    device.trim_pool().unwrap();
    let baseline = device.counters();

    let mut current = Tensor::from_slice(&device, &[256], &[0.0f32; 256]).unwrap();
    for _ in 0..DISPATCHES {
        let next = Tensor::empty(&device, DType::F32, &[256]).unwrap();
        add_one(&device, &kernel, &current, &next);
        current = next; // the old tensor goes back to the pool while the GPU may still read it
    }
    let values: Vec<f32> = current.to_vec().unwrap();
    assert!(
        values.iter().all(|&value| value == DISPATCHES as f32),
        "{:?}",
        &values[..4]
    );
    drop(current);

    let after = device.counters();
    assert_eq!(after.dispatches - baseline.dispatches, DISPATCHES as u64);
    let misses = after.pool_misses - baseline.pool_misses;
    let hits = after.pool_hits - baseline.pool_hits;
    assert!(
        misses < 16,
        "the pool allocated {misses} buffers for {DISPATCHES} tensors"
    );
    assert!(hits >= DISPATCHES as u64 - 16, "{hits} pool hits");
    assert!(
        after.barriers - baseline.barriers >= DISPATCHES as u64 - 1,
        "a dependent chain needs a barrier per dispatch"
    );
    assert!(
        after.submits - baseline.submits
            >= (DISPATCHES / device.knobs().submit_threshold as usize) as u64
    );

    device.trim_pool().unwrap();
    assert_eq!(device.pool_cached_bytes(), 0);
    assert_eq!(
        device.counters().device_bytes_live,
        baseline.device_bytes_live,
        "device memory back to baseline"
    );
}

#[test]
fn independent_dispatches_need_no_barriers() {
    let device = private_device();
    let kernel = add_one_kernel(&device);
    let source = Tensor::from_slice(&device, &[64], &[1.0f32; 64]).unwrap();
    let targets: Vec<Tensor> = (0..8)
        .map(|_| Tensor::empty(&device, DType::F32, &[64]).unwrap())
        .collect();
    device.synchronize().unwrap();
    let before = device.counters();
    for target in &targets {
        add_one(&device, &kernel, &source, target);
    }
    let after = device.counters();
    assert!(
        after.barriers - before.barriers <= 1,
        "eight readers of one buffer writing eight others need at most the batch's entry barrier"
    );
    for target in &targets {
        assert_eq!(target.to_vec::<f32>().unwrap(), vec![2.0; 64]);
    }
}

#[test]
fn the_first_dispatch_of_a_batch_is_ordered_before_its_readers() {
    let device = private_device();
    let kernel = add_one_kernel(&device);
    let source = Tensor::from_slice(&device, &[64], &[1.0f32; 64]).unwrap();
    let middle = Tensor::empty(&device, DType::F32, &[64]).unwrap();
    let target = Tensor::empty(&device, DType::F32, &[64]).unwrap();
    device.synchronize().unwrap(); // the next dispatch opens a new command buffer
    add_one(&device, &kernel, &source, &middle);
    let before = device.counters().barriers;
    add_one(&device, &kernel, &middle, &target);
    assert_eq!(
        device.counters().barriers - before,
        1,
        "reading what the batch's first dispatch wrote needs a barrier"
    );
    assert_eq!(target.to_vec::<f32>().unwrap(), vec![3.0; 64]);
}
