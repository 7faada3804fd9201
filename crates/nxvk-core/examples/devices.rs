//! `cargo run -p nxvk-core --example devices`: what nxvk-core does, end to end, on the default
//! Vulkan device (the main job, `cargo xtask demo`, is the training demo of nxvk-fusion). It
//! lists the devices, opens the preferred one (lavapipe when there is no GPU), prints its
//! capabilities, runs a 1M-element computation as a chain of dependent kernels, checks every
//! element against the CPU, and prints the counters.

use nxvk_core::{BufferAccess, Context, DType, Tensor, list_adapters};

const AXPY: &str = "layout(local_size_x = 256) in;
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer Float { float value; };
layout(push_constant, scalar) uniform Push { uint64_t x; uint64_t y; uint64_t out_; float a; uint count; } push;
void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index < push.count) {
        uint64_t offset = uint64_t(index) * 4ul;
        Float(push.out_ + offset).value = push.a * Float(push.x + offset).value + Float(push.y + offset).value;
    }
}
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("Vulkan devices:");
    for adapter in list_adapters()? {
        let missing = adapter
            .missing_requirements()
            .map(|m| format!(" (unusable: lacks {m})"))
            .unwrap_or_default();
        println!(
            "  {}: {}{missing}",
            adapter.index,
            adapter.capabilities.summary()
        );
    }
    let context = Context::new()?;
    let capabilities = context.capabilities();
    println!("\nUsing {}", capabilities.summary());
    println!(
        "  f64 {}  i64 {}  f16 {}  int8 {}  subgroup {} {:?}\n  shared memory {} KiB  storage range {} MiB  push constants {} B  unified memory {}\n  cooperative matrices: {} (bf16 enabled: {})",
        capabilities.shader_float64,
        capabilities.shader_int64,
        capabilities.shader_float16,
        capabilities.shader_int8,
        capabilities.subgroup_size,
        capabilities.subgroup_operations,
        capabilities.max_shared_memory_bytes / 1024,
        capabilities.max_storage_buffer_range >> 20,
        capabilities.max_push_constants_bytes,
        capabilities.unified_memory,
        capabilities.cooperative_matrices.len(),
        capabilities.bfloat16_cooperative_matrix,
    );
    if let Some(matrices) = &capabilities.cooperative_matrix2 {
        println!(
            "  VK_NV_cooperative_matrix2: workgroups up to {} invocations, dimensions up to {}, {} B of shared memory reserved",
            matrices.max_workgroup_size, matrices.max_dimension, matrices.reserved_shared_memory
        );
        for shape in &matrices.flexible_dimensions {
            println!(
                "    {} x {} -> {} ({}) granularity {}x{}x{}, {} scope, {} invocations",
                shape.a_type,
                shape.b_type,
                shape.result_type,
                shape.c_type,
                shape.m_granularity,
                shape.n_granularity,
                shape.k_granularity,
                shape.scope,
                shape.workgroup_invocations
            );
        }
    }

    let device = context.device()?;
    let kernel = device.kernel_from_glsl("demo_axpy", AXPY, &[])?;
    let n = 1 << 20;
    let x_host: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let x = Tensor::from_slice(&device, &[n], &x_host)?;
    let mut y = Tensor::zeros(&device, DType::F32, &[n])?;
    let steps = 50;
    let start = std::time::Instant::now();
    for step in 0..steps {
        let out = Tensor::empty(&device, DType::F32, &[n])?;
        let mut push = Vec::new();
        for tensor in [&x, &y, &out] {
            push.extend_from_slice(&tensor.device_address().expect("f32").to_le_bytes());
        }
        push.extend_from_slice(&(0.5f32 + step as f32 * 0.01).to_le_bytes());
        push.extend_from_slice(&(n as u32).to_le_bytes());
        device.dispatch(
            &kernel,
            [(n as u32).div_ceil(256), 1, 1],
            &push,
            &[
                BufferAccess::Read(x.buffer()),
                BufferAccess::Read(y.buffer()),
                BufferAccess::Write(out.buffer()),
            ],
        )?;
        y = out;
    }
    let result: Vec<f32> = y.to_vec()?;
    let elapsed = start.elapsed();

    let mut expected = vec![0.0f32; n];
    for step in 0..steps {
        let a = 0.5f32 + step as f32 * 0.01;
        for (value, x) in expected.iter_mut().zip(&x_host) {
            *value += a * x;
        }
    }
    let mismatches = result
        .iter()
        .zip(&expected)
        .filter(|(g, c)| (*g - *c).abs() > 1e-3 * c.abs().max(1.0))
        .count();
    println!(
        "\n{steps} dependent y = a*x + y kernels over {n} f32 elements: {elapsed:.2?}, {mismatches} mismatches against the CPU"
    );
    println!("counters: {:?}", context.counters());
    if mismatches > 0 {
        return Err(format!("{mismatches} elements differ from the CPU reference").into());
    }
    Ok(())
}
