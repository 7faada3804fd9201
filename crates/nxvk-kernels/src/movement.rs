//! Data movement: materialising views (`contiguous`, `transpose`, `broadcast`), `reverse`,
//! strided `slice`, `pad` (lo, hi, interior, negative), `concatenate`, `stack` and `put_slice`,
//! all through one strided copy kernel per element size.
//!
//! Every op here is a set of copies from a (possibly reversed) view of an input into a region
//! of a fresh contiguous output: the copy takes the shape, signed input strides and unsigned
//! output strides, so a reversal is a negative stride, a strided slice a multiplied stride and
//! an interior pad a multiplied output stride. Values are moved as raw bits, so every dtype of
//! 1, 2, 4, 8 or 16 bytes (complex included) moves the same way; sub-byte types move as bytes
//! (unpacked to s8/u8 on the GPU, moved, packed again). A copy whose innermost output axis is strided in the input while another
//! axis is contiguous there (a materialised transpose, possibly batched) runs the tiled
//! transpose kernel instead: shared-memory tiles make both its reads and its writes coalesced,
//! where the strided copy would read one memory segment per element.
//!
//! Operands of several tensors may have different types: the result has an explicit type (by
//! default their merged one, `Nx.Type.merge`) and each operand is converted into it on load by
//! a converting copy (`movement_codegen::CopyVariant`), as Nx.BinaryBackend converts each
//! element with `as_type`. Starts of `slice` and `put_slice` may be tensors, read on the
//! device ([`Starts::Tensor`], [`Starts::PerAxis`]).

use crate::catalog::{COPY_KERNELS, TRANSPOSE_KERNELS};
use crate::catalog::{device_supports, elem_of};
use crate::grid::grid_stride_workgroups;
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::movement_codegen::CopyVariant;
use crate::movement_codegen::{
    COPY_ELEMS, COPY_PARAMS_ADDRESS_OFFSET, COPY_PUSH_CONSTANT_BYTES, COPY_WORKGROUP_SIZE,
    TILE_SIDE, TRANSPOSE_PUSH_CONSTANT_BYTES,
};
use crate::operand_errors::bad_operands;
use crate::slice_starts;
use crate::types::merge;
use nxvk_core::{
    BufferAccess, DType, Device, DeviceBuffer, Error, Result, Tensor, contiguous_strides,
};
use std::sync::Arc;

/// Nx's names of the data-movement ops this module runs on the GPU.
pub const MOVEMENT_OPS: &[&str] = &[
    "broadcast",
    "stack",
    "transpose",
    "reverse",
    "slice",
    "pad",
    "concatenate",
    "put_slice",
];

/// True when data movement of `dtype` runs on the GPU: every type (sub-byte ones through
/// their byte carriers, see [`on_byte_carriers`]).
pub const fn runs_on_gpu(dtype: DType) -> bool {
    dtype.byte_size().is_some() || byte_carrier(dtype).is_some()
}

/// The byte type sub-byte elements move as (they have no addresses of their own): s8 for s2
/// and s4, u8 for u2 and u4.
const fn byte_carrier(dtype: DType) -> Option<DType> {
    match dtype {
        DType::S2 | DType::S4 => Some(DType::S8),
        DType::U2 | DType::U4 => Some(DType::U8),
        _ => None,
    }
}

/// Runs a movement whose result has the sub-byte type `dtype` on byte carriers: each operand is
/// converted to `dtype` by `as_type` (Nx's rules for that width; converting straight to the
/// carrier would saturate infinities at the carrier's limits), widened to the carrier, moved,
/// and packed again. Every step runs on the GPU (`narrow_types.rs` packs and unpacks).
fn on_byte_carriers(
    operands: &[&Tensor],
    dtype: DType,
    carrier: DType,
    run: impl FnOnce(&[&Tensor]) -> Result<Tensor>,
) -> Result<Tensor> {
    let widened = operands
        .iter()
        .map(|operand| crate::ops::as_type(&crate::ops::as_type(operand, dtype)?, carrier))
        .collect::<Result<Vec<Tensor>>>()?;
    let widened: Vec<&Tensor> = widened.iter().collect();
    crate::ops::as_type(&run(&widened)?, dtype)
}

/// A fresh contiguous tensor for an op's result (poisoned in tests).
fn fresh(device: &Arc<Device>, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let output = Tensor::empty(device, dtype, shape)?;
    if output.n_elements() > 0 {
        poison_output(output.buffer())?;
    }
    Ok(output)
}

/// A source for one copy: an element of the input's buffer and signed strides from it.
struct Source<'a> {
    tensor: &'a Tensor,
    /// Element index (in the input's buffer) of the source's logical element zero.
    start: usize,
    strides: Vec<i64>,
    /// When set, the address of logical element zero is computed on the device and lies in
    /// this 8-byte buffer (`start` is then unused).
    start_address: Option<&'a DeviceBuffer>,
}

impl<'a> Source<'a> {
    /// The tensor's own view.
    fn of(tensor: &'a Tensor) -> Self {
        Source {
            tensor,
            start: tensor.layout().offset(),
            strides: tensor
                .layout()
                .strides()
                .iter()
                .map(|&stride| stride as i64)
                .collect(),
            start_address: None,
        }
    }
}

/// The region of a contiguous output one copy writes: its first element and strides.
struct Target<'a> {
    tensor: &'a Tensor,
    start: usize,
    strides: &'a [usize],
    /// As [`Source::start_address`]: the first element's address, computed on the device.
    start_address: Option<&'a DeviceBuffer>,
}

impl<'a> Target<'a> {
    fn at(tensor: &'a Tensor, start: usize, strides: &'a [usize]) -> Self {
        Target {
            tensor,
            start,
            strides,
            start_address: None,
        }
    }
}

/// `tensor` ready to be copied into an output of `dtype`: itself when the copy kernels move
/// it as it is or convert it on load (two native real types the device computes in), else
/// cast by [`as_type`](crate::ops::as_type) first (complex operands, 8-bit floats and sub-byte
/// integers take that op's own GPU or counted host path).
fn operand_as(tensor: &Tensor, dtype: DType) -> Result<Tensor> {
    let capabilities = tensor.device().capabilities();
    let converts_on_load =
        |dtype| elem_of(dtype).is_some_and(|elem| device_supports(capabilities, elem));
    if tensor.dtype() == dtype || (converts_on_load(tensor.dtype()) && converts_on_load(dtype)) {
        Ok(tensor.clone())
    } else {
        crate::ops::as_type(tensor, dtype)
    }
}

/// Copies `source` (of `shape`) into `target`'s region, converting the elements when their
/// types differ (see [`operand_as`]).
fn copy(op: &'static str, source: &Source<'_>, shape: &[usize], target: &Target<'_>) -> Result<()> {
    let n_elements: usize = shape.iter().product();
    if n_elements == 0 {
        return Ok(());
    }
    let (input, output) = (source.tensor, target.tensor);
    let unsupported = |dtype, detail: &str| Error::Unsupported {
        op,
        dtype,
        detail: detail.into(),
    };
    let byte_size = |dtype: DType| {
        dtype
            .byte_size()
            .ok_or_else(|| unsupported(dtype, "sub-byte elements have no addresses to copy"))
    };
    let (input_bytes, output_bytes) = (byte_size(input.dtype())?, byte_size(output.dtype())?);
    let converting = input.dtype() != output.dtype();
    // Only raw copies move 16-byte elements (complex operands are cast before a conversion).
    let (shape, input_strides, output_strides, kernel_bytes, scale) =
        kernel_axes(shape, &source.strides, target.strides, input_bytes);
    if n_elements as u64 * scale > MAX_ELEMENTS as u64 {
        return Err(bad_operands(
            op,
            &[input],
            format!("{n_elements} elements exceed the kernels' 32-bit index arithmetic"),
        ));
    }
    let too_large = |value: String| {
        bad_operands(
            op,
            &[input],
            format!("{value} does not fit the copy kernel's 32-bit layout words"),
        )
    };
    let address = |tensor: &Tensor, start: usize, bytes: u64, computed: Option<&DeviceBuffer>| {
        computed.map_or(
            tensor.buffer().device_address() + start as u64 * bytes,
            DeviceBuffer::device_address,
        )
    };
    let addresses = [
        address(input, source.start, input_bytes, source.start_address),
        address(output, target.start, output_bytes, target.start_address),
    ];
    let input_indirect = source.start_address.is_some();
    let output_indirect = target.start_address.is_some();
    // The catalog's copy for the element size, when the copy neither converts nor reads its
    // addresses from the device.
    let mut catalog_index = None;
    let variant = if converting {
        CopyVariant {
            input: elem_of(input.dtype())
                .ok_or_else(|| unsupported(input.dtype(), "no conversion on load"))?,
            output: elem_of(output.dtype())
                .ok_or_else(|| unsupported(output.dtype(), "no conversion on store"))?,
            input_indirect,
            output_indirect,
        }
    } else {
        let index = COPY_ELEMS
            .iter()
            .position(|&elem| u64::from(elem.bits() / 8) == kernel_bytes)
            .ok_or_else(|| unsupported(input.dtype(), "no copy kernel for its element size"))?;
        if !input_indirect && !output_indirect {
            if let Some(across) = tiled_axis(&input_strides, &output_strides) {
                let tiled = Tiled {
                    shape: &shape,
                    input_strides: &input_strides,
                    output_strides: &output_strides,
                    across,
                };
                let words = tiled.words().map_err(too_large)?;
                return transpose_tiles(words, addresses, index, input, output);
            }
            catalog_index = Some(index);
        }
        CopyVariant {
            input: COPY_ELEMS[index],
            output: COPY_ELEMS[index],
            input_indirect,
            output_indirect,
        }
    };
    let mut words: Vec<u32> = Vec::with_capacity(shape.len() * 3 + 1);
    for &size in &shape {
        words.push(u32::try_from(size).map_err(|_| too_large(format!("size {size}")))?);
    }
    for &stride in &input_strides {
        let word = i32::try_from(stride).map_err(|_| too_large(format!("stride {stride}")))?;
        words.push(word as u32);
    }
    for &stride in &output_strides {
        words.push(u32::try_from(stride).map_err(|_| too_large(format!("stride {stride}")))?);
    }
    words.push(0);
    let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let count = n_elements as u64 * scale;
    let mut push = Vec::with_capacity(COPY_PUSH_CONSTANT_BYTES);
    for word in [addresses[0], addresses[1], 0] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&(count as u32).to_le_bytes());
    push.extend_from_slice(&(shape.len() as u32).to_le_bytes());
    let device = output.device();
    let kernel = match catalog_index {
        Some(index) => COPY_KERNELS[index].load(device)?,
        None => device.kernel_from_glsl(&variant.name(), &variant.shader(), &[])?,
    };
    let groups = grid_stride_workgroups(device, count, COPY_WORKGROUP_SIZE);
    let mut accesses = vec![
        BufferAccess::Read(input.buffer()),
        BufferAccess::Write(output.buffer()),
    ];
    accesses.extend(
        [source.start_address, target.start_address]
            .into_iter()
            .flatten()
            .map(BufferAccess::Read),
    );
    device.dispatch_with_params(
        &kernel,
        [groups, 1, 1],
        &push,
        &params,
        COPY_PARAMS_ADDRESS_OFFSET,
        &accesses,
    )
}

/// The axes a copy kernel walks for a copy of `shape` with these element strides: 16-byte
/// elements (c128) move as two 8-byte halves along an extra innermost axis, then axes merge.
/// Returns shape, input and output strides, the kernel's element bytes and the element scale.
fn kernel_axes(
    shape: &[usize],
    input_strides: &[i64],
    output_strides: &[usize],
    element_bytes: u64,
) -> (Vec<usize>, Vec<i64>, Vec<usize>, u64, u64) {
    let (mut shape, mut input_strides, mut output_strides, kernel_bytes, scale) = if element_bytes
        == 16
    {
        let mut shape = shape.to_vec();
        shape.push(2);
        let mut input_strides: Vec<i64> = input_strides.iter().map(|stride| stride * 2).collect();
        input_strides.push(1);
        let mut output_strides: Vec<usize> =
            output_strides.iter().map(|stride| stride * 2).collect();
        output_strides.push(1);
        (shape, input_strides, output_strides, 8u64, 2u64)
    } else {
        (
            shape.to_vec(),
            input_strides.to_vec(),
            output_strides.to_vec(),
            element_bytes,
            1u64,
        )
    };
    merge_axes(&mut shape, &mut input_strides, &mut output_strides);
    (shape, input_strides, output_strides, kernel_bytes, scale)
}

/// True when materialising `view` ([`contiguous`]) runs the tiled transpose kernel rather than
/// the strided copy: a test hook, so tests can prove they exercise the tiles.
pub fn transposes_by_tiles(view: &Tensor) -> bool {
    let Some(element_bytes) = view.dtype().byte_size() else {
        return false;
    };
    let source = Source::of(view);
    let (_, input_strides, output_strides, _, _) = kernel_axes(
        view.shape(),
        &source.strides,
        &contiguous_strides(view.shape()),
        element_bytes,
    );
    !view.layout().is_contiguous() && tiled_axis(&input_strides, &output_strides).is_some()
}

/// The axis to tile against the innermost one, when a (merged) copy is a transpose: the
/// innermost axis is contiguous in the output but strided in the input, and another axis,
/// `across`, is contiguous in the input. Reading along one and writing along the other, the
/// strided copy would touch a new memory segment per element on one side.
fn tiled_axis(input_strides: &[i64], output_strides: &[usize]) -> Option<usize> {
    let along = output_strides.len().checked_sub(1)?;
    if output_strides[along] != 1 || input_strides[along] == 1 {
        return None;
    }
    input_strides[..along]
        .iter()
        .position(|&stride| stride == 1)
}

/// A copy run as a batch of 2-D tiled transposes of axes `across` and the innermost one.
struct Tiled<'a> {
    shape: &'a [usize],
    input_strides: &'a [i64],
    output_strides: &'a [usize],
    across: usize,
}

impl Tiled<'_> {
    fn along(&self) -> usize {
        self.shape.len() - 1
    }

    fn batch_axes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.along()).filter(|&axis| axis != self.across)
    }

    /// Parameter words: batch shape, signed batch input strides, batch output strides; then
    /// the push words after the three addresses. Errors name a value that does not fit.
    fn words(&self) -> std::result::Result<(Vec<u32>, Vec<u32>), String> {
        let size = |value: usize| u32::try_from(value).map_err(|_| format!("size {value}"));
        let signed = |value: i64| {
            i32::try_from(value)
                .map_err(|_| format!("stride {value}"))
                .map(|word| word as u32)
        };
        let mut params = Vec::new();
        for axis in self.batch_axes() {
            params.push(size(self.shape[axis])?);
        }
        for axis in self.batch_axes() {
            params.push(signed(self.input_strides[axis])?);
        }
        for axis in self.batch_axes() {
            params.push(size(self.output_strides[axis])?);
        }
        params.push(0);
        let side = TILE_SIDE as usize;
        let across_tiles = self.shape[self.across].div_ceil(side);
        let along_tiles = self.shape[self.along()].div_ceil(side);
        let batch: usize = self.batch_axes().map(|axis| self.shape[axis]).product();
        let push = vec![
            size(self.shape[self.across])?,
            size(self.shape[self.along()])?,
            signed(self.input_strides[self.along()])?,
            size(self.output_strides[self.across])?,
            size(self.shape.len() - 2)?,
            size(across_tiles)?,
            size(along_tiles)?,
            size(across_tiles * along_tiles * batch)?,
        ];
        Ok((params, push))
    }
}

/// Records a tiled transpose with parameter and push words (from [`Tiled::words`]) between
/// `addresses` (input, output), on the kernel for element size `index`.
fn transpose_tiles(
    (params, push_words): (Vec<u32>, Vec<u32>),
    addresses: [u64; 2],
    index: usize,
    input: &Tensor,
    output: &Tensor,
) -> Result<()> {
    let params: Vec<u8> = params.iter().flat_map(|word| word.to_le_bytes()).collect();
    let mut push = Vec::with_capacity(TRANSPOSE_PUSH_CONSTANT_BYTES);
    for word in [addresses[0], addresses[1], 0] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    for word in &push_words {
        push.extend_from_slice(&word.to_le_bytes());
    }
    let tiles = push_words[push_words.len() - 1];
    let device = output.device();
    let kernel = TRANSPOSE_KERNELS[index].load(device)?;
    let max_groups = device.capabilities().max_workgroup_count[0];
    device.dispatch_with_params(
        &kernel,
        [tiles.clamp(1, max_groups), 1, 1],
        &push,
        &params,
        COPY_PARAMS_ADDRESS_OFFSET,
        &[
            BufferAccess::Read(input.buffer()),
            BufferAccess::Write(output.buffer()),
        ],
    )
}

/// Drops size-1 axes and merges neighbours that both sides walk contiguously.
fn merge_axes(shape: &mut Vec<usize>, input: &mut Vec<i64>, output: &mut Vec<usize>) {
    let (mut merged_shape, mut merged_input, mut merged_output) =
        (Vec::new(), Vec::new(), Vec::new());
    for axis in 0..shape.len() {
        if shape[axis] == 1 {
            continue;
        }
        let size = shape[axis];
        match (
            merged_shape.last_mut(),
            merged_input.last_mut(),
            merged_output.last_mut(),
        ) {
            (Some(last_size), Some(last_input), Some(last_output))
                if *last_input == input[axis] * size as i64
                    && *last_output == output[axis] * size =>
            {
                *last_size *= size;
                *last_input = input[axis];
                *last_output = output[axis];
            }
            _ => {
                merged_shape.push(size);
                merged_input.push(input[axis]);
                merged_output.push(output[axis]);
            }
        }
    }
    *shape = merged_shape;
    *input = merged_input;
    *output = merged_output;
}

/// The view materialised as a fresh contiguous tensor (the tensor itself when it already is
/// contiguous).
pub fn contiguous(input: &Tensor) -> Result<Tensor> {
    if input.layout().is_contiguous() {
        return Ok(input.clone());
    }
    if let Some(carrier) = byte_carrier(input.dtype()) {
        return on_byte_carriers(&[input], input.dtype(), carrier, |x| contiguous(x[0]));
    }
    let output = fresh(input.device(), input.dtype(), input.shape())?;
    let strides = contiguous_strides(input.shape());
    copy(
        "contiguous",
        &Source::of(input),
        input.shape(),
        &Target::at(&output, 0, &strides),
    )?;
    Ok(output)
}

/// Nx's `transpose`, materialised: axis `i` of the result is axis `permutation[i]` of `input`.
pub fn transpose(input: &Tensor, permutation: &[usize]) -> Result<Tensor> {
    contiguous(&input.transpose(permutation)?)
}

/// Nx's `broadcast`, materialised: `input`'s axis `i` becomes axis `axes[i]` of `shape`.
pub fn broadcast(input: &Tensor, shape: &[usize], axes: &[usize]) -> Result<Tensor> {
    contiguous(&input.broadcast(shape, axes)?)
}

/// Nx's `stack`: the operands (one shape, any types: the result has their merged type) joined
/// along a new axis `axis`.
pub fn stack(inputs: &[&Tensor], axis: usize) -> Result<Tensor> {
    const OP: &str = "stack";
    let Some(first) = inputs.first() else {
        return Err(bad_operands(OP, inputs, "needs at least one tensor".into()));
    };
    if axis > first.shape().len() || inputs.iter().any(|input| input.shape() != first.shape()) {
        return Err(bad_operands(
            OP,
            inputs,
            format!("operands must share a shape, and axis {axis} must be at most their rank"),
        ));
    }
    let mut expanded_shape = first.shape().to_vec();
    expanded_shape.insert(axis, 1);
    // The new size-1 axis as a view (a broadcast), so strided operands need no copy first.
    let kept_axes: Vec<usize> = (0..expanded_shape.len())
        .filter(|&other| other != axis)
        .collect();
    let expanded: Vec<Tensor> = inputs
        .iter()
        .map(|input| input.broadcast(&expanded_shape, &kept_axes))
        .collect::<Result<_>>()?;
    let expanded: Vec<&Tensor> = expanded.iter().collect();
    concatenate(&expanded, axis)
}

/// Nx's `reverse` over `axes`.
pub fn reverse(input: &Tensor, axes: &[usize]) -> Result<Tensor> {
    const OP: &str = "reverse";
    if let Some(carrier) = byte_carrier(input.dtype()) {
        return on_byte_carriers(&[input], input.dtype(), carrier, |x| reverse(x[0], axes));
    }
    let shape = input.shape();
    if let Some(&axis) = axes.iter().find(|&&axis| axis >= shape.len()) {
        return Err(bad_operands(
            OP,
            &[input],
            format!("axis {axis} out of range for rank {}", shape.len()),
        ));
    }
    let mut source = Source::of(input);
    for (axis, &size) in shape.iter().enumerate() {
        if axes.contains(&axis) && size > 0 {
            source.start =
                (source.start as i64 + (size as i64 - 1) * source.strides[axis]) as usize;
            source.strides[axis] = -source.strides[axis];
        }
    }
    let output = fresh(input.device(), input.dtype(), shape)?;
    let strides = contiguous_strides(shape);
    copy(OP, &source, shape, &Target::at(&output, 0, &strides))?;
    Ok(output)
}

/// Where a slice's window (or a put_slice's update) starts, per axis; every form is clamped
/// as Nx clamps it, so that the window fits.
#[derive(Debug, Clone, Copy)]
pub enum Starts<'a> {
    /// Known on the host.
    Fixed(&'a [i64]),
    /// A rank-1 integer tensor (Nx accepts tensors as start indices), read on the device: the
    /// clamped window's address is computed there (`slice_starts.rs`), never read back.
    Tensor(&'a Tensor),
    /// One start per axis, each known on the host or a scalar integer tensor of its own type
    /// (Nx's list of starts as a graph holds it), the tensors read on the device as for
    /// [`Starts::Tensor`].
    PerAxis(&'a [AxisStart<'a>]),
}

/// One axis's start in [`Starts::PerAxis`].
#[derive(Debug, Clone, Copy)]
pub enum AxisStart<'a> {
    Fixed(i64),
    /// A scalar tensor of any integer type of 8 to 64 bits.
    Tensor(&'a Tensor),
}

impl Starts<'_> {
    /// Checks that there is one start per axis of `operand` (a tensor: rank 1, integers; a
    /// per-axis tensor: a scalar integer).
    fn check(&self, op: &'static str, operand: &Tensor) -> Result<()> {
        self.sources(op, operand).map(|_| ())
    }

    /// The start of each axis of `operand`, checked.
    fn sources(
        &self,
        op: &'static str,
        operand: &Tensor,
    ) -> Result<Vec<slice_starts::StartSource<'_>>> {
        let rank = operand.shape().len();
        let count = match self {
            Starts::Fixed(starts) => starts.len(),
            Starts::Tensor(_) => rank,
            Starts::PerAxis(starts) => starts.len(),
        };
        if count != rank {
            return Err(bad_operands(
                op,
                &[operand],
                format!("{count} starts for rank {rank}"),
            ));
        }
        match self {
            Starts::Fixed(starts) => Ok(starts
                .iter()
                .map(|&start| slice_starts::StartSource::Host(start))
                .collect()),
            Starts::Tensor(starts) => slice_starts::tensor_starts(op, operand, starts, rank),
            Starts::PerAxis(starts) => starts
                .iter()
                .enumerate()
                .map(|(axis, start)| match *start {
                    AxisStart::Fixed(value) => Ok(slice_starts::StartSource::Host(value)),
                    AxisStart::Tensor(tensor) => {
                        slice_starts::scalar_start(op, operand, tensor, axis)
                    }
                })
                .collect(),
        }
    }
}

/// The first element of a window of `lengths` inside `tensor`'s view (elements `start` and
/// `strides` from its buffer), at `starts` clamped as Nx clamps them: an element index, or
/// (some start given as a tensor) a device buffer holding its address.
enum WindowStart {
    Element(usize),
    Address(DeviceBuffer),
}

fn window_start(
    op: &'static str,
    tensor: &Tensor,
    start: usize,
    strides: &[i64],
    starts: Starts<'_>,
    lengths: &[usize],
) -> Result<WindowStart> {
    let limits: Vec<usize> = tensor
        .shape()
        .iter()
        .zip(lengths)
        .map(|(size, length)| size - length)
        .collect();
    let sources = starts.sources(op, tensor)?;
    let host: Option<Vec<i64>> = sources
        .iter()
        .map(|source| match source {
            slice_starts::StartSource::Host(value) => Some(*value),
            slice_starts::StartSource::Device { .. } => None,
        })
        .collect();
    match host {
        Some(starts) => {
            let offset: i64 = (0..limits.len())
                .map(|axis| starts[axis].clamp(0, limits[axis] as i64) * strides[axis])
                .sum();
            Ok(WindowStart::Element((start as i64 + offset) as usize))
        }
        None => slice_starts::window_address(op, tensor, start, strides, &sources, &limits)
            .map(WindowStart::Address),
    }
}

/// Nx's `slice` with starts known on the host (see [`slice_at`]).
pub fn slice(input: &Tensor, starts: &[i64], lengths: &[usize], steps: &[usize]) -> Result<Tensor> {
    slice_at(input, Starts::Fixed(starts), lengths, steps)
}

/// Nx's `slice`: `lengths[i]` elements of axis `i` from `starts[i]` (clamped, as Nx does, so
/// the window fits), every `steps[i]`-th of them (`ceil(lengths[i] / steps[i])` in the result).
pub fn slice_at(
    input: &Tensor,
    starts: Starts<'_>,
    lengths: &[usize],
    steps: &[usize],
) -> Result<Tensor> {
    const OP: &str = "slice";
    if let Some(carrier) = byte_carrier(input.dtype()) {
        return on_byte_carriers(&[input], input.dtype(), carrier, |x| {
            slice_at(x[0], starts, lengths, steps)
        });
    }
    let shape = input.shape();
    let rank = shape.len();
    starts.check(OP, input)?;
    if lengths.len() != rank || steps.len() != rank {
        return Err(bad_operands(
            OP,
            &[input],
            format!(
                "{} lengths and {} steps for rank {rank}",
                lengths.len(),
                steps.len()
            ),
        ));
    }
    let mut result_shape = Vec::with_capacity(rank);
    for axis in 0..rank {
        if lengths[axis] > shape[axis] || steps[axis] == 0 {
            return Err(bad_operands(
                OP,
                &[input],
                format!(
                    "length {} with step {} on axis {axis} of size {}",
                    lengths[axis], steps[axis], shape[axis]
                ),
            ));
        }
        result_shape.push(lengths[axis].div_ceil(steps[axis]));
    }
    let output = fresh(input.device(), input.dtype(), &result_shape)?;
    if output.n_elements() == 0 {
        return Ok(output);
    }
    let mut source = Source::of(input);
    let window = window_start(OP, input, source.start, &source.strides, starts, lengths)?;
    match &window {
        WindowStart::Element(start) => source.start = *start,
        WindowStart::Address(address) => source.start_address = Some(address),
    }
    for (stride, step) in source.strides.iter_mut().zip(steps) {
        *stride *= *step as i64;
    }
    let strides = contiguous_strides(&result_shape);
    copy(
        OP,
        &source,
        &result_shape,
        &Target::at(&output, 0, &strides),
    )?;
    Ok(output)
}

/// Nx's `pad` into the operands' merged type (see [`pad_as`]).
pub fn pad(input: &Tensor, value: &Tensor, config: &[(i64, i64, usize)]) -> Result<Tensor> {
    pad_as(input, value, config, merge(input.dtype(), value.dtype()))
}

/// Nx's `pad`: per axis `(lo, hi, interior)`; negative `lo`/`hi` crop. `value` is a scalar;
/// the result has type `dtype`, into which the input and the value are converted as by
/// `as_type` (on load, in the copy kernels).
pub fn pad_as(
    input: &Tensor,
    value: &Tensor,
    config: &[(i64, i64, usize)],
    dtype: DType,
) -> Result<Tensor> {
    const OP: &str = "pad";
    if let Some(carrier) = byte_carrier(dtype) {
        return on_byte_carriers(&[input, value], dtype, carrier, |x| {
            pad_as(x[0], x[1], config, carrier)
        });
    }
    let shape = input.shape();
    if config.len() != shape.len() || value.n_elements() != 1 {
        return Err(bad_operands(
            OP,
            &[input, value],
            format!(
                "needs one (lo, hi, interior) per axis ({} given for rank {}) and a scalar pad value",
                config.len(),
                shape.len()
            ),
        ));
    }
    let mut output_shape = Vec::with_capacity(shape.len());
    for (axis, (&size, &(lo, hi, interior))) in shape.iter().zip(config).enumerate() {
        let padded = size as i64 + (size as i64 - 1).max(0) * interior as i64 + lo + hi;
        if padded < 0 {
            return Err(bad_operands(
                OP,
                &[input],
                format!("axis {axis} would have size {padded}"),
            ));
        }
        output_shape.push(padded as usize);
    }
    let device = input.device();
    let output = fresh(device, dtype, &output_shape)?;
    if output.n_elements() == 0 {
        return Ok(output);
    }
    let value = operand_as(value, dtype)?;
    let scalar = value.reshape(&[])?.broadcast_to(&output_shape)?;
    let output_strides = contiguous_strides(&output_shape);
    copy(
        OP,
        &Source::of(&scalar),
        &output_shape,
        &Target::at(&output, 0, &output_strides),
    )?;
    // Element i of an axis lands at lo + i * (interior + 1); keep those inside the result.
    let input = operand_as(input, dtype)?;
    let mut source = Source::of(&input);
    let mut kept_shape = Vec::with_capacity(shape.len());
    let mut output_start = 0usize;
    let mut strides = Vec::with_capacity(shape.len());
    for axis in 0..shape.len() {
        let (lo, _, interior) = config[axis];
        let step = interior as i64 + 1;
        let size = output_shape[axis] as i64;
        let first = if lo < 0 { (-lo + step - 1) / step } else { 0 };
        let last = if size - 1 - lo < 0 {
            -1
        } else {
            ((size - 1 - lo) / step).min(shape[axis] as i64 - 1)
        };
        let count = (last - first + 1).max(0) as usize;
        kept_shape.push(count);
        if count > 0 {
            source.start = (source.start as i64 + first * source.strides[axis]) as usize;
            output_start += (lo + first * step) as usize * output_strides[axis];
        }
        strides.push(output_strides[axis] * step as usize);
    }
    copy(
        OP,
        &source,
        &kept_shape,
        &Target::at(&output, output_start, &strides),
    )?;
    Ok(output)
}

/// Nx's `concatenate` into the operands' merged type (see [`concatenate_as`]).
pub fn concatenate(inputs: &[&Tensor], axis: usize) -> Result<Tensor> {
    let dtypes = inputs.iter().map(|input| input.dtype());
    match dtypes.reduce(merge) {
        Some(dtype) => concatenate_as(inputs, axis, dtype),
        None => Err(bad_operands(
            "concatenate",
            inputs,
            "needs at least one tensor".into(),
        )),
    }
}

/// Nx's `concatenate` along `axis` (equal sizes on the other axes) into a result of type
/// `dtype`: operands of other types are converted as by `as_type`, on load in the copy
/// kernels (Nx passes mixed operands with the merged type).
pub fn concatenate_as(inputs: &[&Tensor], axis: usize, dtype: DType) -> Result<Tensor> {
    const OP: &str = "concatenate";
    if let Some(carrier) = byte_carrier(dtype) {
        return on_byte_carriers(inputs, dtype, carrier, |x| concatenate_as(x, axis, carrier));
    }
    let Some(first) = inputs.first() else {
        return Err(bad_operands(OP, inputs, "needs at least one tensor".into()));
    };
    let rank = first.shape().len();
    let compatible = axis < rank
        && inputs.iter().all(|input| {
            input.shape().len() == rank
                && (0..rank)
                    .all(|other| other == axis || input.shape()[other] == first.shape()[other])
        });
    if !compatible {
        return Err(bad_operands(
            OP,
            inputs,
            format!("operands must share rank and every size but axis {axis}'s"),
        ));
    }
    let mut output_shape = first.shape().to_vec();
    output_shape[axis] = inputs.iter().map(|input| input.shape()[axis]).sum();
    let output = fresh(first.device(), dtype, &output_shape)?;
    let strides = contiguous_strides(&output_shape);
    let mut position = 0;
    for input in inputs {
        let operand = operand_as(input, dtype)?;
        copy(
            OP,
            &Source::of(&operand),
            input.shape(),
            &Target::at(&output, position * strides[axis], &strides),
        )?;
        position += input.shape()[axis];
    }
    Ok(output)
}

/// Nx's `put_slice` with starts known on the host, into the operands' merged type (see
/// [`put_slice_as`]).
pub fn put_slice(input: &Tensor, starts: &[i64], update: &Tensor) -> Result<Tensor> {
    let dtype = merge(input.dtype(), update.dtype());
    put_slice_as(input, Starts::Fixed(starts), update, dtype)
}

/// Nx's `put_slice`: `input` with `update` written from `starts` (clamped, as Nx does, so the
/// update fits), as a result of type `dtype` into which both are converted as by `as_type`.
pub fn put_slice_as(
    input: &Tensor,
    starts: Starts<'_>,
    update: &Tensor,
    dtype: DType,
) -> Result<Tensor> {
    const OP: &str = "put_slice";
    if let Some(carrier) = byte_carrier(dtype) {
        return on_byte_carriers(&[input, update], dtype, carrier, |x| {
            put_slice_as(x[0], starts, x[1], carrier)
        });
    }
    let shape = input.shape();
    starts.check(OP, input)?;
    let fits = update.shape().len() == shape.len()
        && update.shape().iter().zip(shape).all(|(u, s)| u <= s);
    if !fits {
        return Err(bad_operands(
            OP,
            &[input, update],
            "the update must have the input's rank and fit inside it".into(),
        ));
    }
    let output = fresh(input.device(), dtype, shape)?;
    let strides = contiguous_strides(shape);
    let operand = operand_as(input, dtype)?;
    copy(
        OP,
        &Source::of(&operand),
        shape,
        &Target::at(&output, 0, &strides),
    )?;
    if update.n_elements() == 0 {
        return Ok(output);
    }
    let signed_strides: Vec<i64> = strides.iter().map(|&stride| stride as i64).collect();
    let window = window_start(OP, &output, 0, &signed_strides, starts, update.shape())?;
    let mut target = Target::at(&output, 0, &strides);
    match &window {
        WindowStart::Element(start) => target.start = *start,
        WindowStart::Address(address) => target.start_address = Some(address),
    }
    let update = operand_as(update, dtype)?;
    copy(OP, &Source::of(&update), update.shape(), &target)?;
    Ok(output)
}
