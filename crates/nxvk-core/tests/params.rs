//! Parameter blocks stay with their dispatch while other threads record and submit.

mod common;
use common::private_device;
use nxvk_core::{BufferAccess, DType, Tensor};

/// Copies word 0 of its parameter block into every element of the target.
const FROM_PARAMS: &str = "layout(local_size_x = 64) in;
layout(buffer_reference, scalar) buffer Words { uint values[]; };
layout(push_constant, scalar) uniform Push { Words params; Words target; uint count; } push;
void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index < push.count) push.target.values[index] = push.params.values[0];
}
";

#[test]
fn parameter_blocks_survive_concurrent_submits() {
    let device = private_device();
    let kernel = device
        .kernel_from_glsl("from_params", FROM_PARAMS, &[])
        .unwrap();
    std::thread::scope(|scope| {
        for thread in 0..4u32 {
            let device = device.clone();
            let kernel = kernel.clone();
            scope.spawn(move || {
                for round in 0..200u32 {
                    let value = thread * 1000 + round;
                    let target = Tensor::empty(&device, DType::U32, &[64]).unwrap();
                    let mut push = vec![0u8; 8];
                    push.extend_from_slice(&target.device_address().unwrap().to_le_bytes());
                    push.extend_from_slice(&64u32.to_le_bytes());
                    push.extend_from_slice(&0u32.to_le_bytes());
                    device
                        .dispatch_with_params(
                            &kernel,
                            [1, 1, 1],
                            &push,
                            &value.to_le_bytes(),
                            0,
                            &[BufferAccess::Write(target.buffer())],
                        )
                        .unwrap();
                    if round % 3 == 0 {
                        device.synchronize().unwrap(); // other threads' blocks must outlive this
                    }
                    assert_eq!(
                        target.to_vec::<u32>().unwrap(),
                        vec![value; 64],
                        "thread {thread} round {round}"
                    );
                }
            });
        }
    });
}

#[test]
fn a_parameter_address_outside_the_push_constants_is_an_error() {
    let device = private_device();
    let kernel = device
        .kernel_from_glsl("from_params", FROM_PARAMS, &[])
        .unwrap();
    let error = device
        .dispatch_with_params(&kernel, [1, 1, 1], &[0; 8], &[1, 2, 3, 4], 4, &[])
        .unwrap_err();
    assert!(error.to_string().contains("parameter address"), "{error}");
}
