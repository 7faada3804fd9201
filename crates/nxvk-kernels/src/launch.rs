//! Launching an elementwise kernel: operand layouts to push constants and a parameter block.
//!
//! Before launch, axes are simplified: size-1 axes are dropped and neighbours that every
//! operand walks contiguously are merged. Operands that end up dense in output order take the
//! dense variant of the kernel (`dense_codegen.rs`: four elements per access) when every address
//! is aligned to a packet, else the linear fast path of the generic kernel (rank 0 in the push
//! constants, for views whose offset breaks the alignment); anything else passes shape and element
//! strides (zero for broadcast axes) inline in the push constants, or, for ranks above
//! `INLINE_WORDS / 3` after merging, in a parameter block that `Device::dispatch_with_params`
//! records together with the dispatch (so the block always lives in the dispatch's batch).

use crate::catalog::{CatalogKernel, DENSE_KERNELS};
use crate::codegen::{INLINE_WORDS, PUSH_CONSTANT_BYTES, WORKGROUP_SIZE};
use crate::dense_codegen::{DENSE_PUSH_CONSTANT_BYTES, PACKET_ELEMENTS, PACKETS_PER_ITERATION};
use nxvk_core::{BufferAccess, DeviceBuffer, Error, Result, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};

const NO_POISON: u64 = u64::MAX;
static OUTPUT_POISON: AtomicU64 = AtomicU64::new(NO_POISON);

/// Testing aid: when set, every output buffer of this crate's kernels is filled with `word`
/// before the kernel runs, so a kernel that forgets an element leaves a visible pattern
/// (pooled buffers would otherwise hold plausible old results). Process-wide.
pub fn set_output_poison(word: Option<u32>) {
    OUTPUT_POISON.store(word.map_or(NO_POISON, u64::from), Ordering::Relaxed);
}

/// Fills `buffer` with the test poison word, when one is set (see [`set_output_poison`]).
pub fn poison_output(buffer: &DeviceBuffer) -> Result<()> {
    let poison = OUTPUT_POISON.load(Ordering::Relaxed);
    if poison != NO_POISON {
        buffer.device().fill(buffer, poison as u32)?;
    }
    Ok(())
}

/// The largest element count the 32-bit index arithmetic of the kernels handles.
pub const MAX_ELEMENTS: usize = (u32::MAX - (1 << 26)) as usize;

/// Shape and per-operand strides after dropping size-1 axes and merging contiguous neighbours.
pub fn simplify(shape: &[usize], strides: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut merged_shape: Vec<usize> = Vec::new();
    let mut merged_strides: Vec<Vec<usize>> = vec![Vec::new(); strides.len()];
    for axis in 0..shape.len() {
        if shape[axis] == 1 {
            continue;
        }
        let mergeable = merged_shape.last().is_some()
            && strides
                .iter()
                .zip(&merged_strides)
                .all(|(operand, merged)| {
                    *merged.last().expect("same rank") == operand[axis] * shape[axis]
                });
        if mergeable {
            *merged_shape.last_mut().expect("checked") *= shape[axis];
            for (operand, merged) in strides.iter().zip(&mut merged_strides) {
                *merged.last_mut().expect("checked") = operand[axis];
            }
        } else {
            merged_shape.push(shape[axis]);
            for (operand, merged) in strides.iter().zip(&mut merged_strides) {
                merged.push(operand[axis]);
            }
        }
    }
    (merged_shape, merged_strides)
}

fn to_u32(op: &'static str, output: &Tensor, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::BadOperands {
        op,
        shapes: vec![output.shape().to_vec()],
        dtypes: vec![output.dtype()],
        detail: format!("{value} does not fit the kernels' 32-bit index arithmetic"),
    })
}

/// Runs `kernel` over `output` (a fresh contiguous tensor); `inputs` (one or two) must already
/// be views of the output's shape and of the kernel's input types.
pub(crate) fn launch(
    op: &'static str,
    kernel: &CatalogKernel,
    inputs: &[&Tensor],
    output: &Tensor,
) -> Result<()> {
    let n_elements = output.n_elements();
    if n_elements == 0 {
        return Ok(());
    }
    if n_elements > MAX_ELEMENTS {
        to_u32(op, output, usize::MAX)?;
    }
    let device = output.device();
    let kernel = kernel.for_device(device);
    let strides: Vec<Vec<usize>> = inputs
        .iter()
        .map(|input| input.layout().strides().to_vec())
        .collect();
    let (shape, strides) = simplify(output.shape(), &strides);
    let dense = is_linear(&shape, &strides);

    let address = |tensor: &Tensor| {
        tensor.device_address().ok_or_else(|| Error::BadOperands {
            op,
            shapes: vec![tensor.shape().to_vec()],
            dtypes: vec![tensor.dtype()],
            detail: "sub-byte tensors have no element addresses".into(),
        })
    };
    let input0 = address(inputs[0])?;
    let input1 = match inputs.get(1) {
        Some(tensor) => address(tensor)?,
        None => input0,
    };
    let output_address = address(output)?;
    if let Some((dense_kernel, addresses)) = dense_plan(kernel, inputs, output) {
        return launch_dense(dense_kernel, addresses, n_elements, inputs, output);
    }
    let mut inline_words = [0u32; INLINE_WORDS];
    // Layout words that do not fit inline go to a parameter block, whose address the device
    // writes into the push constants (bytes 24..32) when it records the dispatch.
    let mut params: Vec<u8> = Vec::new();
    let rank = if dense {
        0u32
    } else {
        let rank = shape.len();
        let mut words = Vec::with_capacity(rank * 3);
        for &size in &shape {
            words.push(to_u32(op, output, size)?);
        }
        for operand in 0..2 {
            let operand_strides = strides.get(operand).unwrap_or(&strides[0]);
            for &stride in operand_strides {
                words.push(to_u32(op, output, stride)?);
            }
        }
        if words.len() <= INLINE_WORDS {
            inline_words[..words.len()].copy_from_slice(&words);
        } else {
            params = words.iter().flat_map(|word| word.to_le_bytes()).collect();
        }
        rank as u32
    };

    let mut push = Vec::with_capacity(PUSH_CONSTANT_BYTES);
    for word in [input0, input1, output_address, 0] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&(n_elements as u32).to_le_bytes());
    push.extend_from_slice(&rank.to_le_bytes());
    for word in inline_words {
        push.extend_from_slice(&word.to_le_bytes());
    }

    poison_output(output.buffer())?;
    let loaded = kernel.load(device)?;
    let max_groups = device.capabilities().max_workgroup_count[0];
    let groups = (n_elements as u64)
        .div_ceil(u64::from(WORKGROUP_SIZE))
        .min(u64::from(max_groups)) as u32;
    let mut accesses: Vec<BufferAccess<'_>> = inputs
        .iter()
        .map(|input| BufferAccess::Read(input.buffer()))
        .collect();
    accesses.push(BufferAccess::Write(output.buffer()));
    if params.is_empty() {
        device.dispatch(&loaded, [groups, 1, 1], &push, &accesses)
    } else {
        device.dispatch_with_params(&loaded, [groups, 1, 1], &push, &params, 24, &accesses)
    }
}

/// True when simplified operands walk memory in output order (at most one axis, stride 1).
fn is_linear(shape: &[usize], strides: &[Vec<usize>]) -> bool {
    shape.len() <= 1
        && strides
            .iter()
            .all(|operand| operand.iter().all(|&stride| stride == 1))
}

/// The dense variant of `kernel` and the addresses (inputs 0 and 1, output) it runs on, when
/// the operands are dense in output order and every address is aligned to a packet.
fn dense_plan(
    kernel: &CatalogKernel,
    inputs: &[&Tensor],
    output: &Tensor,
) -> Option<(&'static CatalogKernel, [u64; 3])> {
    let variant = dense_variant(kernel)?;
    let strides: Vec<Vec<usize>> = inputs
        .iter()
        .map(|input| input.layout().strides().to_vec())
        .collect();
    let (shape, strides) = simplify(output.shape(), &strides);
    if !is_linear(&shape, &strides) {
        return None;
    }
    let aligned_address = |tensor: &Tensor| {
        let packet = tensor.dtype().byte_size()? * u64::from(PACKET_ELEMENTS);
        tensor
            .device_address()
            .filter(|address| address.is_multiple_of(packet))
    };
    let input0 = aligned_address(inputs[0])?;
    let input1 = match inputs.get(1) {
        Some(tensor) => aligned_address(tensor)?,
        None => input0,
    };
    Some((variant, [input0, input1, aligned_address(output)?]))
}

/// True when [`launch`] runs the dense variant of `kernel` on these operands (`inputs` being
/// views of the output's shape, as `launch` takes them): a test hook, so tests can prove they
/// exercise the variant they compare.
pub fn runs_dense(kernel: &CatalogKernel, inputs: &[&Tensor], output: &Tensor) -> bool {
    dense_plan(kernel, inputs, output).is_some()
}

/// The dense variant of an op kernel, if the catalog has one.
fn dense_variant(kernel: &CatalogKernel) -> Option<&'static CatalogKernel> {
    DENSE_KERNELS
        .binary_search_by(|(name, _)| (*name).cmp(kernel.name))
        .ok()
        .map(|position| DENSE_KERNELS[position].1)
}

/// Runs the dense variant over `n_elements` packet-aligned elements at `addresses` (inputs 0
/// and 1, output): one workgroup per 256 x 4 packets (one unrolled iteration per invocation)
/// up to the device's limit, the grid-stride loop covering the rest (about 65535 workgroups of
/// 256 invocations streamed best on the H200, where 256M f32 reach that limit).
fn launch_dense(
    kernel: &CatalogKernel,
    addresses: [u64; 3],
    n_elements: usize,
    inputs: &[&Tensor],
    output: &Tensor,
) -> Result<()> {
    let device = output.device();
    let mut push = Vec::with_capacity(DENSE_PUSH_CONSTANT_BYTES);
    for word in addresses {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&(n_elements as u32).to_le_bytes());
    push.extend_from_slice(&0u32.to_le_bytes());
    poison_output(output.buffer())?;
    let loaded = kernel.load(device)?;
    let packets = n_elements as u64 / u64::from(PACKET_ELEMENTS);
    let max_groups = device.capabilities().max_workgroup_count[0];
    let groups = packets
        .div_ceil(u64::from(WORKGROUP_SIZE * PACKETS_PER_ITERATION))
        .clamp(1, u64::from(max_groups)) as u32;
    let mut accesses: Vec<BufferAccess<'_>> = inputs
        .iter()
        .map(|input| BufferAccess::Read(input.buffer()))
        .collect();
    accesses.push(BufferAccess::Write(output.buffer()));
    device.dispatch(&loaded, [groups, 1, 1], &push, &accesses)
}

#[cfg(test)]
mod tests {
    use super::simplify;

    #[test]
    fn contiguous_axes_merge_and_broadcast_axes_stay() {
        let (shape, strides) = simplify(&[2, 3, 4], &[vec![12, 4, 1], vec![0, 1, 0]]);
        assert_eq!(shape, vec![2, 3, 4]);
        assert_eq!(strides, vec![vec![12, 4, 1], vec![0, 1, 0]]);
        let (shape, strides) = simplify(&[2, 1, 3, 4], &[vec![12, 99, 4, 1], vec![12, 7, 4, 1]]);
        assert_eq!(shape, vec![24]);
        assert_eq!(strides, vec![vec![1], vec![1]]);
        let (shape, _) = simplify(&[1, 1], &[vec![5, 5]]);
        assert!(shape.is_empty());
    }
}
