//! Gradient rules of the data-movement, indexing, scan, window and sort nodes.
//!
//! They follow `Nx.Defn.Grad`: slice's gradient is the output gradient dilated by the strides
//! (a `pad`) and put into zeros; pad's is the inverse crop then a strided slice (the pad
//! value gets the rest of the sum); concatenate's are slices; put_slice's are the gradient
//! with the window zeroed and the window itself; gather's is an `indexed_add` into zeros;
//! indexed_add/put pass the gradient to the target (put zeroes the written positions) and
//! gather it for the updates; window_max/min scatter it with window_scatter_max/min (over the
//! input padded explicitly: see `window_extreme_rule`);
//! window_sum's is a window_sum of the dilated, re-padded gradient; window_scatter_max/min
//! give the source the output gradient at the position each window selects (its windows
//! gathered explicitly, as Nx's rule does), the init value the sum of the gradient, and the
//! input nothing (it only steers the selection).
//!
//! Slices and put_slices with starts given by nodes (dynamic ones) share these rules, written
//! with the forward starts, so the gradient lands where the forward pass read or wrote: a
//! dynamic window is clamped when the graph runs, and every rule's window has the forward
//! window's lengths, so it is clamped alike (slice's dilated gradient is padded at the end up
//! to the slice's lengths for that reason; Nx's rule puts the shorter dilated gradient, which
//! its put_slice may clamp to another position when a strided window's tensor start lies past
//! the end). Start nodes get no gradient, as in Nx.
//!
//! Where Nx has no rule of its own (its cumulative ops and take/take_along_axis are
//! compositions there), the rules here are the exact derivative of our node:
//! - cumulative_sum: the cumulative sum of the gradient in the other direction;
//! - cumulative_product: `cumulative_sum(g * y, other direction) / x`, and at a zero input
//!   the product of the other inputs (see `cumulative_product_rule`), so zeros are exact as
//!   in Nx's product rule;
//! - cumulative_max/min: each output's gradient goes to the element holding the running
//!   extreme; among tied elements the most recent one (in scan order) takes it all;
//! - take and take_along_axis: the gradient is added back at the taken positions
//!   (`indexed_add`, so positions taken twice add up);
//! - sort: the gradient is put back through the stable argsort permutation (Nx takes it
//!   along the inverse permutation: the same values, without a second sort; a permutation
//!   writes each position once, so no atomic adds are needed).
//!
//! Ties and repeated indices: window_max/min follow window_scatter's choice (the last
//! extreme in each window, Nx's greater_equal selection; padding never wins);
//! window_scatter's own rule selects as its kernel does (the last extreme, the padding
//! holding the init value and able to win, in which case the source is dropped and gets no
//! gradient); indexed_put's rule is Nx's, so of several rows writing one
//! position, every row's update receives that position's gradient (only the last one's value
//! survives the forward pass). Iota, argsort and integer operands carry no gradient.

use super::{Differentiator, carries_gradient};
use crate::graph::{IndexedUpdate, NodeId, Op, SliceStart, TensorType};
use nxvk_core::{DType, Result};
use nxvk_kernels::{BinaryOp, ReduceOp, ScanOp, ScatterSelect, TieBreak, WindowOp, WindowOptions};

/// Static starts (already clamped) in the form the dynamic builders take.
fn static_starts(starts: &[usize]) -> Vec<SliceStart> {
    starts
        .iter()
        .map(|&start| SliceStart::Static(start as i64))
        .collect()
}

/// The dtype of the coordinates the rules build (Nx's default index type).
const INDEX_DTYPE: DType = DType::S32;

impl Differentiator<'_> {
    /// The contributions of `gradient` (the adjoint of `node`, whose op is `op`) to the
    /// operands of a data-movement, indexing, scan, window or sort node.
    pub(super) fn movement_rule(
        &mut self,
        op: &Op,
        node: NodeId,
        gradient: NodeId,
        needed: &[bool],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let wants = |this: &Self, operand: NodeId| {
            needed[operand.index()] && this.ty(operand).is_ok_and(|ty| carries_gradient(ty.dtype))
        };
        let mut contributions = Vec::new();
        match op {
            Op::Slice {
                input,
                starts,
                lengths,
                strides,
            } => {
                if wants(self, *input) {
                    let starts = static_starts(starts);
                    let value = self.slice_gradient(*input, &starts, lengths, strides, gradient)?;
                    contributions.push((*input, value));
                }
            }
            Op::DynamicSlice {
                input,
                starts,
                lengths,
                strides,
            } => {
                if wants(self, *input) {
                    let value = self.slice_gradient(*input, starts, lengths, strides, gradient)?;
                    contributions.push((*input, value));
                }
            }
            Op::Pad {
                input,
                value,
                config,
            } => {
                let (want_input, want_value) = (wants(self, *input), wants(self, *value));
                if want_input || want_value {
                    let cropping: Vec<(i64, i64, usize)> = config
                        .iter()
                        .map(|&(low, high, _)| (-low, -high, 0))
                        .collect();
                    let cropped = self.pad_with_zero(gradient, &cropping)?;
                    let shape = self.ty(cropped)?.shape;
                    let strides: Vec<usize> = config
                        .iter()
                        .map(|&(_, _, interior)| interior + 1)
                        .collect();
                    let operand =
                        self.builder
                            .slice(cropped, &vec![0; shape.len()], &shape, &strides)?;
                    if want_value {
                        let total = self.sum_all(gradient)?;
                        let kept = self.sum_all(operand)?;
                        let rest = self.binary(BinaryOp::Subtract, total, kept)?;
                        contributions.push((*value, rest));
                    }
                    if want_input {
                        contributions.push((*input, operand));
                    }
                }
            }
            Op::Concatenate { inputs, axis } => {
                let shape = self.ty(gradient)?.shape;
                let mut position = 0;
                for &input in inputs {
                    let length = self.ty(input)?.shape[*axis];
                    if wants(self, input) {
                        let mut starts = vec![0; shape.len()];
                        starts[*axis] = position;
                        let mut lengths = shape.clone();
                        lengths[*axis] = length;
                        let part = self.plain_slice(gradient, &starts, &lengths)?;
                        contributions.push((input, part));
                    }
                    position += length;
                }
            }
            Op::PutSlice {
                input,
                update,
                starts,
            } => {
                let wanted = (wants(self, *input), wants(self, *update));
                let starts = static_starts(starts);
                contributions =
                    self.put_slice_gradients(*input, *update, &starts, gradient, wanted)?;
            }
            Op::DynamicPutSlice {
                input,
                update,
                starts,
            } => {
                let wanted = (wants(self, *input), wants(self, *update));
                contributions =
                    self.put_slice_gradients(*input, *update, starts, gradient, wanted)?;
            }
            Op::Gather {
                input,
                indices,
                axes,
            } => {
                if wants(self, *input) {
                    let (input_type, index_type) = (self.ty(*input)?, self.ty(*indices)?);
                    // The builder checked that indices have rank at least 1.
                    let (depth, outer) = index_type.shape.split_last().unwrap_or((&0, &[]));
                    let (depth, rows) = (*depth, outer.iter().product::<usize>());
                    let coordinates = self.builder.reshape(*indices, &[rows, depth])?;
                    let mut window = vec![rows];
                    window.extend(
                        (0..input_type.shape.len())
                            .filter(|axis| !axes.contains(axis))
                            .map(|axis| input_type.shape[axis]),
                    );
                    let updates = self.builder.reshape(gradient, &window)?;
                    let value = self.scatter_into_zeros(
                        IndexedUpdate::Add,
                        &input_type,
                        coordinates,
                        updates,
                        axes,
                    )?;
                    contributions.push((*input, value));
                }
            }
            Op::Take {
                input,
                indices,
                axis,
            } => {
                if wants(self, *input) {
                    let (input_type, index_type) = (self.ty(*input)?, self.ty(*indices)?);
                    let taken = index_type.shape.len();
                    // The gradient's index axes go first, then the input's other axes.
                    let mut permutation: Vec<usize> = (*axis..axis + taken).collect();
                    permutation.extend(0..*axis);
                    permutation.extend(axis + taken..input_type.shape.len() - 1 + taken);
                    let moved = self.builder.transpose(gradient, &permutation)?;
                    let rows = index_type.n_elements();
                    let mut window = vec![rows];
                    window.extend(&input_type.shape[..*axis]);
                    window.extend(&input_type.shape[axis + 1..]);
                    let updates = self.builder.reshape(moved, &window)?;
                    let coordinates = self.builder.reshape(*indices, &[rows, 1])?;
                    let value = self.scatter_into_zeros(
                        IndexedUpdate::Add,
                        &input_type,
                        coordinates,
                        updates,
                        &[*axis],
                    )?;
                    contributions.push((*input, value));
                }
            }
            Op::TakeAlongAxis {
                input,
                indices,
                axis,
            } => {
                if wants(self, *input) {
                    let input_type = self.ty(*input)?;
                    let value = self.scatter_along_axis(
                        IndexedUpdate::Add,
                        gradient,
                        *indices,
                        *axis,
                        &input_type,
                    )?;
                    contributions.push((*input, value));
                }
            }
            Op::Indexed {
                update,
                target,
                indices,
                updates,
                axes,
            } => {
                if wants(self, *target) {
                    let value = match update {
                        IndexedUpdate::Add => gradient,
                        IndexedUpdate::Put => {
                            let zeros = self.zeros_like(*updates)?;
                            self.builder.indexed(
                                IndexedUpdate::Put,
                                gradient,
                                *indices,
                                zeros,
                                Some(axes),
                            )?
                        }
                    };
                    contributions.push((*target, value));
                }
                if wants(self, *updates) {
                    let gathered = self.builder.gather(gradient, *indices, Some(axes))?;
                    let shape = self.ty(*updates)?.shape;
                    let window = self.plain_slice(gathered, &vec![0; shape.len()], &shape)?;
                    contributions.push((*updates, window));
                }
            }
            Op::Cumulative {
                op,
                input,
                axis,
                reverse,
            } => {
                if wants(self, *input) {
                    let value =
                        self.cumulative_rule(*op, *input, node, gradient, *axis, *reverse)?;
                    contributions.push((*input, value));
                }
            }
            Op::Window {
                op,
                input,
                window,
                options,
            } => {
                if wants(self, *input) {
                    let value = match op {
                        WindowOp::Sum => self.window_sum_rule(*input, gradient, window, options)?,
                        WindowOp::Max | WindowOp::Min => {
                            self.window_extreme_rule(*op, *input, gradient, window, options)?
                        }
                        WindowOp::Product => return Err(self.not_differentiable(op.name(), node)),
                    };
                    contributions.push((*input, value));
                }
            }
            Op::WindowScatter {
                select,
                input,
                source,
                init_value,
                window,
                options,
            } => {
                // The input only steers the selection: no gradient (Nx gives it zeros).
                if wants(self, *source) {
                    let value = self.window_scatter_source_rule(
                        *select,
                        (*input, *source, *init_value, node),
                        gradient,
                        window,
                        options,
                    )?;
                    contributions.push((*source, value));
                }
                if wants(self, *init_value) {
                    // Every output element starts from the init value.
                    contributions.push((*init_value, self.sum_all(gradient)?));
                }
            }
            Op::Sort {
                input,
                axis,
                direction,
                positions: false,
            } => {
                if wants(self, *input) {
                    let permutation =
                        self.builder
                            .sort(*input, *axis, *direction, Some(INDEX_DTYPE))?;
                    let input_type = self.ty(*input)?;
                    let value = self.scatter_along_axis(
                        IndexedUpdate::Put,
                        gradient,
                        permutation,
                        *axis,
                        &input_type,
                    )?;
                    contributions.push((*input, value));
                }
            }
            Op::Sort {
                positions: true, ..
            }
            | Op::Iota { .. } => {}
            _ => return Err(self.no_rule(op.name(), node)),
        }
        Ok(contributions)
    }

    /// `value` padded with zeros by `config`.
    /// The input's gradient of `slice(input, starts, lengths, strides)`: the output gradient
    /// dilated by the strides, padded at the end up to `lengths` and put into zeros at the
    /// same starts, so that it is clamped as the forward window was.
    fn slice_gradient(
        &mut self,
        input: NodeId,
        starts: &[SliceStart],
        lengths: &[usize],
        strides: &[usize],
        gradient: NodeId,
    ) -> Result<NodeId> {
        let shape = self.ty(gradient)?.shape;
        let config: Vec<(i64, i64, usize)> = (0..shape.len())
            .map(|axis| {
                let dilated =
                    shape[axis].saturating_sub(1) * strides[axis] + usize::from(shape[axis] > 0);
                (0, (lengths[axis] - dilated) as i64, strides[axis] - 1)
            })
            .collect();
        let window = if config.iter().all(|&step| step == (0, 0, 0)) {
            gradient
        } else {
            self.pad_with_zero(gradient, &config)?
        };
        let zeros = self.zeros_like(input)?;
        self.builder.dynamic_put_slice(zeros, starts, window)
    }

    /// The gradients of `put_slice(input, starts, update)` wanted by `(input, update)`: the
    /// output gradient with the window zeroed, and the window.
    fn put_slice_gradients(
        &mut self,
        input: NodeId,
        update: NodeId,
        starts: &[SliceStart],
        gradient: NodeId,
        (want_input, want_update): (bool, bool),
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let mut contributions = Vec::new();
        if want_input {
            let zeros = self.zeros_like(update)?;
            let value = self.builder.dynamic_put_slice(gradient, starts, zeros)?;
            contributions.push((input, value));
        }
        if want_update {
            let lengths = self.ty(update)?.shape;
            let value = if self.ty(gradient)?.shape == lengths {
                gradient
            } else {
                let ones = vec![1; lengths.len()];
                self.builder
                    .dynamic_slice(gradient, starts, &lengths, &ones)?
            };
            contributions.push((update, value));
        }
        Ok(contributions)
    }

    fn pad_with_zero(&mut self, value: NodeId, config: &[(i64, i64, usize)]) -> Result<NodeId> {
        let zero = self.scalar(self.ty(value)?.dtype, 0.0)?;
        self.builder.pad(value, zero, config)
    }

    /// A unit-stride slice.
    fn plain_slice(
        &mut self,
        value: NodeId,
        starts: &[usize],
        lengths: &[usize],
    ) -> Result<NodeId> {
        if self.ty(value)?.shape == lengths {
            return Ok(value);
        }
        self.builder
            .slice(value, starts, lengths, &vec![1; lengths.len()])
    }

    /// The sum of all elements, as a scalar.
    fn sum_all(&mut self, value: NodeId) -> Result<NodeId> {
        self.builder
            .reduce(ReduceOp::Sum, value, None, false, TieBreak::Low)
    }

    /// `updates` added (or put) at `coordinates` (on `axes`) into zeros of `target`'s type.
    fn scatter_into_zeros(
        &mut self,
        update: IndexedUpdate,
        target: &TensorType,
        coordinates: NodeId,
        updates: NodeId,
        axes: &[usize],
    ) -> Result<NodeId> {
        let zero = self.scalar(target.dtype, 0.0)?;
        let zeros = self.builder.broadcast_to(zero, &target.shape)?;
        self.builder
            .indexed(update, zeros, coordinates, updates, Some(axes))
    }

    /// The transpose of `take_along_axis(x, positions, axis)`: each element of `gradient`
    /// (of `positions`' shape) added (`Add`) at its own coordinates with `axis` replaced by
    /// its position, into zeros of `target`; `Put` where `positions` is a permutation along
    /// the axis (each position written once: no atomic adds needed).
    fn scatter_along_axis(
        &mut self,
        update: IndexedUpdate,
        gradient: NodeId,
        positions: NodeId,
        axis: usize,
        target: &TensorType,
    ) -> Result<NodeId> {
        let shape = self.ty(positions)?.shape;
        let rows: usize = shape.iter().product();
        let columns = (0..shape.len())
            .map(|coordinate_axis| {
                let column = if coordinate_axis == axis {
                    self.builder.as_type(positions, INDEX_DTYPE)?
                } else {
                    self.builder
                        .iota(INDEX_DTYPE, &shape, Some(coordinate_axis))?
                };
                self.builder.reshape(column, &[rows, 1])
            })
            .collect::<Result<Vec<NodeId>>>()?;
        let coordinates = self.builder.concatenate(&columns, 1)?;
        let updates = self.builder.reshape(gradient, &[rows])?;
        let all_axes: Vec<usize> = (0..shape.len()).collect();
        self.scatter_into_zeros(update, target, coordinates, updates, &all_axes)
    }

    /// d input of `output = cumulative(op, input, axis, reverse)` (see the module docs).
    fn cumulative_rule(
        &mut self,
        op: ScanOp,
        input: NodeId,
        output: NodeId,
        gradient: NodeId,
        axis: usize,
        reverse: bool,
    ) -> Result<NodeId> {
        match op {
            ScanOp::Sum => self
                .builder
                .cumulative(ScanOp::Sum, gradient, axis, !reverse),
            ScanOp::Product => self.cumulative_product_rule(input, output, gradient, axis, reverse),
            ScanOp::Max | ScanOp::Min => {
                // Where the input equals the running extreme, it holds it; every output takes
                // the nearest such position before it in scan order.
                let ty = self.ty(input)?;
                let holds = self.binary(BinaryOp::Equal, input, output)?;
                let coordinate = self.builder.iota(INDEX_DTYPE, &ty.shape, Some(axis))?;
                let (fill, nearest) = if reverse {
                    (ty.shape[axis] as f64, ScanOp::Min)
                } else {
                    (-1.0, ScanOp::Max)
                };
                let outside = self.scalar(INDEX_DTYPE, fill)?;
                let outside = self.builder.broadcast_to(outside, &ty.shape)?;
                let candidates = self.builder.select(holds, coordinate, outside)?;
                let holder = self
                    .builder
                    .cumulative(nearest, candidates, axis, reverse)?;
                self.scatter_along_axis(IndexedUpdate::Add, gradient, holder, axis, &ty)
            }
        }
    }

    /// d input of cumulative_product, exact at zeros (as Nx's product rule is): output `j`
    /// depends on input `i <= j` (in scan order) through the product of the others. For a
    /// nonzero input that is `y[j] / x[i]`, so its gradient is the later-direction sum of
    /// `g * y` over `x`. For a zero input it is the product of the others, nonzero only while
    /// `i` is the one zero so far: the later-direction sum of `g * P` over those outputs,
    /// where `P` is the running product with zeros read as ones.
    fn cumulative_product_rule(
        &mut self,
        input: NodeId,
        output: NodeId,
        gradient: NodeId,
        axis: usize,
        reverse: bool,
    ) -> Result<NodeId> {
        let dtype = self.ty(input)?.dtype;
        let weighted = self.mul(gradient, output)?;
        let later = self
            .builder
            .cumulative(ScanOp::Sum, weighted, axis, !reverse)?;
        let nonzero_rule = self.div(later, input)?;
        let zero = self.scalar(dtype, 0.0)?;
        let one = self.scalar(dtype, 1.0)?;
        let is_zero = self.binary(BinaryOp::Equal, input, zero)?;
        let ones = self.builder.broadcast_to(one, &self.ty(input)?.shape)?;
        let zeros_as_ones = self.builder.select(is_zero, ones, input)?;
        let others = self
            .builder
            .cumulative(ScanOp::Product, zeros_as_ones, axis, reverse)?;
        let zero_count = self.builder.as_type(is_zero, dtype)?;
        let zero_count = self
            .builder
            .cumulative(ScanOp::Sum, zero_count, axis, reverse)?;
        let one_zero = self.binary(BinaryOp::Equal, zero_count, one)?;
        let contribution = self.mul(gradient, others)?;
        let contribution = self.mask(one_zero, contribution, true)?;
        let zero_rule = self
            .builder
            .cumulative(ScanOp::Sum, contribution, axis, !reverse)?;
        self.builder.select(is_zero, zero_rule, nonzero_rule)
    }

    /// d input of window_max/min: the gradient scattered onto each window's extreme by
    /// window_scatter_max/min. The scatter pads with its init value (0, as in Nx's rule),
    /// which would win a window whose real elements are all below it; the forward pass pads
    /// with -inf (+inf for min), so the input is padded that way explicitly, scattered
    /// without padding, and the padding cropped off again.
    fn window_extreme_rule(
        &mut self,
        op: WindowOp,
        input: NodeId,
        gradient: NodeId,
        window: &[usize],
        options: &WindowOptions,
    ) -> Result<NodeId> {
        let (select, fill) = if op == WindowOp::Max {
            (ScatterSelect::Max, f64::NEG_INFINITY)
        } else {
            (ScatterSelect::Min, f64::INFINITY)
        };
        let dtype = self.ty(input)?.dtype;
        let config: Vec<(i64, i64, usize)> = options
            .padding
            .iter()
            .map(|&(low, high)| (low, high, 0))
            .collect();
        let padded = if config.is_empty() {
            input
        } else {
            let fill = self.scalar(dtype, fill)?;
            self.builder.pad(input, fill, &config)?
        };
        let zero = self.scalar(dtype, 0.0)?;
        let unpadded = WindowOptions {
            padding: Vec::new(),
            ..options.clone()
        };
        let scattered = self
            .builder
            .window_scatter(select, padded, gradient, zero, window, unpadded)?;
        if config.is_empty() {
            return Ok(scattered);
        }
        let cropping: Vec<(i64, i64, usize)> = config
            .iter()
            .map(|&(low, high, _)| (-low, -high, 0))
            .collect();
        self.pad_with_zero(scattered, &cropping)
    }

    /// d source of `output = window_scatter(select, input, source, init_value)`: each window's
    /// source value lands on the position the window selects, so its gradient is the output
    /// gradient there, and 0 where the selection falls in the padding (the scatter drops it).
    /// The windows are gathered explicitly, as in Nx's rule, from the input converted to the
    /// output's type and padded with the init value (what the forward kernel selects on);
    /// ties go to the last extreme (arg max/min with `TieBreak::High`, Nx's rule and the
    /// kernel's greater_equal choice). A window holding NaN may select differently from the
    /// kernel's sequential scan.
    fn window_scatter_source_rule(
        &mut self,
        select: ScatterSelect,
        (input, source, init_value, output): (NodeId, NodeId, NodeId, NodeId),
        gradient: NodeId,
        window: &[usize],
        options: &WindowOptions,
    ) -> Result<NodeId> {
        let (input_type, output_type) = (self.ty(input)?, self.ty(output)?);
        // The source has the pooled shape (the builder checked it).
        let pooled = self.ty(source)?.shape;
        if input_type.shape.is_empty() {
            // One window holding the one element: the scatter adds the source to it.
            return Ok(gradient);
        }
        let converted = self.converted(input, output_type.dtype)?;
        let init = self.converted(init_value, output_type.dtype)?;
        let config: Vec<(i64, i64, usize)> = options
            .padding
            .iter()
            .map(|&(low, high)| (low, high, 0))
            .collect();
        let (padded_input, padded_gradient) = if config.is_empty() {
            (converted, gradient)
        } else {
            (
                self.builder.pad(converted, init, &config)?,
                self.pad_with_zero(gradient, &config)?,
            )
        };
        let coordinates = self.window_coordinates(&pooled, window, options)?;
        let all_axes: Vec<usize> = (0..input_type.shape.len()).collect();
        let input_windows = self
            .builder
            .gather(padded_input, coordinates, Some(&all_axes))?;
        let last = pooled.len();
        let arg = match select {
            ScatterSelect::Max => ReduceOp::ArgMax,
            ScatterSelect::Min => ReduceOp::ArgMin,
        };
        let chosen =
            self.builder
                .reduce(arg, input_windows, Some(&[last]), true, TieBreak::High)?;
        let gradient_windows =
            self.builder
                .gather(padded_gradient, coordinates, Some(&all_axes))?;
        let picked = self
            .builder
            .take_along_axis(gradient_windows, chosen, last)?;
        self.builder.reshape(picked, &pooled)
    }

    /// `value` converted to `dtype` (itself when it has it).
    fn converted(&mut self, value: NodeId, dtype: DType) -> Result<NodeId> {
        if self.ty(value)?.dtype == dtype {
            Ok(value)
        } else {
            self.builder.as_type(value, dtype)
        }
    }

    /// The padded-input coordinates of every window position: shape `[pooled..., window
    /// positions, rank]`, position `w` of window `p` at `p * stride + w * dilation` per axis.
    fn window_coordinates(
        &mut self,
        pooled: &[usize],
        window: &[usize],
        options: &WindowOptions,
    ) -> Result<NodeId> {
        let rank = pooled.len();
        let grid: Vec<usize> = pooled.iter().chain(window).copied().collect();
        let mut flat = pooled.to_vec();
        flat.extend([window.iter().product::<usize>(), 1]);
        let columns = (0..rank)
            .map(|axis| {
                let stride = options.strides.get(axis).copied().unwrap_or(1) as f64;
                let dilation = options.window_dilations.get(axis).copied().unwrap_or(1) as f64;
                let start = self.builder.iota(INDEX_DTYPE, &grid, Some(axis))?;
                let start = self.scale(start, stride)?;
                let offset = self.builder.iota(INDEX_DTYPE, &grid, Some(rank + axis))?;
                let offset = self.scale(offset, dilation)?;
                let coordinate = self.binary(BinaryOp::Add, start, offset)?;
                self.builder.reshape(coordinate, &flat)
            })
            .collect::<Result<Vec<NodeId>>>()?;
        self.builder.concatenate(&columns, rank + 1)
    }

    /// d input of window_sum: output `p` read padded positions `p * stride + w * dilation`,
    /// so input `i` collects the outputs whose windows cover it. Dilating the gradient by the
    /// strides and padding it so a stride-1 window over it lines up with the input (a window
    /// sum is the same read forwards or backwards) gives exactly those sums.
    fn window_sum_rule(
        &mut self,
        input: NodeId,
        gradient: NodeId,
        window: &[usize],
        options: &WindowOptions,
    ) -> Result<NodeId> {
        let input_shape = self.ty(input)?.shape;
        let pooled = self.ty(gradient)?.shape;
        let config: Vec<(i64, i64, usize)> = (0..input_shape.len())
            .map(|axis| {
                let stride = options.strides.get(axis).copied().unwrap_or(1);
                let dilation = options.window_dilations.get(axis).copied().unwrap_or(1) as i64;
                let (low, _) = options.padding.get(axis).copied().unwrap_or((0, 0));
                let reach = (window[axis] as i64 - 1) * dilation;
                let covered = (pooled[axis] as i64 - 1) * stride as i64 + 1;
                let before = reach - low;
                let after = input_shape[axis] as i64 + reach - before - covered;
                (before, after, stride - 1)
            })
            .collect();
        let spread = self.pad_with_zero(gradient, &config)?;
        let unit = WindowOptions {
            window_dilations: options.window_dilations.clone(),
            ..WindowOptions::default()
        };
        self.builder.window(WindowOp::Sum, spread, window, unit)
    }
}
