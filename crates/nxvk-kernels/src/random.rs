//! Random numbers on the device, bit for bit as `Nx.Random` draws them: threefry2x32 with 20
//! rounds over Nx's counter layout, `split`, and `uniform` and `normal` in f16, bf16, f32 and
//! f64 (and c64/c128, whose real and imaginary parts are the draws of a trailing axis of 2).
//!
//! Nx.Random's `threefry2x32(key, shape)` hashes the counters `0..n` (padded with a 0 to an
//! even count) split into halves: pair `j` hashes `(j, h + j)` with `h = ceil(n / 2)`, and its
//! two output words land at positions `j` and `h + j`. One kernel computes a pair per
//! invocation and writes both words, or, for uniform floats, both converted values. 64-bit
//! draws hash `(i, n + i)` and join the words (`high << 32 | low`), as Nx's `random_bits`
//! with `bit_width: 64` does; 16-bit draws keep the low half of each word.
//!
//! A uniform value is Nx's: the draw's top mantissa bits under the exponent of 1.0, minus 1,
//! times `max - min` (computed in the type), plus `min`, at least `min`; each operation is
//! rounded to the type (`precise` keeps the driver from fusing multiply and add). `normal` is
//! `sqrt(2) * erf_inv(u) * standard_deviation + mean` with `u` uniform in
//! `(-1, 1)`, run through the catalog's eager ops.
//!
//! For fusion: threefry itself needs only u32 `add`, `bitwise_xor`, `left_shift`,
//! `right_shift` and `bitwise_or`, all in the op table; Nx.Random's graph also uses `iota`,
//! `bitcast`, a `while` loop with a tuple state, `concatenate`, `slice` and `reshape`.

use crate::grid::grid_stride_workgroups;
use crate::launch::poison_output;
use crate::operand_errors::bad_operands;
use crate::{ops, reference};
use nxvk_core::{BufferAccess, DType, Device, Layout, Result, Tensor};
use std::fmt::Write as _;
use std::sync::Arc;

const WORKGROUP_SIZE: u32 = 256;

/// What the threefry kernel writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Raw u32 words.
    Bits,
    /// Uniform floats of a dtype (f16, bf16, f32, f64).
    Uniform(DType),
}

/// The GLSL of the threefry kernel for `output`.
fn threefry_shader(output: Output) -> String {
    // Per output dtype: the storage type, and how a 32-bit (or 64-bit) draw becomes a value.
    let (storage, convert) = match output {
        Output::Bits => ("uint", "bits"),
        Output::Uniform(DType::F16) => ("float16_t", "uniform_f16(bits)"),
        Output::Uniform(DType::BF16) => ("uint16_t", "uniform_bf16(bits)"),
        Output::Uniform(DType::F64) => ("double", "uniform_f64(bits)"),
        Output::Uniform(_) => ("float", "uniform_f32(bits)"),
    };
    let wide = output == Output::Uniform(DType::F64);
    let bytes = match storage {
        "float16_t" | "uint16_t" => 2,
        "double" => 8,
        _ => 4,
    };
    let mut shader = String::new();
    let _ = write!(
        shader,
        "
layout(local_size_x = {WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = 4) readonly buffer Key {{ uint v[2]; }};
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
layout(push_constant, scalar) uniform Push {{
    Key key;
    uint64_t output0;
    uint64_t minimum_bits;
    uint64_t range_bits;
    uint count;
    uint pairs;
}} push;

uint rotate_left(uint value, uint distance) {{ return (value << distance) | (value >> (32u - distance)); }}

// threefry2x32 with 20 rounds, in Nx.Random's formulation.
uvec2 threefry(uint key1, uint key2, uvec2 counter) {{
    const uint rotations[8] = uint[8](13u, 15u, 26u, 6u, 17u, 29u, 16u, 24u);
    uint ks0 = key2;
    uint ks1 = key1 ^ key2 ^ 0x1BD11BDAu;
    uint ks2 = key1;
    uvec2 x = counter + uvec2(key1, key2);
    for (uint step = 1u; step <= 5u; step++) {{
        uint first = ((step & 1u) == 1u) ? 0u : 4u;
        for (uint round = 0u; round < 4u; round++) {{
            x.x += x.y;
            x.y = rotate_left(x.y, rotations[first + round]) ^ x.x;
        }}
        x.x += ks0;
        x.y += ks1 + step;
        uint rotated = ks0;
        ks0 = ks1;
        ks1 = ks2;
        ks2 = rotated;
    }}
    return x;
}}

float uniform_f32(uint bits) {{
    precise float unit = uintBitsToFloat((bits >> 9u) | 0x3F800000u) - 1.0;
    float minimum = uintBitsToFloat(uint(push.minimum_bits));
    precise float scaled = unit * uintBitsToFloat(uint(push.range_bits));
    precise float shifted = scaled + minimum;
    return max(shifted, minimum);
}}

float16_t uniform_f16(uint bits) {{
    precise float16_t unit = uint16BitsToFloat16(uint16_t(((bits & 0xFFFFu) >> 6u) | 0x3C00u)) - float16_t(1.0);
    float16_t minimum = uint16BitsToFloat16(uint16_t(push.minimum_bits));
    precise float16_t scaled = unit * uint16BitsToFloat16(uint16_t(push.range_bits));
    precise float16_t shifted = scaled + minimum;
    return max(shifted, minimum);
}}

// bf16 arithmetic in f32, rounded to bf16 (nearest even) after each operation: products of
// bf16 values are exact in f32, and f32 sums round to bf16 as a direct bf16 sum would.
float bf16_round(float value) {{
    uint bits = floatBitsToUint(value);
    return uintBitsToFloat(((bits + 0x7FFFu + ((bits >> 16u) & 1u)) >> 16u) << 16u);
}}

uint16_t uniform_bf16(uint bits) {{
    float unit = uintBitsToFloat((((bits & 0xFFFFu) >> 9u) | 0x3F80u) << 16u) - 1.0;
    float minimum = uintBitsToFloat(uint(push.minimum_bits) << 16u);
    float scaled = bf16_round(unit * uintBitsToFloat(uint(push.range_bits) << 16u));
    float shifted = bf16_round(scaled + minimum);
    return uint16_t(floatBitsToUint(max(shifted, minimum)) >> 16u);
}}

double uniform_f64(uint64_t bits) {{
    precise double unit = uint64BitsToDouble((bits >> 12ul) | 0x3FF0000000000000ul) - 1.0lf;
    double minimum = uint64BitsToDouble(push.minimum_bits);
    precise double scaled = unit * uint64BitsToDouble(push.range_bits);
    precise double shifted = scaled + minimum;
    return max(shifted, minimum);
}}

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    uint key1 = push.key.v[0];
    uint key2 = push.key.v[1];
    for (uint pair = gl_GlobalInvocationID.x; pair < push.pairs; pair += threads) {{
{body}
    }}
}}
",
        body = if wide {
            format!(
                "        uvec2 words = threefry(key1, key2, uvec2(pair, push.count + pair));
        uint64_t bits = (uint64_t(words.x) << 32ul) | uint64_t(words.y);
        Output(push.output0 + uint64_t(pair) * {bytes}ul).v = {convert};"
            )
        } else {
            format!(
                "        uint second = push.pairs + pair;
        uvec2 words = threefry(key1, key2, uvec2(pair, second < push.count ? second : 0u));
        uint bits = words.x;
        Output(push.output0 + uint64_t(pair) * {bytes}ul).v = {convert};
        if (second < push.count) {{
            bits = words.y;
            Output(push.output0 + uint64_t(second) * {bytes}ul).v = {convert};
        }}"
            )
        },
    );
    shader
}

/// Nx.Random's key for `seed`: `[seed >> 32, seed & 0xFFFFFFFF]` as u32.
pub fn key(device: &Arc<Device>, seed: u64) -> Result<Tensor> {
    Tensor::from_slice(device, &[2], &[(seed >> 32) as u32, seed as u32])
}

fn check_key(op: &'static str, key: &Tensor) -> Result<()> {
    if key.dtype() != DType::U32 || key.shape() != [2] {
        return Err(bad_operands(
            op,
            &[key],
            "a key is a u32 tensor of shape [2]".into(),
        ));
    }
    Ok(())
}

/// Runs the threefry kernel into a fresh tensor of `dtype` and `shape`.
fn run(
    op: &'static str,
    key: &Tensor,
    shape: &[usize],
    output: Output,
    dtype: DType,
    (minimum_bits, range_bits): (u64, u64),
) -> Result<Tensor> {
    check_key(op, key)?;
    let key = crate::movement::contiguous(key)?;
    let device = key.device();
    let result = Tensor::empty(device, dtype, shape)?;
    let count = result.n_elements();
    if count == 0 {
        return Ok(result);
    }
    poison_output(result.buffer())?;
    let count_word = u32::try_from(count)
        .ok()
        .filter(|&count| count < u32::MAX / 2)
        .ok_or_else(|| {
            bad_operands(op, &[&key], format!("{count} draws exceed 32-bit counters"))
        })?;
    let pairs = if dtype == DType::F64 {
        count_word
    } else {
        count_word.div_ceil(2)
    };
    let name = match output {
        Output::Bits => "threefry_bits".to_owned(),
        Output::Uniform(dtype) => format!("threefry_uniform_{dtype}"),
    };
    let kernel = device.kernel_from_glsl(&name, &threefry_shader(output), &[])?;
    let mut push = Vec::with_capacity(40);
    for word in [
        key.device_address().unwrap_or_default(),
        result.device_address().unwrap_or_default(),
        minimum_bits,
        range_bits,
    ] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&count_word.to_le_bytes());
    push.extend_from_slice(&pairs.to_le_bytes());
    let groups = grid_stride_workgroups(device, u64::from(pairs), WORKGROUP_SIZE);
    device.dispatch(
        &kernel,
        [groups, 1, 1],
        &push,
        &[
            BufferAccess::Read(key.buffer()),
            BufferAccess::Write(result.buffer()),
        ],
    )?;
    Ok(result)
}

/// Nx.Random's `threefry2x32(key, shape)`: u32 words in Nx's counter layout (its
/// `random_bits` with `bit_width: 32`).
pub fn bits(key: &Tensor, shape: &[usize]) -> Result<Tensor> {
    run("random_bits", key, shape, Output::Bits, DType::U32, (0, 0))
}

/// Nx.Random's `split`: `parts` new keys, as a u32 tensor of shape `[parts, 2]`.
pub fn split(key: &Tensor, parts: usize) -> Result<Tensor> {
    run("split", key, &[parts, 2], Output::Bits, DType::U32, (0, 0))
}

/// The bits of `value` rounded to the float `dtype`, in the low bits of a u64.
fn float_bits(dtype: DType, value: f64) -> u64 {
    let bytes = reference::encode(dtype, &[reference::Value::Float(value)]);
    let mut word = [0u8; 8];
    word[..bytes.len()].copy_from_slice(&bytes);
    u64::from_le_bytes(word)
}

/// `value` rounded to the float `dtype`.
fn rounded(dtype: DType, value: f64) -> f64 {
    match reference::round_to(reference::Value::Float(value), dtype) {
        reference::Value::Float(value) => value,
        _ => value,
    }
}

/// The real dtype a complex result draws in, and the draws' shape.
fn real_draws(
    op: &'static str,
    key: &Tensor,
    dtype: DType,
    shape: &[usize],
) -> Result<(DType, Vec<usize>)> {
    match dtype {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Ok((dtype, shape.to_vec())),
        DType::C64 | DType::C128 => {
            let mut pairs = shape.to_vec();
            pairs.push(2);
            Ok((
                if dtype == DType::C64 {
                    DType::F32
                } else {
                    DType::F64
                },
                pairs,
            ))
        }
        _ => Err(bad_operands(
            op,
            &[key],
            format!(
                "{dtype} is not a float or complex type with a GPU generator (f16, bf16, f32, f64, c64, c128)"
            ),
        )),
    }
}

/// Views draws of shape `[..., 2]` as the complex `dtype` of `shape` (real part first, as Nx
/// joins them).
fn as_complex(draws: Tensor, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    if !dtype.is_complex() {
        return Ok(draws);
    }
    Tensor::from_parts(draws.buffer().clone(), Layout::contiguous(shape), dtype)
}

/// Nx.Random's `uniform_split(key, minimum, maximum, shape: shape, type: dtype)`: floats in
/// `[minimum, maximum)`.
pub fn uniform(
    key: &Tensor,
    shape: &[usize],
    (minimum, maximum): (f64, f64),
    dtype: DType,
) -> Result<Tensor> {
    const OP: &str = "uniform";
    let (real, draw_shape) = real_draws(OP, key, dtype, shape)?;
    let (minimum, maximum) = (rounded(real, minimum), rounded(real, maximum));
    let range = rounded(real, maximum - minimum);
    let draws = run(
        OP,
        key,
        &draw_shape,
        Output::Uniform(real),
        real,
        (float_bits(real, minimum), float_bits(real, range)),
    )?;
    as_complex(draws, dtype, shape)
}

/// Nx.Random's `normal_split(key, mean, standard_deviation, shape: shape, type: dtype)`.
pub fn normal(
    key: &Tensor,
    shape: &[usize],
    (mean, standard_deviation): (f64, f64),
    dtype: DType,
) -> Result<Tensor> {
    const OP: &str = "normal";
    let (real, draw_shape) = real_draws(OP, key, dtype, shape)?;
    // Nx's next float above -1 in the type.
    let above_minus_one = match real {
        DType::F64 => f64::from_bits((-1.0f64).to_bits() - 1),
        DType::F32 => f64::from(f32::from_bits((-1.0f32).to_bits() - 1)),
        DType::F16 => f64::from(nxvk_core::f16::from_bits(
            nxvk_core::f16::from_f32(-1.0).to_bits() - 1,
        )),
        _ => f64::from(nxvk_core::bf16::from_bits(
            nxvk_core::bf16::from_f32(-1.0).to_bits() - 1,
        )),
    };
    let unit = uniform(key, &draw_shape, (above_minus_one, 1.0), real)?;
    let device = key.device();
    let scalar = |value: f64| {
        Tensor::from_bytes(
            device,
            real,
            &[],
            &reference::encode(real, &[reference::Value::Float(value)]),
        )
    };
    let normal = ops::multiply(&scalar(std::f64::consts::SQRT_2)?, &ops::erf_inv(&unit)?)?;
    let scaled = ops::multiply(&scalar(standard_deviation)?, &normal)?;
    let shifted = ops::add(&scaled, &scalar(mean)?)?;
    as_complex(shifted, dtype, shape)
}
