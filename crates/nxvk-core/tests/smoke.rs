use nxvk_core::{BufferAccess, Context, Tensor};

const ADD_ONE: &str = "layout(local_size_x = 64) in;
layout(buffer_reference, scalar) buffer Floats { float values[]; };
layout(push_constant, scalar) uniform Push { Floats source; Floats target; uint count; } push;
void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index < push.count) push.target.values[index] = push.source.values[index] + 1.0;
}
";

#[test]
fn smoke() {
    let context = Context::new().unwrap();
    println!("{}", context.capabilities().summary());
    let device = context.device().unwrap();
    let data: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let input = Tensor::from_slice(&device, &[1000], &data).unwrap();
    let output = Tensor::empty(&device, nxvk_core::DType::F32, &[1000]).unwrap();
    let kernel = device.kernel_from_glsl("add_one", ADD_ONE, &[]).unwrap();
    let mut push = Vec::new();
    push.extend_from_slice(&input.device_address().unwrap().to_le_bytes());
    push.extend_from_slice(&output.device_address().unwrap().to_le_bytes());
    push.extend_from_slice(&1000u32.to_le_bytes());
    push.extend_from_slice(&0u32.to_le_bytes());
    device
        .dispatch(
            &kernel,
            [16, 1, 1],
            &push,
            &[
                BufferAccess::Read(input.buffer()),
                BufferAccess::Write(output.buffer()),
            ],
        )
        .unwrap();
    let result: Vec<f32> = output.to_vec().unwrap();
    assert_eq!(result[999], 1000.0);
    println!("{:?}", context.counters());
}
