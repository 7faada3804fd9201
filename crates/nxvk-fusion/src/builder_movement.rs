//! Building the nodes that move, index, scan, window, create and sort data.
//!
//! These nodes run the eager catalog's op of the same name as their own stage, so the builder
//! infers their types with the catalog's rules (the shapes below are the ones the kernels
//! produce) and rejects what the catalog would reject for shape reasons, naming op, shapes and
//! dtypes. Dtypes a kernel lacks are left to the catalog's own `Unsupported` error at run
//! time, so a graph stays portable between devices with different shader features.
//!
//! `put_slice` stores static starts clamped as Nx clamps them, so a rule reading them sees where
//! the update really went. Starts may also be scalar integer nodes (Nx's tensor starts):
//! `dynamic_slice` and `dynamic_put_slice` clamp their static starts here and leave the node
//! starts to the start kernel, which clamps them on the device when the graph runs (no
//! read-back); with no node among the starts they build the static nodes, so a graph has one
//! form per computation (and one plan-cache key).

use crate::builder::{GraphBuilder, bad, sliced_shape};
use crate::graph::{IndexedUpdate, NodeId, Op, SliceStart, TensorType};
use nxvk_core::{DType, Result};
use nxvk_kernels::sort::Direction;
use nxvk_kernels::types::merge;
use nxvk_kernels::{ScanOp, ScatterSelect, WindowOp, WindowOptions};

/// The axes `depth` index coordinates address in a rank-`rank` tensor (Nx's default: the
/// leading ones), when they are `depth` strictly increasing axes of it.
fn indexed_axes(axes: Option<&[usize]>, depth: usize, rank: usize) -> Option<Vec<usize>> {
    let axes: Vec<usize> = axes.map_or_else(|| (0..depth.min(rank)).collect(), <[usize]>::to_vec);
    let valid = axes.len() == depth
        && axes.windows(2).all(|pair| pair[0] < pair[1])
        && axes.iter().all(|&axis| axis < rank);
    valid.then_some(axes)
}

/// Checks that `indices` hold integer coordinates (the catalog indexes with s8..u64).
fn check_index_dtype(op: &'static str, input: &TensorType, indices: &TensorType) -> Result<()> {
    if !indices.dtype.is_integer() || indices.dtype.is_sub_byte() || input.dtype.is_sub_byte() {
        return Err(bad(
            op,
            &[input, indices],
            "indices must be s8..s64 or u8..u64 and the tensor must not be sub-byte",
        ));
    }
    Ok(())
}

/// The pooled shape of `input` under a window of `window` with `options` (the window kernels'
/// geometry: padded size, dilated window, then one output per stride that fits).
fn window_output_shape(
    op: &'static str,
    input: &TensorType,
    window: &[usize],
    options: &WindowOptions,
) -> Result<Vec<usize>> {
    let rank = input.shape.len();
    let per_axis = |length: usize| length == 0 || length == rank;
    if window.len() != rank
        || !per_axis(options.strides.len())
        || !per_axis(options.padding.len())
        || !per_axis(options.window_dilations.len())
    {
        return Err(bad(
            op,
            &[input],
            format!(
                "window {window:?} and {options:?} need one entry per axis (options may be empty)"
            ),
        ));
    }
    (0..rank)
        .map(|axis| {
            let stride = options.strides.get(axis).copied().unwrap_or(1);
            let dilation = options.window_dilations.get(axis).copied().unwrap_or(1);
            let (low, high) = options.padding.get(axis).copied().unwrap_or((0, 0));
            let padded = input.shape[axis] as i128 + i128::from(low) + i128::from(high);
            let dilated = (window[axis] as i128 - 1) * dilation as i128 + 1;
            if window[axis] == 0 || stride == 0 || dilation == 0 || padded < dilated {
                return Err(bad(
                    op,
                    &[input],
                    format!("the window does not fit axis {axis} (padded size {padded}, dilated window {dilated}, stride {stride})"),
                ));
            }
            usize::try_from((padded - dilated) / stride as i128 + 1)
                .map_err(|_| bad(op, &[input], format!("axis {axis} of the output is too long")))
        })
        .collect()
}

/// Checks that `patch` can be put into `tensor` (one dtype and rank, no axis longer) at
/// `n_starts` starts.
fn check_update_fits(tensor: &TensorType, patch: &TensorType, n_starts: usize) -> Result<()> {
    let fits = n_starts == tensor.shape.len()
        && patch.shape.len() == tensor.shape.len()
        && patch.dtype == tensor.dtype
        && patch.shape.iter().zip(&tensor.shape).all(|(u, s)| u <= s);
    if !fits {
        return Err(bad(
            "put_slice",
            &[tensor, patch],
            format!(
                "the update must have the input's dtype and rank, fit inside it, and one start per axis ({n_starts} given)"
            ),
        ));
    }
    Ok(())
}

/// Clamps a static start into `0..=size - length` (Nx's clamp; the caller checked that the
/// length fits). A span past `i64::MAX` (only a damaged encoding declares one) caps there
/// rather than wrapping negative.
fn clamp_start(start: i64, size: usize, length: usize) -> i64 {
    start.clamp(0, i64::try_from(size - length).unwrap_or(i64::MAX))
}

impl GraphBuilder {
    /// `starts` for a window of `lengths` in `tensor` (one per axis): static ones clamped, node
    /// ones checked to be scalar integers of 8 to 64 bits.
    fn window_starts(
        &self,
        op: &'static str,
        tensor: &TensorType,
        starts: &[SliceStart],
        lengths: &[usize],
    ) -> Result<Vec<SliceStart>> {
        starts
            .iter()
            .zip(tensor.shape.iter().zip(lengths))
            .enumerate()
            .map(|(axis, (&start, (&size, &length)))| match start {
                SliceStart::Static(value) => {
                    Ok(SliceStart::Static(clamp_start(value, size, length)))
                }
                SliceStart::Node(node) => {
                    let start = self.tensor(op, node)?;
                    if !start.shape.is_empty()
                        || !start.dtype.is_integer()
                        || start.dtype.is_sub_byte()
                    {
                        return Err(bad(
                            op,
                            &[tensor, &start],
                            format!(
                                "the start of axis {axis} must be a scalar integer (s8..s64 or u8..u64)"
                            ),
                        ));
                    }
                    Ok(SliceStart::Node(node))
                }
            })
            .collect()
    }

    /// Nx's `slice` at `starts` that may be scalar integer nodes (Nx's tensor starts):
    /// `lengths[i]` elements of axis `i` from its start, every `strides[i]`th
    /// (`ceil(lengths[i] / strides[i])` in the result). Each start is clamped to
    /// `0..=size - length` as Nx clamps it: static ones here, node ones when the graph runs.
    /// Without a node start this is [`GraphBuilder::slice`] at the clamped starts.
    pub fn dynamic_slice(
        &mut self,
        input: NodeId,
        starts: &[SliceStart],
        lengths: &[usize],
        strides: &[usize],
    ) -> Result<NodeId> {
        const OP: &str = "slice";
        let tensor = self.tensor(OP, input)?;
        let shape = sliced_shape(&tensor, starts.len(), lengths, strides)?;
        let starts = self.window_starts(OP, &tensor, starts, lengths)?;
        if let Some(values) = SliceStart::all_static(&starts) {
            let values: Vec<usize> = values.iter().map(|&value| value as usize).collect();
            return self.slice(input, &values, lengths, strides);
        }
        self.push_tensor(
            Op::DynamicSlice {
                input,
                starts,
                lengths: lengths.to_vec(),
                strides: strides.to_vec(),
            },
            tensor.dtype,
            shape,
        )
    }

    /// Nx's `put_slice` at `starts` that may be scalar integer nodes: `input` with `update`
    /// (of the input's dtype and rank, fitting inside it) written from the starts, each
    /// clamped so the update fits: static ones here, node ones when the graph runs. Without a
    /// node start this is [`GraphBuilder::put_slice`].
    pub fn dynamic_put_slice(
        &mut self,
        input: NodeId,
        starts: &[SliceStart],
        update: NodeId,
    ) -> Result<NodeId> {
        const OP: &str = "put_slice";
        let (tensor, patch) = (self.tensor(OP, input)?, self.tensor(OP, update)?);
        check_update_fits(&tensor, &patch, starts.len())?;
        let clamped = self.window_starts(OP, &tensor, starts, &patch.shape)?;
        if let Some(values) = SliceStart::all_static(&clamped) {
            return self.put_slice(input, &values, update);
        }
        self.push_tensor(
            Op::DynamicPutSlice {
                input,
                update,
                starts: clamped,
            },
            tensor.dtype,
            tensor.shape,
        )
    }

    /// Nx's `pad`: per axis `(low, high, interior)`; negative `low`/`high` crop. `value` is a
    /// scalar of the input's dtype.
    pub fn pad(
        &mut self,
        input: NodeId,
        value: NodeId,
        config: &[(i64, i64, usize)],
    ) -> Result<NodeId> {
        const OP: &str = "pad";
        let (tensor, scalar) = (self.tensor(OP, input)?, self.tensor(OP, value)?);
        if config.len() != tensor.shape.len()
            || !scalar.shape.is_empty()
            || scalar.dtype != tensor.dtype
        {
            return Err(bad(
                OP,
                &[&tensor, &scalar],
                format!(
                    "needs one (low, high, interior) per axis ({config:?}) and a scalar pad value of the input's dtype"
                ),
            ));
        }
        let shape = tensor
            .shape
            .iter()
            .zip(config)
            .map(|(&size, &(low, high, interior))| {
                let size = size as i128;
                let padded = size
                    + (size - 1).max(0) * interior as i128
                    + i128::from(low)
                    + i128::from(high);
                usize::try_from(padded).map_err(|_| {
                    bad(
                        OP,
                        &[&tensor],
                        format!("{config:?} gives an axis of size {padded}"),
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        self.push_tensor(
            Op::Pad {
                input,
                value,
                config: config.to_vec(),
            },
            tensor.dtype,
            shape,
        )
    }

    /// Nx's `concatenate` along `axis`: one dtype, equal sizes on the other axes.
    pub fn concatenate(&mut self, inputs: &[NodeId], axis: usize) -> Result<NodeId> {
        const OP: &str = "concatenate";
        let tensors = inputs
            .iter()
            .map(|&id| self.tensor(OP, id))
            .collect::<Result<Vec<_>>>()?;
        let shown: Vec<&TensorType> = tensors.iter().collect();
        let Some(first) = tensors.first() else {
            return Err(bad(OP, &[], "needs at least one tensor"));
        };
        let rank = first.shape.len();
        let compatible = axis < rank
            && tensors.iter().all(|tensor| {
                tensor.dtype == first.dtype
                    && tensor.shape.len() == rank
                    && (0..rank)
                        .all(|other| other == axis || tensor.shape[other] == first.shape[other])
            });
        if !compatible {
            return Err(bad(
                OP,
                &shown,
                format!("operands must share dtype, rank and every size but axis {axis}'s"),
            ));
        }
        let mut shape = first.shape.clone();
        shape[axis] = tensors.iter().map(|tensor| tensor.shape[axis]).sum();
        let dtype = first.dtype;
        self.push_tensor(
            Op::Concatenate {
                inputs: inputs.to_vec(),
                axis,
            },
            dtype,
            shape,
        )
    }

    /// Nx's `put_slice`: `input` with `update` written from `starts`, each clamped (as Nx
    /// clamps) so the update fits.
    pub fn put_slice(&mut self, input: NodeId, starts: &[i64], update: NodeId) -> Result<NodeId> {
        const OP: &str = "put_slice";
        let (tensor, patch) = (self.tensor(OP, input)?, self.tensor(OP, update)?);
        check_update_fits(&tensor, &patch, starts.len())?;
        let clamped = starts
            .iter()
            .zip(tensor.shape.iter().zip(&patch.shape))
            .map(|(&start, (&size, &length))| clamp_start(start, size, length) as usize)
            .collect();
        self.push_tensor(
            Op::PutSlice {
                input,
                update,
                starts: clamped,
            },
            tensor.dtype,
            tensor.shape,
        )
    }

    /// Nx's `gather`: `indices` of shape `[..., k]` select the elements at `k` coordinates on
    /// `axes` (default: the leading `k` axes); the result has shape
    /// `indices.shape[..-1] ++ (the other axes of input)`.
    pub fn gather(
        &mut self,
        input: NodeId,
        indices: NodeId,
        axes: Option<&[usize]>,
    ) -> Result<NodeId> {
        const OP: &str = "gather";
        let (tensor, index) = (self.tensor(OP, input)?, self.tensor(OP, indices)?);
        check_index_dtype(OP, &tensor, &index)?;
        let rank = tensor.shape.len();
        let Some((&depth, outer)) = index.shape.split_last() else {
            return Err(bad(
                OP,
                &[&tensor, &index],
                "indices must have rank at least 1",
            ));
        };
        let axes = indexed_axes(axes, depth, rank).ok_or_else(|| {
            bad(
                OP,
                &[&tensor, &index],
                format!(
                    "the last axis of indices ({depth}) must equal the number of increasing axes {axes:?}"
                ),
            )
        })?;
        let mut shape = outer.to_vec();
        shape.extend(
            (0..rank)
                .filter(|axis| !axes.contains(axis))
                .map(|axis| tensor.shape[axis]),
        );
        self.push_tensor(
            Op::Gather {
                input,
                indices,
                axes,
            },
            tensor.dtype,
            shape,
        )
    }

    /// Nx's `take` along `axis`: shape `input[..axis] ++ indices ++ input[axis + 1..]`.
    pub fn take(&mut self, input: NodeId, indices: NodeId, axis: usize) -> Result<NodeId> {
        const OP: &str = "take";
        let (tensor, index) = (self.tensor(OP, input)?, self.tensor(OP, indices)?);
        check_index_dtype(OP, &tensor, &index)?;
        if axis >= tensor.shape.len() {
            return Err(bad(
                OP,
                &[&tensor, &index],
                format!("axis {axis} out of range"),
            ));
        }
        let mut shape = tensor.shape[..axis].to_vec();
        shape.extend(&index.shape);
        shape.extend(&tensor.shape[axis + 1..]);
        self.push_tensor(
            Op::Take {
                input,
                indices,
                axis,
            },
            tensor.dtype,
            shape,
        )
    }

    /// Nx's `take_along_axis`: `indices` of the input's rank, no larger on the other axes;
    /// the result has the indices' shape.
    pub fn take_along_axis(
        &mut self,
        input: NodeId,
        indices: NodeId,
        axis: usize,
    ) -> Result<NodeId> {
        const OP: &str = "take_along_axis";
        let (tensor, index) = (self.tensor(OP, input)?, self.tensor(OP, indices)?);
        check_index_dtype(OP, &tensor, &index)?;
        let rank = tensor.shape.len();
        let fits = index.shape.len() == rank
            && axis < rank
            && (0..rank).all(|other| other == axis || index.shape[other] <= tensor.shape[other]);
        if !fits {
            return Err(bad(
                OP,
                &[&tensor, &index],
                format!("indices must have the input's rank, no larger off axis {axis}"),
            ));
        }
        self.push_tensor(
            Op::TakeAlongAxis {
                input,
                indices,
                axis,
            },
            tensor.dtype,
            index.shape,
        )
    }

    /// Nx's `indexed_put`/`indexed_add`: `indices` `[n, k]` on `axes` (default: the leading
    /// `k`), `updates` `[n, ...]` with one axis (no larger than the target's) per other axis.
    /// The result merges the target's and updates' dtypes.
    pub fn indexed(
        &mut self,
        update: IndexedUpdate,
        target: NodeId,
        indices: NodeId,
        updates: NodeId,
        axes: Option<&[usize]>,
    ) -> Result<NodeId> {
        let op = update.name();
        let (tensor, index, patch) = (
            self.tensor(op, target)?,
            self.tensor(op, indices)?,
            self.tensor(op, updates)?,
        );
        let shown = [&tensor, &index, &patch];
        check_index_dtype(op, &tensor, &index)?;
        let rank = tensor.shape.len();
        let [rows, depth] = index.shape[..] else {
            return Err(bad(op, &shown, "indices must have shape [n, k]"));
        };
        let axes = indexed_axes(axes, depth, rank).ok_or_else(|| {
            bad(
                op,
                &shown,
                format!("indices [n, {depth}] need {depth} increasing axes ({axes:?})"),
            )
        })?;
        let free: Vec<usize> = (0..rank).filter(|axis| !axes.contains(axis)).collect();
        let window = patch.shape.get(1..).unwrap_or(&[]);
        let fits = patch.shape.first() == Some(&rows)
            && window.len() == free.len()
            && window
                .iter()
                .zip(&free)
                .all(|(&size, &axis)| size <= tensor.shape[axis]);
        if !fits || patch.dtype.is_sub_byte() {
            return Err(bad(
                op,
                &shown,
                format!(
                    "updates must be [{rows}, ...] with one axis (no larger than the target's) per non-indexed axis {free:?}"
                ),
            ));
        }
        self.push_tensor(
            Op::Indexed {
                update,
                target,
                indices,
                updates,
                axes,
            },
            merge(tensor.dtype, patch.dtype),
            tensor.shape,
        )
    }

    /// Nx's cumulative `op` along `axis`, from the end when `reverse`.
    pub fn cumulative(
        &mut self,
        op: ScanOp,
        input: NodeId,
        axis: usize,
        reverse: bool,
    ) -> Result<NodeId> {
        let tensor = self.tensor(op.name(), input)?;
        let ordered = !(tensor.dtype.is_complex() && matches!(op, ScanOp::Min | ScanOp::Max));
        if axis >= tensor.shape.len() || !ordered {
            return Err(bad(
                op.name(),
                &[&tensor],
                format!(
                    "axis {axis} must be an axis, and min/max need ordered (non-complex) values"
                ),
            ));
        }
        self.push_tensor(
            Op::Cumulative {
                op,
                input,
                axis,
                reverse,
            },
            tensor.dtype,
            tensor.shape,
        )
    }

    /// Nx's window_sum/product/max/min; the result keeps the input's dtype.
    pub fn window(
        &mut self,
        op: WindowOp,
        input: NodeId,
        window: &[usize],
        options: WindowOptions,
    ) -> Result<NodeId> {
        let tensor = self.tensor(op.name(), input)?;
        let shape = window_output_shape(op.name(), &tensor, window, &options)?;
        self.push_tensor(
            Op::Window {
                op,
                input,
                window: window.to_vec(),
                options,
            },
            tensor.dtype,
            shape,
        )
    }

    /// Nx's window_scatter_max/min: `source` has the pooled shape and `init_value` is a scalar;
    /// the result has the input's shape and Nx's type, the merge of the source's and the init
    /// value's (the executor selects on the input converted to it).
    pub fn window_scatter(
        &mut self,
        select: ScatterSelect,
        input: NodeId,
        source: NodeId,
        init_value: NodeId,
        window: &[usize],
        options: WindowOptions,
    ) -> Result<NodeId> {
        let op = select.name();
        let (tensor, scattered, initial) = (
            self.tensor(op, input)?,
            self.tensor(op, source)?,
            self.tensor(op, init_value)?,
        );
        let pooled = window_output_shape(op, &tensor, window, &options)?;
        if scattered.shape != pooled || !initial.shape.is_empty() {
            return Err(bad(
                op,
                &[&tensor, &scattered, &initial],
                format!(
                    "source must have the pooled shape {pooled:?} and init_value must be a scalar"
                ),
            ));
        }
        self.push_tensor(
            Op::WindowScatter {
                select,
                input,
                source,
                init_value,
                window: window.to_vec(),
                options,
            },
            merge(scattered.dtype, initial.dtype),
            tensor.shape,
        )
    }

    /// Nx's `iota`: coordinates along `axis`, or with `None` row-major positions.
    pub fn iota(&mut self, dtype: DType, shape: &[usize], axis: Option<usize>) -> Result<NodeId> {
        if axis.is_some_and(|axis| axis >= shape.len()) || !(dtype.is_integer() || dtype.is_float())
        {
            return Err(bad(
                "iota",
                &[&TensorType::new(dtype, shape)],
                format!("axis {axis:?} must be an axis and the dtype real"),
            ));
        }
        self.push_tensor(Op::Iota { axis }, dtype, shape.to_vec())
    }

    /// Nx's stable `sort` along `axis`; with `positions: Some(dtype)`, `argsort` giving the
    /// sorted elements' positions as `dtype`.
    pub fn sort(
        &mut self,
        input: NodeId,
        axis: usize,
        direction: Direction,
        positions: Option<DType>,
    ) -> Result<NodeId> {
        let op = if positions.is_some() {
            "argsort"
        } else {
            "sort"
        };
        let tensor = self.tensor(op, input)?;
        let index_ok = positions.is_none_or(|dtype| dtype.is_integer() && !dtype.is_sub_byte());
        if axis >= tensor.shape.len() || tensor.dtype.is_complex() || !index_ok {
            return Err(bad(
                op,
                &[&tensor],
                format!(
                    "axis {axis} must be an axis, values ordered and positions ({positions:?}) an integer type"
                ),
            ));
        }
        self.push_tensor(
            Op::Sort {
                input,
                axis,
                direction,
                positions: positions.is_some(),
            },
            positions.unwrap_or(tensor.dtype),
            tensor.shape,
        )
    }
}
