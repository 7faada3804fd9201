//! Indexing: Nx's `gather` (with `axes`), `take`, `take_along_axis`, `indexed_put` and
//! `indexed_add`, on the GPU for every byte-sized dtype.
//!
//! Every op is one *walk*: a space of elements (the result of a gather, the updates of a
//! scatter), each of which addresses the indexed tensor by its coordinates (a stride per walk
//! axis, zero where an axis only selects index rows) plus, per index position, an index value
//! read from the index tensor times the stride of the axis it indexes. `take` and
//! `take_along_axis` are walks of that form directly (no full index tensor is built, and no
//! transpose afterwards), and every operand may be a strided view. One template
//! (`index_codegen.rs`) runs all of them.
//!
//! Policies:
//! - **Clamping.** An index below zero selects element 0 and one past the end the last
//!   element, on every op (EXLA's behaviour for gather; Nx's BinaryBackend raises instead, and
//!   XLA's scatter drops out-of-range updates, where this module clamps them too).
//! - **Raw bits.** Gather and put move bits, so every byte-sized dtype (complex included) works
//!   and NaN payloads survive; a gather of whole rows moves 16-byte units.
//! - **indexed_put is deterministic**: where several update rows hit one element, the last
//!   row wins (a first pass records the highest writing row per element with `atomicMax`, a
//!   second writes only that row's values).
//! - **indexed_add** adds with integer atomics (exact, order-free), floats by compare-and-swap
//!   loops (f32 and f64 words; 8- and 16-bit types on their aligned 32-bit word). Float sums of
//!   repeated indices therefore land in a run-dependent order: results agree with a sequential
//!   sum up to rounding, not bit for bit. Complex adds run as adds of their real parts.
//!   64-bit adds need `shaderBufferInt64Atomics`; without it they are `Unsupported`.
//! - Results take `Nx.Type.merge` of the target's and the updates' types (casts run first).

use crate::grid::grid_stride_workgroups;
use crate::index_codegen::{
    INDEX_PARAMS_ADDRESS_OFFSET, INDEX_WORKGROUP_SIZE, IndexMode, index_kernel_name, index_shader,
};
use crate::launch::poison_output;
use crate::operand_errors::bad_operands;
use crate::{movement, ops, types};
use nxvk_core::{BufferAccess, DType, Device, Error, Layout, Result, Tensor, contiguous_strides};
use std::sync::Arc;

/// One walk axis: its size and its strides into the indexed tensor and the index tensor.
#[derive(Debug, Clone, Copy)]
struct WalkAxis {
    size: usize,
    data_stride: usize,
    index_stride: usize,
}

/// One index position: where it sits in an index row, and the indexed axis it selects on.
#[derive(Debug, Clone, Copy)]
struct Position {
    index_stride: usize,
    axis_size: usize,
    data_stride: usize,
}

/// A walk over a contiguous "linear" tensor (result or updates) addressing a data tensor.
struct Walk<'a> {
    op: &'static str,
    axes: Vec<WalkAxis>,
    positions: Vec<Position>,
    /// The indices tensor (`None` for a plain strided copy).
    indices: Option<&'a Tensor>,
    /// Linear elements per index row (the scatter's update rows), for last-writer marks.
    row_elements: usize,
}

impl Walk<'_> {
    fn count(&self) -> usize {
        self.axes.iter().map(|axis| axis.size).product()
    }

    /// The largest unit (up to 16 bytes) the walk can move whole: the innermost axis must be
    /// contiguous in the data and use one index for all its elements, and every data stride
    /// and base address must be a multiple of it.
    fn unit_bytes(&self, element_bytes: u64, addresses: &[u64]) -> u64 {
        let Some(inner) = self.axes.last() else {
            return element_bytes;
        };
        if inner.data_stride != 1 || inner.index_stride != 0 {
            return element_bytes;
        }
        let mut unit = 16;
        while unit > element_bytes {
            let fits = |stride: usize| (stride as u64 * element_bytes).is_multiple_of(unit);
            let row_fits = (inner.size as u64 * element_bytes).is_multiple_of(unit);
            let strides_fit = self.axes[..self.axes.len() - 1]
                .iter()
                .all(|axis| fits(axis.data_stride))
                && self
                    .positions
                    .iter()
                    .all(|position| fits(position.data_stride));
            let row_units_fit = (self.row_elements as u64 * element_bytes).is_multiple_of(unit)
                || self.row_elements == 0;
            if row_fits
                && strides_fit
                && row_units_fit
                && addresses.iter().all(|address| address.is_multiple_of(unit))
            {
                return unit;
            }
            unit /= 2;
        }
        element_bytes
    }

    /// Records the walk as one dispatch of `mode`.
    fn run(
        &self,
        mode: IndexMode,
        data: &Tensor,
        linear: &Tensor,
        marks: Option<&nxvk_core::DeviceBuffer>,
    ) -> Result<()> {
        let op = self.op;
        if self.count() == 0 {
            return Ok(());
        }
        if self
            .positions
            .iter()
            .any(|position| position.axis_size == 0)
        {
            return Err(bad_operands(
                op,
                &[data, linear],
                "an index into an axis of size 0 selects nothing to clamp to".into(),
            ));
        }
        let dtype = data.dtype();
        let element_bytes = dtype.byte_size().ok_or_else(|| Error::Unsupported {
            op,
            dtype,
            detail: "sub-byte elements have no addresses to index".into(),
        })?;
        let (data_address, linear_address) = (
            data.device_address().unwrap_or_default(),
            linear.device_address().unwrap_or_default(),
        );
        let unit = if mode == IndexMode::Add {
            element_bytes
        } else {
            self.unit_bytes(element_bytes, &[data_address, linear_address])
        };
        let scale = (unit / element_bytes) as usize;
        let mut axes = self.axes.clone();
        if let Some(inner) = axes.last_mut().filter(|_| scale > 1) {
            inner.size /= scale;
        }
        let rank = axes.len();
        let mut words: Vec<u32> = Vec::with_capacity(3 * (rank + self.positions.len()));
        let too_large = |value: usize| {
            bad_operands(
                op,
                &[data, linear],
                format!("{value} does not fit the indexing kernel's 32-bit layout words"),
            )
        };
        let word = |value: usize| u32::try_from(value).map_err(|_| too_large(value));
        for (position, axis) in axes.iter().enumerate() {
            let data_stride = if position + 1 == rank && scale > 1 {
                1
            } else {
                axis.data_stride / scale
            };
            words.extend([
                word(axis.size)?,
                word(data_stride)?,
                word(axis.index_stride)?,
            ]);
        }
        for position in &self.positions {
            words.extend([
                word(position.index_stride)?,
                word(position.axis_size)?,
                word(position.data_stride / scale)?,
            ]);
        }
        let count = self.count() / scale;
        let count_word = u32::try_from(count)
            .ok()
            .filter(|&count| count < u32::MAX - (1 << 26))
            .ok_or_else(|| too_large(count))?;
        let index_dtype = self.indices.map_or(DType::S32, Tensor::dtype);
        let name = index_kernel_name(mode, unit, dtype, index_dtype);
        let shader = index_shader(mode, unit, dtype, index_dtype).ok_or_else(|| {
            bad_operands(
                op,
                &[data, linear],
                format!("no {} kernel for {dtype} with {index_dtype} indices", name),
            )
        })?;
        let device = data.device();
        let kernel = device.kernel_from_glsl(&name, &shader, &[])?;
        let indices_address = match self.indices {
            Some(indices) => indices.device_address().ok_or_else(|| {
                bad_operands(op, &[indices], "indices must be an integer tensor".into())
            })?,
            None => 0,
        };
        let mut push = Vec::with_capacity(56);
        for address in [
            data_address,
            linear_address,
            indices_address,
            0,
            marks.map_or(0, |marks| marks.device_address()),
        ] {
            push.extend_from_slice(&address.to_le_bytes());
        }
        for value in [
            count_word,
            rank as u32,
            self.positions.len() as u32,
            (self.row_elements / scale) as u32,
        ] {
            push.extend_from_slice(&value.to_le_bytes());
        }
        if words.is_empty() {
            words.push(0);
        }
        let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
        let (data_access, linear_access) = match mode {
            IndexMode::Gather => (
                BufferAccess::Read(data.buffer()),
                BufferAccess::Write(linear.buffer()),
            ),
            _ => (
                BufferAccess::Write(data.buffer()),
                BufferAccess::Read(linear.buffer()),
            ),
        };
        let mut accesses = vec![data_access, linear_access];
        if let Some(indices) = self.indices {
            accesses.push(BufferAccess::Read(indices.buffer()));
        }
        if let Some(marks) = marks {
            accesses.push(BufferAccess::Write(marks));
        }
        let groups = grid_stride_workgroups(device, count as u64, INDEX_WORKGROUP_SIZE);
        device.dispatch_with_params(
            &kernel,
            [groups, 1, 1],
            &push,
            &params,
            INDEX_PARAMS_ADDRESS_OFFSET,
            &accesses,
        )
    }
}

/// A fresh contiguous tensor for a result (poisoned in tests), in a buffer whose size is a
/// multiple of 4 bytes (the narrow adds touch whole 32-bit words).
fn fresh(device: &Arc<Device>, dtype: DType, shape: &[usize]) -> Result<Tensor> {
    let output = Tensor::empty(device, dtype, shape)?;
    if output.n_elements() > 0 {
        poison_output(output.buffer())?;
    }
    Ok(output)
}

fn check_indices(op: &'static str, tensor: &Tensor, indices: &Tensor) -> Result<()> {
    if !indices.dtype().is_integer() || indices.dtype().is_sub_byte() {
        return Err(bad_operands(
            op,
            &[tensor, indices],
            "indices must be a tensor of s8..s64 or u8..u64".into(),
        ));
    }
    if tensor.dtype().is_sub_byte() {
        return Err(Error::Unsupported {
            op,
            dtype: tensor.dtype(),
            detail: "sub-byte elements have no addresses to index".into(),
        });
    }
    Ok(())
}

/// An index walk that reads `indices` rows along its last axis: the positions of a row.
fn row_positions(tensor: &Tensor, indices: &Tensor, axes: &[usize]) -> Vec<Position> {
    let index_strides = indices.layout().strides();
    let last_stride = index_strides.last().copied().unwrap_or(0);
    axes.iter()
        .enumerate()
        .map(|(position, &axis)| Position {
            index_stride: position * last_stride,
            axis_size: tensor.shape()[axis],
            data_stride: tensor.layout().strides()[axis],
        })
        .collect()
}

/// Checks Nx's `axes` for an index depth of `depth`: `depth` distinct, increasing axes of
/// `tensor` (Nx's default is the leading ones).
fn indexed_axes(
    op: &'static str,
    tensor: &Tensor,
    indices: &Tensor,
    axes: Option<&[usize]>,
    depth: usize,
) -> Result<Vec<usize>> {
    let rank = tensor.shape().len();
    let axes: Vec<usize> = match axes {
        Some(axes) => axes.to_vec(),
        None => (0..depth.min(rank)).collect(),
    };
    let increasing = axes.windows(2).all(|pair| pair[0] < pair[1]);
    if axes.len() != depth || depth > rank || !increasing || axes.iter().any(|&a| a >= rank) {
        return Err(bad_operands(
            op,
            &[tensor, indices],
            format!(
                "the last axis of indices ({depth}) must equal the number of axes {axes:?}, \
                 which must be increasing axes of a rank-{rank} tensor"
            ),
        ));
    }
    Ok(axes)
}

/// Nx's `gather`: `indices` of shape `[..., k]` selects, per row, the element at those `k`
/// coordinates on `axes` (default: the first `k` axes); the result has shape
/// `indices.shape[..-1] ++ (the non-indexed axes of input)`.
pub fn gather(input: &Tensor, indices: &Tensor, axes: Option<&[usize]>) -> Result<Tensor> {
    const OP: &str = "gather";
    check_indices(OP, input, indices)?;
    let Some((&depth, outer)) = indices.shape().split_last() else {
        return Err(bad_operands(
            OP,
            &[input, indices],
            "indices must have rank at least 1".into(),
        ));
    };
    let axes = indexed_axes(OP, input, indices, axes, depth)?;
    let index_strides = indices.layout().strides();
    let mut walk_axes: Vec<WalkAxis> = outer
        .iter()
        .zip(index_strides)
        .map(|(&size, &index_stride)| WalkAxis {
            size,
            data_stride: 0,
            index_stride,
        })
        .collect();
    for axis in (0..input.shape().len()).filter(|axis| !axes.contains(axis)) {
        walk_axes.push(WalkAxis {
            size: input.shape()[axis],
            data_stride: input.layout().strides()[axis],
            index_stride: 0,
        });
    }
    let positions = row_positions(input, indices, &axes);
    gather_walk(OP, input, indices, walk_axes, positions)
}

/// Runs a gather over `axes` (the output's axes, in order) into a fresh output.
fn gather_walk(
    op: &'static str,
    input: &Tensor,
    indices: &Tensor,
    axes: Vec<WalkAxis>,
    positions: Vec<Position>,
) -> Result<Tensor> {
    let shape: Vec<usize> = axes.iter().map(|axis| axis.size).collect();
    let output = fresh(input.device(), input.dtype(), &shape)?;
    let walk = Walk {
        op,
        axes,
        positions,
        indices: Some(indices),
        row_elements: 0,
    };
    walk.run(IndexMode::Gather, input, &output, None)?;
    Ok(output)
}

/// The one position of `take` and `take_along_axis`: the index value picks along `axis`.
fn single_axis_position(input: &Tensor, axis: usize) -> Vec<Position> {
    vec![Position {
        index_stride: 0,
        axis_size: input.shape()[axis],
        data_stride: input.layout().strides()[axis],
    }]
}

/// Nx's `take`: the slices of `input` at `indices` along `axis`; the result has shape
/// `input.shape[..axis] ++ indices.shape ++ input.shape[axis + 1..]`.
pub fn take(input: &Tensor, indices: &Tensor, axis: usize) -> Result<Tensor> {
    const OP: &str = "take";
    check_indices(OP, input, indices)?;
    let rank = input.shape().len();
    if axis >= rank {
        return Err(bad_operands(
            OP,
            &[input, indices],
            format!("axis {axis} out of range for rank {rank}"),
        ));
    }
    let data_strides = input.layout().strides();
    let through = |axis: usize| WalkAxis {
        size: input.shape()[axis],
        data_stride: data_strides[axis],
        index_stride: 0,
    };
    let mut walk_axes: Vec<WalkAxis> = (0..axis).map(through).collect();
    walk_axes.extend(indices.shape().iter().zip(indices.layout().strides()).map(
        |(&size, &index_stride)| WalkAxis {
            size,
            data_stride: 0,
            index_stride,
        },
    ));
    walk_axes.extend((axis + 1..rank).map(through));
    let position = single_axis_position(input, axis);
    gather_walk(OP, input, indices, walk_axes, position)
}

/// Nx's `take_along_axis`: `indices` has `input`'s rank, and element `c` of the result (of
/// `indices`' shape) is `input` at `c` with coordinate `axis` replaced by `indices[c]`. The
/// other axes of `indices` must not exceed `input`'s (Nx broadcasts size-1 axes of `input`;
/// pass a broadcast view for that).
pub fn take_along_axis(input: &Tensor, indices: &Tensor, axis: usize) -> Result<Tensor> {
    const OP: &str = "take_along_axis";
    check_indices(OP, input, indices)?;
    let rank = input.shape().len();
    let fits = indices.shape().len() == rank
        && axis < rank
        && (0..rank).all(|other| other == axis || indices.shape()[other] <= input.shape()[other]);
    if !fits {
        return Err(bad_operands(
            OP,
            &[input, indices],
            format!(
                "indices must have the input's rank, axis {axis} must be one of its axes, \
                 and the other axes must fit the input's"
            ),
        ));
    }
    let walk_axes: Vec<WalkAxis> = (0..rank)
        .map(|walk_axis| WalkAxis {
            size: indices.shape()[walk_axis],
            data_stride: if walk_axis == axis {
                0
            } else {
                input.layout().strides()[walk_axis]
            },
            index_stride: indices.layout().strides()[walk_axis],
        })
        .collect();
    let position = single_axis_position(input, axis);
    gather_walk(OP, input, indices, walk_axes, position)
}

/// Which scatter an indexed op runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scatter {
    Put,
    Add,
}

/// Nx's `indexed_put`: `target` with `updates[i, ...]` written at the coordinates
/// `indices[i, :]` on `axes` (default: the leading axes); updates of rank above 1 write a
/// window (no larger than the target) from coordinate 0 of the other axes. Where rows repeat
/// an index, the last row wins.
pub fn indexed_put(
    target: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    axes: Option<&[usize]>,
) -> Result<Tensor> {
    scatter("indexed_put", Scatter::Put, target, indices, updates, axes)
}

/// Nx's `indexed_add`: like [`indexed_put`], but adds the updates (repeated indices add up).
pub fn indexed_add(
    target: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    axes: Option<&[usize]>,
) -> Result<Tensor> {
    scatter("indexed_add", Scatter::Add, target, indices, updates, axes)
}

fn scatter(
    op: &'static str,
    kind: Scatter,
    target: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    axes: Option<&[usize]>,
) -> Result<Tensor> {
    check_indices(op, target, indices)?;
    let operands = [target, indices, updates];
    let (rows, depth) = match *indices.shape() {
        [rows, depth] => (rows, depth),
        _ => {
            return Err(bad_operands(
                op,
                &operands,
                "indices must have shape [n, k] (Nx's rank-1 shorthand: add a leading axis)".into(),
            ));
        }
    };
    let axes = indexed_axes(op, target, indices, axes, depth)?;
    let rank = target.shape().len();
    let free_axes: Vec<usize> = (0..rank).filter(|axis| !axes.contains(axis)).collect();
    let window = updates.shape().get(1..).unwrap_or(&[]);
    let fits = updates.shape().first() == Some(&rows)
        && window.len() == free_axes.len()
        && window
            .iter()
            .zip(&free_axes)
            .all(|(&size, &axis)| size <= target.shape()[axis]);
    if !fits {
        return Err(bad_operands(
            op,
            &operands,
            format!(
                "updates must have shape [{rows}, ...] with one axis (no larger than the \
                 target's) per non-indexed axis {free_axes:?}"
            ),
        ));
    }
    let dtype = types::merge(target.dtype(), updates.dtype());
    if updates.dtype().is_sub_byte() || dtype.is_sub_byte() {
        return Err(Error::Unsupported {
            op,
            dtype,
            detail: "sub-byte elements have no addresses to index".into(),
        });
    }
    let target = ops::as_type(target, dtype)?;
    let updates = movement::contiguous(&ops::as_type(updates, dtype)?)?;
    let device = target.device();
    let output = fresh(device, dtype, target.shape())?;
    copy_into(op, &target, &output)?;
    if rows == 0 || updates.n_elements() == 0 {
        return Ok(output);
    }
    // Complex adds are adds of the real parts: view c64 as f32 pairs (c128 as f64 pairs).
    let (output_view, updates_view, pair) = match (kind, dtype) {
        (Scatter::Add, DType::C64 | DType::C128) => {
            let part = if dtype == DType::C64 {
                DType::F32
            } else {
                DType::F64
            };
            // Both are contiguous; the updates may start past their buffer's start.
            let pair_view = |tensor: &Tensor| {
                let mut shape = tensor.shape().to_vec();
                shape.push(2);
                let strides = contiguous_strides(&shape);
                let layout = Layout::from_parts(shape, strides, tensor.layout().offset() * 2)?;
                Tensor::from_parts(tensor.buffer().clone(), layout, part)
            };
            (pair_view(&output)?, pair_view(&updates)?, true)
        }
        _ => (output.clone(), updates.clone(), false),
    };
    if kind == Scatter::Add
        && output_view.dtype().bits() == 64
        && !device.capabilities().int64_atomics
    {
        return Err(Error::Unsupported {
            op,
            dtype,
            detail: "64-bit adds need shaderBufferInt64Atomics, which this device lacks".into(),
        });
    }
    let output_strides = contiguous_strides(output_view.shape());
    let update_strides = contiguous_strides(updates_view.shape());
    let mut walk_axes = vec![WalkAxis {
        size: rows,
        data_stride: 0,
        index_stride: indices.layout().strides()[0],
    }];
    for (&size, &axis) in window.iter().zip(&free_axes) {
        walk_axes.push(WalkAxis {
            size,
            data_stride: output_strides[axis],
            index_stride: 0,
        });
    }
    let positions = row_positions(&output_view, indices, &axes);
    if pair {
        // The pair axis: real and imaginary parts, adjacent in memory.
        walk_axes.push(WalkAxis {
            size: 2,
            data_stride: 1,
            index_stride: 0,
        });
    }
    let walk = Walk {
        op,
        axes: walk_axes,
        positions,
        indices: Some(indices),
        row_elements: update_strides[0],
    };
    match kind {
        Scatter::Add => walk.run(IndexMode::Add, &output_view, &updates_view, None),
        Scatter::Put => {
            let marks = device.alloc(op, output.n_elements() as u64 * 4)?;
            device.fill(&marks, 0)?;
            walk.run(IndexMode::MarkLastWriter, &output, &updates, Some(&marks))?;
            walk.run(IndexMode::PutMarked, &output, &updates, Some(&marks))
        }
    }?;
    Ok(output)
}

/// Copies the view `source` into the contiguous `destination` of the same shape and dtype
/// (a walk without index positions).
fn copy_into(op: &'static str, source: &Tensor, destination: &Tensor) -> Result<()> {
    let walk = Walk {
        op,
        axes: source
            .shape()
            .iter()
            .zip(source.layout().strides())
            .map(|(&size, &data_stride)| WalkAxis {
                size,
                data_stride,
                index_stride: 0,
            })
            .collect(),
        positions: Vec::new(),
        indices: None,
        row_elements: 0,
    };
    walk.run(IndexMode::Gather, source, destination, None)
}
