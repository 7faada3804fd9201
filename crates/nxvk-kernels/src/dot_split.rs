//! f32 operands split into bf16 planes for the bf16x3 GEMM (`dot::DotPrecision::Bf16x3`).
//!
//! One pass per operand writes three dense bf16 planes in the operand's own orientation: the
//! heads (each value's nearest bf16), the finite heads (infinities and NaNs as zeros) and the
//! tails (the bf16 nearest to what the head leaves). The cooperative kernel then stages them
//! as it stages bf16 operands (`dot_cooperative.rs`). Splitting inside the GEMM instead, on the
//! way into shared memory, measured 16.4 TFLOP/s for sgemm_8192 on an H100 against 38.2 for
//! the plain f32 GEMM: every workgroup along N split the same rows of A again, and the integer
//! work outweighed the tensor cores' (docs/BENCHMARKS.md, sixteenth session).

use crate::dot::Matrices;
use nxvk_core::{BufferAccess, DType, Error, Result, Tensor};

const OP: &str = "dot";
const WORKGROUP_SIZE: u32 = 256;

/// Splits f32 values into bf16 heads and tails on bits, so that no driver's rounding mode or
/// subnormal flushing enters the split itself. The head is the nearest bf16 (ties to even),
/// truncated instead where rounding up would overflow; the tail is the bf16 nearest to
/// x - head, which f32 holds exactly. Infinities and NaNs are their own heads (NaNs quiet,
/// since their payload may lie below the head) with zero tails.
pub const BF16_SPLIT_GLSL: &str = "
uvec2 nx_bf16_split_one(uint bits) {
    if ((bits & 0x7f800000u) == 0x7f800000u) {
        uint head = (bits & 0x007fffffu) != 0u ? ((bits >> 16) | 0x40u) : (bits >> 16);
        return uvec2(head, 0u);
    }
    uint head = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    if ((head & 0x7f80u) == 0x7f80u) {
        head = bits >> 16;
    }
    uint rest = floatBitsToUint(uintBitsToFloat(bits) - uintBitsToFloat(head << 16));
    return uvec2(head, (rest + 0x7fffu + ((rest >> 16) & 1u)) >> 16);
}
// Eight f32 values (first, then next) as eight bf16 heads, returned, and tails, packed two to
// a word, the lower element in the low half.
uvec4 nx_bf16_split(uvec4 first, uvec4 next, out uvec4 tails) {
    uvec2 s0 = nx_bf16_split_one(first.x);
    uvec2 s1 = nx_bf16_split_one(first.y);
    uvec2 s2 = nx_bf16_split_one(first.z);
    uvec2 s3 = nx_bf16_split_one(first.w);
    uvec2 s4 = nx_bf16_split_one(next.x);
    uvec2 s5 = nx_bf16_split_one(next.y);
    uvec2 s6 = nx_bf16_split_one(next.z);
    uvec2 s7 = nx_bf16_split_one(next.w);
    tails = uvec4(s0.y | (s1.y << 16), s2.y | (s3.y << 16), s4.y | (s5.y << 16), s6.y | (s7.y << 16));
    return uvec4(s0.x | (s1.x << 16), s2.x | (s3.x << 16), s4.x | (s5.x << 16), s6.x | (s7.x << 16));
}
// Packed bf16 heads with infinities and NaNs replaced by zeros.
uint nx_bf16_finite_pair(uint pair) {
    uint low = (pair & 0x7f80u) == 0x7f80u ? 0u : (pair & 0xffffu);
    uint high = (pair & 0x7f800000u) == 0x7f800000u ? 0u : (pair & 0xffff0000u);
    return low | high;
}
uvec4 nx_bf16_finite(uvec4 heads) {
    return uvec4(nx_bf16_finite_pair(heads.x), nx_bf16_finite_pair(heads.y),
        nx_bf16_finite_pair(heads.z), nx_bf16_finite_pair(heads.w));
}
";

/// The pass: vector `v` of the planes (8 elements along the dense axis) comes from the
/// source's batch `b`, outer index `o` and inner elements `8 i .. 8 i + 7`.
fn split_shader() -> String {
    format!(
        "layout(local_size_x = {WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = 16) readonly buffer Source {{ uvec4 v[]; }};
layout(buffer_reference, scalar, buffer_reference_align = 16) writeonly buffer Planes {{ uvec4 v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t planes;
    uint batch_stride;
    uint outer_stride;
    uint outer;
    uint inner_vectors;
    uint vectors;
}} push;
{BF16_SPLIT_GLSL}
void main() {{
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint v = gl_GlobalInvocationID.x; v < push.vectors; v += stride) {{
        uint inner = v % push.inner_vectors;
        uint rest = v / push.inner_vectors;
        uint64_t element = uint64_t(rest / push.outer) * uint64_t(push.batch_stride)
            + uint64_t(rest % push.outer) * uint64_t(push.outer_stride) + uint64_t(inner) * 8ul;
        Source pair = Source(push.source + element * 4ul);
        uvec4 tails;
        uvec4 heads = nx_bf16_split(pair.v[0], pair.v[1], tails);
        // Byte offsets in 64 bits: planes may pass 4 GiB.
        uint64_t slot = push.planes + uint64_t(v) * 16ul;
        uint64_t plane = uint64_t(push.vectors) * 16ul;
        Planes(slot).v[0] = heads;
        Planes(slot + plane).v[0] = nx_bf16_finite(heads);
        Planes(slot + 2ul * plane).v[0] = tails;
    }}
}}
"
    )
}

/// `operand` (f32, `batches` matrices of `first` x `second`, dense along one axis with rows of
/// whole 8-element vectors, 16-byte aligned: the cooperative kernel's conditions) as three
/// bf16 planes, each `batches` dense matrices in the operand's orientation, one after the
/// other; the returned strides address the first plane, and plane `p` starts
/// `p * batches * batch_stride` elements later.
pub(crate) fn split_operand(
    operand: &Matrices,
    batches: usize,
    first: usize,
    second: usize,
) -> Result<Matrices> {
    let device = operand.tensor.device();
    let second_dense = operand.second_stride == 1;
    let (outer, inner, outer_stride) = if second_dense {
        (first, second, operand.first_stride)
    } else {
        (second, first, operand.second_stride)
    };
    let planes = Tensor::empty(device, DType::BF16, &[3, batches, outer, inner])?;
    let vectors = batches * outer * inner / 8;
    let word = |value: usize| {
        u32::try_from(value).map_err(|_| Error::BadOperands {
            op: OP,
            shapes: vec![vec![batches, first, second]],
            dtypes: vec![DType::F32],
            detail: format!("{value} does not fit the bf16 split's 32-bit indices"),
        })
    };
    let mut push = Vec::with_capacity(36);
    for tensor in [&operand.tensor, &planes] {
        let address = tensor.device_address().ok_or_else(|| Error::BadOperands {
            op: OP,
            shapes: vec![tensor.shape().to_vec()],
            dtypes: vec![tensor.dtype()],
            detail: "the bf16 split needs element addresses".into(),
        })?;
        push.extend_from_slice(&address.to_le_bytes());
    }
    for value in [
        operand.batch_stride,
        outer_stride,
        outer,
        inner / 8,
        vectors,
    ] {
        push.extend_from_slice(&word(value)?.to_le_bytes());
    }
    if vectors > 0 {
        let kernel = device.kernel_from_glsl("dot_bf16_split", &split_shader(), &[])?;
        let limit = device.capabilities().max_workgroup_count[0];
        let groups = (vectors as u32).div_ceil(WORKGROUP_SIZE).min(limit);
        device.dispatch(
            &kernel,
            [groups, 1, 1],
            &push,
            &[
                BufferAccess::Read(operand.tensor.buffer()),
                BufferAccess::Write(planes.buffer()),
            ],
        )?;
    }
    let (first_stride, second_stride) = if second_dense { (inner, 1) } else { (1, inner) };
    Ok(Matrices {
        tensor: planes,
        batch_stride: outer * inner,
        first_stride,
        second_stride,
    })
}

/// `matrices` (f32, `[batches, first, second]`, dense along its last or middle axis, with
/// 8-element rows and 16-byte alignment) as a `[3, batches, outer, inner]` bf16 tensor of heads,
/// finite heads and tails, where `inner` is the dense axis: the planes the bf16x3 GEMM reads.
pub fn split_planes(matrices: &Tensor) -> Result<Tensor> {
    let bad = |detail: &str| Error::BadOperands {
        op: OP,
        shapes: vec![matrices.shape().to_vec()],
        dtypes: vec![matrices.dtype()],
        detail: detail.into(),
    };
    let (&[batches, first, second], &[batch_stride, first_stride, second_stride]) =
        (matrices.shape(), matrices.layout().strides())
    else {
        return Err(bad("the bf16 split takes [batches, rows, columns]"));
    };
    let (dense, outer_stride) = if second_stride == 1 {
        (second, first_stride)
    } else {
        (first, second_stride)
    };
    let aligned = matrices
        .device_address()
        .is_some_and(|address| address.is_multiple_of(16));
    if matrices.dtype() != DType::F32
        || (first_stride != 1 && second_stride != 1)
        || !dense.is_multiple_of(8)
        || !outer_stride.is_multiple_of(4)
        || !batch_stride.is_multiple_of(4)
        || !aligned
    {
        return Err(bad(
            "the bf16 split takes f32 matrices dense along one axis, 8-element rows, aligned",
        ));
    }
    let operand = Matrices {
        tensor: matrices.clone(),
        batch_stride,
        first_stride,
        second_stride,
    };
    split_operand(&operand, batches, first, second).map(|split| split.tensor)
}
