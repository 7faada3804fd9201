//! Reductions: sum, product, reduce_max, reduce_min, all, any, argmax and argmin over any set
//! of axes of any view, with Nx's result types and NaN rules (Nx.BinaryBackend's).
//!
//! The reduced axes are never moved in memory: the kernels walk the kept axes and the reduced
//! axes through their own shapes and strides (each simplified by merging contiguous
//! neighbours). The simplified layout picks the template (`reduce_codegen.rs`):
//! - the reduced elements of each output form one contiguous run (full reductions and
//!   reductions of the last axes of contiguous tensors; packet-aligned start, and a device with
//!   subgroup shuffles): [`ReduceLayout::Rows`], a subgroup per row up to `32 x subgroup size`
//!   elements, else a workgroup per row chunk;
//! - one kept axis of stride 1 and one strided reduced axis (column sums):
//!   [`ReduceLayout::Columns`], an invocation per column (four when aligned) per chunk of rows;
//! - anything else: [`ReduceLayout::Strided`], a workgroup per output (or chunk of one).
//!
//! When a layout splits outputs into chunks, the first pass writes partial results in the
//! accumulator type and further passes reduce the partials (contiguous again, so they take the
//! fast templates); argmax/argmin always take one pass, and take the Strided template where
//! one pass of the others would need too many iterations per invocation.
//!
//! Result types: sums and products of integers are s64/u64 (`Nx.Type.to_aggregate`), floats
//! keep their type (f16 and bf16 accumulate in f32, and f32 optionally in f64 through
//! [`Accumulation::F64`]); all/any give u8; argmax/argmin give s64 indices, row-major over the
//! reduced axes. reduce_max/min propagate NaN; argmax/argmin pick the last NaN if any (the
//! BinaryBackend replaces the current extreme at every NaN), otherwise the extreme with ties
//! broken by [`TieBreak`]. A reduction with no identity (max, min, argmax, argmin) over an
//! empty axis is an error naming the op, as Nx cannot produce a value there either.
//! Complex sum, product, all and any run on the GPU (`reduce_complex.rs`: sums and `any` as
//! real reductions of the parts, `all` over `not_equal(x, 0)`, products in their own kernel);
//! complex max/min/argmax/argmin are errors as in Nx. Sub-byte dtypes (and anything the device
//! lacks a shader feature for) take the counted host fallback, which obeys strict mode; 8-bit
//! floats are unsupported.

use crate::argmax_two_pass;
use crate::catalog::{
    CatalogKernel, REDUCE_F64_KERNELS, REDUCE_KERNELS, cast_kernel, device_supports,
    device_supports_value, dtype_of, elem_of, value_of,
};
use crate::dense_codegen::{PACKET_ELEMENTS, packet_bytes};
use crate::launch::{MAX_ELEMENTS, launch, poison_output, simplify};
use crate::op_table::Elem;
use crate::operand_errors::bad_operands;
use crate::reduce_codegen::{
    FLAG_PACKED_COLUMNS, FLAG_SUBGROUP_TEAMS, FLAG_TIE_BREAK_HIGH, REDUCE_PARAMS_ADDRESS_OFFSET,
    REDUCE_PUSH_CONSTANT_BYTES, REDUCE_WORKGROUP_SIZE,
};
use crate::reference::{self, Value};
use nxvk_core::{BufferAccess, Capabilities, DType, DeviceBuffer, Error, Kernel, Result, Tensor};

pub use crate::argmax_two_pass::arg_reduce_in_chunks;
pub use crate::reduce_codegen::{Accumulation, ReduceLayout, ReduceOp, accumulator_elem, fold};

/// Which index argmax/argmin return among equal extremes (Nx's `:tie_break`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    #[default]
    Low,
    High,
}

/// Options of one reduction.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReduceOptions<'a> {
    /// The axes to reduce; `None` reduces all of them (`Some(&[])` reduces none).
    pub axes: Option<&'a [usize]>,
    /// Keep reduced axes as size 1 (Nx's `:keep_axes` / `:keep_axis`).
    pub keep_axes: bool,
    /// The accumulator of float sums and products.
    pub accumulation: Accumulation,
    /// Ties of argmax/argmin.
    pub tie_break: TieBreak,
}

/// Reduced sizes at or above this many elements per output may be split into chunks...
pub(crate) const SPLIT_MIN_REDUCED: usize = 16 * REDUCE_WORKGROUP_SIZE as usize;
/// ...of about this many elements each...
pub(crate) const CHUNK_ELEMENTS: usize = 8 * REDUCE_WORKGROUP_SIZE as usize;
/// ...as long as outputs times chunks stays under this many workgroups.
pub(crate) const SPLIT_MAX_TASKS: usize = 4096;
/// Workgroups of one dispatch (a grid-stride loop covers more tasks).
const MAX_GROUPS: usize = 65_535;
/// Rows template: rows up to this many subgroups' widths take one subgroup each.
const ROW_SUBGROUP_WIDTHS: usize = 32;
/// Rows template: elements per chunk of a long row (16 packets per invocation of a workgroup).
const ROW_CHUNK_ELEMENTS: usize = 16 * 1024;
/// Rows template: most (row, chunk) tasks of one pass.
const ROW_MAX_TASKS: usize = 65_536;
/// Columns template: fewest rows per chunk...
const COLUMN_MIN_ROWS: usize = 32;
/// ...and about this many (column, chunk) items per pass, enough to fill a large GPU.
const COLUMN_TARGET_ITEMS: usize = 1 << 20;
/// Columns template: argmax/argmin (one pass) only up to this many rows per invocation.
const COLUMN_ARG_MAX_ROWS: usize = 4096;

/// Nx's result type of `op` on `input`.
pub const fn result_dtype(op: ReduceOp, input: DType) -> DType {
    match op {
        ReduceOp::Sum | ReduceOp::Product => match input.class() {
            nxvk_core::DTypeClass::SignedInt => DType::S64,
            nxvk_core::DTypeClass::UnsignedInt => DType::U64,
            _ => input,
        },
        ReduceOp::ReduceMax | ReduceOp::ReduceMin => input,
        ReduceOp::All | ReduceOp::Any => DType::U8,
        ReduceOp::ArgMax | ReduceOp::ArgMin => DType::S64,
    }
}

/// True when `op` on `dtype` runs on a device with `capabilities` (else `reduce` takes the
/// counted host fallback).
pub fn runs_on_gpu(op: ReduceOp, dtype: DType, capabilities: &Capabilities) -> bool {
    if let Some(value @ crate::op_table::ValueType::Complex(_)) = value_of(dtype) {
        return crate::reduce_complex::has_kernel(op) && device_supports_value(capabilities, value);
    }
    elem_of(dtype).is_some_and(|elem| {
        device_supports(capabilities, elem)
            && device_supports(
                capabilities,
                accumulator_elem(op, elem, Accumulation::Native),
            )
    })
}

/// [`bad_operands`] for this module's single-operand checks.
fn bad(op: &'static str, input: &Tensor, detail: String) -> Error {
    bad_operands(op, &[input], detail)
}

/// The sorted reduced axes, checked against the rank.
fn reduced_axes(op: &'static str, input: &Tensor, axes: Option<&[usize]>) -> Result<Vec<usize>> {
    let rank = input.shape().len();
    let Some(axes) = axes else {
        return Ok((0..rank).collect());
    };
    let mut sorted = axes.to_vec();
    sorted.sort_unstable();
    if let Some(&axis) = sorted.iter().find(|&&axis| axis >= rank) {
        return Err(bad(
            op,
            input,
            format!("axis {axis} out of range for rank {rank}"),
        ));
    }
    if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(bad(op, input, format!("axes {axes:?} repeat an axis")));
    }
    Ok(sorted)
}

pub(crate) fn to_u32(op: &'static str, input: &Tensor, value: usize) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        bad(
            op,
            input,
            format!("{value} does not fit the kernels' 32-bit index arithmetic"),
        )
    })
}

pub(crate) fn kernel(
    op: ReduceOp,
    elem: Elem,
    accumulation: Accumulation,
    layout: ReduceLayout,
) -> &'static CatalogKernel {
    let native = REDUCE_KERNELS[layout.index()][op.index()][elem.index()];
    let wide = match accumulation {
        Accumulation::F64 => REDUCE_F64_KERNELS[layout.index()][op.index()][elem.index()],
        Accumulation::Native => None,
    };
    wide.or(native)
        .expect("the build script compiles every reduction for every native type")
}

/// One pass of a reduction: the kernel, the input's view as kept and reduced (shape, strides)
/// pairs, the chunks each output splits into, the flags and the workgroups to launch.
pub(crate) struct Pass<'a> {
    pub(crate) op: ReduceOp,
    pub(crate) kernel: &'static CatalogKernel,
    pub(crate) input: &'a Tensor,
    pub(crate) kept: (&'a [usize], &'a [usize]),
    pub(crate) reduced: (&'a [usize], &'a [usize]),
    pub(crate) chunks: usize,
    pub(crate) flags: u32,
    pub(crate) groups: usize,
}

/// Records `pass`, writing its accumulator values into `output`.
pub(crate) fn dispatch(pass: &Pass<'_>, output: &Tensor) -> Result<()> {
    let loaded = pass.kernel.load(output.device())?;
    dispatch_kernel(pass, &loaded, &[], &[], output)
}

/// Records `pass` with `loaded` in place of its catalog kernel, `extra_words` after the
/// layout words of the parameter block, and `extra_reads` read besides the input.
pub(crate) fn dispatch_kernel(
    pass: &Pass<'_>,
    loaded: &Kernel,
    extra_words: &[u32],
    extra_reads: &[&DeviceBuffer],
    output: &Tensor,
) -> Result<()> {
    let Pass {
        op,
        input,
        kept,
        reduced,
        chunks,
        flags,
        groups,
        ..
    } = *pass;
    let name = op.name();
    let n_outputs: usize = kept.0.iter().product();
    let n_reduced: usize = reduced.0.iter().product();
    let mut words = Vec::new();
    for values in [kept.0, kept.1, reduced.0, reduced.1] {
        for &value in values {
            words.push(to_u32(name, input, value)?);
        }
    }
    words.extend_from_slice(extra_words);
    // The block must not be empty; rank-0 views read no words.
    words.push(0);
    let params: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
    let mut push = Vec::with_capacity(REDUCE_PUSH_CONSTANT_BYTES);
    for word in [address(name, input)?, address(name, output)?, 0] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    for word in [
        to_u32(name, input, n_outputs)?,
        to_u32(name, input, n_reduced)?,
        kept.0.len() as u32,
        reduced.0.len() as u32,
        to_u32(name, input, chunks)?,
        flags,
    ] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    to_u32(name, input, n_outputs * chunks)?;
    let device = output.device();
    poison_output(output.buffer())?;
    let max_groups = device.capabilities().max_workgroup_count[0] as usize;
    let groups = groups.clamp(1, MAX_GROUPS.min(max_groups)) as u32;
    let mut accesses = vec![
        BufferAccess::Read(input.buffer()),
        BufferAccess::Write(output.buffer()),
    ];
    accesses.extend(extra_reads.iter().map(|&buffer| BufferAccess::Read(buffer)));
    device.dispatch_with_params(
        loaded,
        [groups, 1, 1],
        &push,
        &params,
        REDUCE_PARAMS_ADDRESS_OFFSET,
        &accesses,
    )
}

fn address(op: &'static str, tensor: &Tensor) -> Result<u64> {
    tensor.device_address().ok_or_else(|| {
        bad(
            op,
            tensor,
            "sub-byte tensors have no element addresses".into(),
        )
    })
}

/// The template that reduces `kept` and `reduced` (simplified (shape, strides) pairs of
/// `input`'s view) of `elem` fastest on this device (see the module documentation).
fn reduce_layout(
    op: ReduceOp,
    elem: Elem,
    input: &Tensor,
    kept: (&[usize], &[usize]),
    reduced: (&[usize], &[usize]),
) -> ReduceLayout {
    let capabilities = input.device().capabilities();
    let aligned = packet_aligned(input, elem);
    let n_reduced: usize = reduced.0.iter().product();
    let subgroups =
        capabilities.subgroup_operations.basic && capabilities.subgroup_operations.shuffle;
    let contiguous_run = reduced.0.len() <= 1 && reduced.1.iter().all(|&stride| stride == 1);
    let one_row_per_pass =
        !op.is_arg() || n_reduced <= ROW_MAX_TASKS * REDUCE_WORKGROUP_SIZE as usize;
    if contiguous_run && aligned && subgroups && one_row_per_pass {
        return ReduceLayout::Rows;
    }
    let columns = kept.0.len() == 1 && kept.1[0] == 1 && reduced.0.len() == 1;
    if columns && (!op.is_arg() || n_reduced <= COLUMN_ARG_MAX_ROWS) {
        return ReduceLayout::Columns;
    }
    ReduceLayout::Strided
}

/// True when `input`'s first element (of catalog type `elem`) starts a packet.
fn packet_aligned(input: &Tensor, elem: Elem) -> bool {
    input
        .device_address()
        .is_some_and(|address| address.is_multiple_of(packet_bytes(elem)))
}

/// Reduces `kept`/`reduced` of `input` (of catalog type `elem`) into a fresh accumulator
/// tensor of `output_shape`, in as many passes as the chosen template needs.
#[allow(clippy::too_many_arguments)] // One reduction description; a struct would only rename it.
fn reduce_passes(
    op: ReduceOp,
    elem: Elem,
    accumulation: Accumulation,
    input: &Tensor,
    kept: (&[usize], &[usize]),
    reduced: (&[usize], &[usize]),
    tie_break: TieBreak,
    output_shape: &[usize],
) -> Result<Tensor> {
    let device = input.device();
    let accumulator = accumulator_elem(op, elem, accumulation);
    let accumulator_dtype = dtype_of(accumulator);
    let n_outputs: usize = kept.0.iter().product();
    let n_reduced: usize = reduced.0.iter().product();
    let layout = reduce_layout(op, elem, input, kept, reduced);
    let tie_flag = match tie_break {
        TieBreak::Low => 0,
        TieBreak::High => FLAG_TIE_BREAK_HIGH,
    };
    let workgroup = REDUCE_WORKGROUP_SIZE as usize;
    let (chunks, flags, groups) = match layout {
        ReduceLayout::Rows => {
            let subgroup_size = device.capabilities().subgroup_size.max(1) as usize;
            if n_reduced <= ROW_SUBGROUP_WIDTHS * subgroup_size {
                let rows_per_group = (workgroup / subgroup_size).max(1);
                (
                    1,
                    tie_flag | FLAG_SUBGROUP_TEAMS,
                    n_outputs.div_ceil(rows_per_group),
                )
            } else {
                let chunks = if op.is_arg() {
                    1
                } else {
                    n_reduced
                        .div_ceil(ROW_CHUNK_ELEMENTS)
                        .min(ROW_MAX_TASKS / n_outputs)
                        .max(1)
                };
                (chunks, tie_flag, n_outputs * chunks)
            }
        }
        ReduceLayout::Columns => {
            let packed = n_outputs.is_multiple_of(PACKET_ELEMENTS as usize)
                && reduced.1[0].is_multiple_of(PACKET_ELEMENTS as usize)
                && packet_aligned(input, elem);
            let width = if packed { PACKET_ELEMENTS as usize } else { 1 };
            let column_groups = n_outputs.div_ceil(width);
            let chunks = if op.is_arg() {
                1
            } else {
                n_reduced
                    .div_ceil(COLUMN_MIN_ROWS)
                    .min(COLUMN_TARGET_ITEMS.div_ceil(column_groups))
                    .max(1)
            };
            let flags = tie_flag | if packed { FLAG_PACKED_COLUMNS } else { 0 };
            (chunks, flags, (column_groups * chunks).div_ceil(workgroup))
        }
        ReduceLayout::Strided => {
            let chunks = if op.is_arg() || n_reduced < SPLIT_MIN_REDUCED {
                1
            } else {
                n_reduced
                    .div_ceil(CHUNK_ELEMENTS)
                    .min(SPLIT_MAX_TASKS / n_outputs)
                    .max(1)
            };
            (chunks, tie_flag, n_outputs * chunks)
        }
    };
    let pass = Pass {
        op,
        kernel: kernel(op, elem, accumulation, layout),
        input,
        kept,
        reduced,
        chunks,
        flags,
        groups,
    };
    if chunks == 1 {
        let output = Tensor::empty(device, accumulator_dtype, output_shape)?;
        dispatch(&pass, &output)?;
        return Ok(output);
    }
    // Partials: [outputs, chunks] for Rows and Strided, [chunks, outputs] for Columns; either
    // way the next pass reduces them as a contiguous tensor of the accumulator type.
    let (partial_shape, next_kept, next_reduced) = match layout {
        ReduceLayout::Columns => ([chunks, n_outputs], [n_outputs, 1], [chunks, n_outputs]),
        ReduceLayout::Rows | ReduceLayout::Strided => {
            ([n_outputs, chunks], [n_outputs, chunks], [chunks, 1])
        }
    };
    let partials = Tensor::empty(device, accumulator_dtype, &partial_shape)?;
    dispatch(&pass, &partials)?;
    reduce_passes(
        op,
        accumulator,
        Accumulation::Native,
        &partials,
        (&next_kept[..1], &next_kept[1..]),
        (&next_reduced[..1], &next_reduced[1..]),
        tie_break,
        output_shape,
    )
}

/// The kept and the reduced axes (sorted `axes`) of `input`'s view as (shape, element strides)
/// pairs, each simplified (size-1 axes dropped, contiguous neighbours merged).
pub(crate) fn split_axes(input: &Tensor, axes: &[usize]) -> [(Vec<usize>, Vec<usize>); 2] {
    let shape = input.shape();
    let strides = input.layout().strides();
    [false, true].map(|reduced| {
        let (sizes, axis_strides): (Vec<usize>, Vec<usize>) = (0..shape.len())
            .filter(|axis| axes.binary_search(axis).is_ok() == reduced)
            .map(|axis| (shape[axis], strides[axis]))
            .unzip();
        let (sizes, mut axis_strides) = simplify(&sizes, &[axis_strides]);
        (sizes, axis_strides.remove(0))
    })
}

/// The template the first pass of `op` over `axes` of `input` takes on its device, or `None`
/// when the reduction runs on the host or is complex (`reduce_complex.rs` picks its own): a
/// test hook, so tests can prove which template they exercise.
pub fn first_pass_layout(
    op: ReduceOp,
    input: &Tensor,
    axes: Option<&[usize]>,
) -> Result<Option<ReduceLayout>> {
    let axes = reduced_axes(op.name(), input, axes)?;
    let dtype = input.dtype();
    let Some(elem) =
        elem_of(dtype).filter(|_| runs_on_gpu(op, dtype, input.device().capabilities()))
    else {
        return Ok(None);
    };
    let [(kept_shape, kept_strides), (reduced_shape, reduced_strides)] = split_axes(input, &axes);
    Ok(Some(reduce_layout(
        op,
        elem,
        input,
        (&kept_shape, &kept_strides),
        (&reduced_shape, &reduced_strides),
    )))
}

/// Runs `op` over `options.axes` of `input`.
pub fn reduce(op: ReduceOp, input: &Tensor, options: &ReduceOptions<'_>) -> Result<Tensor> {
    reduce_with_arg_chunks(op, input, options, None)
}

/// [`reduce`], with argmax/argmin rows split into `arg_chunks` chunks reduced in two passes
/// (`argmax_two_pass.rs`) when given, whatever the rows' length; `None` splits only rows too
/// long for one pass.
pub(crate) fn reduce_with_arg_chunks(
    op: ReduceOp,
    input: &Tensor,
    options: &ReduceOptions<'_>,
    arg_chunks: Option<usize>,
) -> Result<Tensor> {
    let name = op.name();
    let dtype = input.dtype();
    let device = input.device();
    let unsupported = |detail: &str| Error::Unsupported {
        op: name,
        dtype,
        detail: detail.to_owned(),
    };
    if matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
        return Err(unsupported("8-bit floats have no reduction yet"));
    }
    if dtype.is_complex() && op.needs_elements() {
        return Err(bad(name, input, "Nx does not order complex numbers".into()));
    }
    let result = result_dtype(op, dtype);
    let axes = reduced_axes(name, input, options.axes)?;
    let shape = input.shape();
    let output_shape: Vec<usize> = (0..shape.len())
        .filter_map(
            |axis| match (axes.binary_search(&axis).is_ok(), options.keep_axes) {
                (false, _) => Some(shape[axis]),
                (true, true) => Some(1),
                (true, false) => None,
            },
        )
        .collect();
    let [(kept_shape, kept_strides), (reduced_shape, reduced_strides)] = split_axes(input, &axes);
    let n_outputs: usize = kept_shape.iter().product();
    let n_reduced: usize = reduced_shape.iter().product();
    if n_outputs == 0 {
        return Tensor::empty(device, result, &output_shape);
    }
    if n_reduced == 0 && op.needs_elements() {
        return Err(bad(
            name,
            input,
            format!("cannot reduce empty axes {axes:?}: the op has no identity"),
        ));
    }
    let capabilities = device.capabilities();
    if dtype.is_complex() && runs_on_gpu(op, dtype, capabilities) {
        return crate::reduce_complex::reduce(op, input, &axes, options, &output_shape);
    }
    let Some(elem) = elem_of(dtype).filter(|_| runs_on_gpu(op, dtype, capabilities)) else {
        return reduce_on_host(op, input, &axes, options.tie_break, &output_shape);
    };
    let accumulator = accumulator_elem(op, elem, options.accumulation);
    if !device_supports(capabilities, accumulator) {
        // f64 accumulation on a device without f64: the host accumulates in f64 too.
        return reduce_on_host(op, input, &axes, options.tie_break, &output_shape);
    }
    if n_outputs > MAX_ELEMENTS || n_reduced > MAX_ELEMENTS {
        to_u32(name, input, usize::MAX)?;
    }
    let kept = (&kept_shape[..], &kept_strides[..]);
    let reduced = (&reduced_shape[..], &reduced_strides[..]);
    let accumulator_dtype = dtype_of(accumulator);
    let accumulated = match argmax_two_pass::chunks(op, n_reduced, arg_chunks) {
        Some(chunks) => argmax_two_pass::reduce(
            op,
            elem,
            input,
            kept,
            reduced,
            options.tie_break,
            &output_shape,
            chunks,
        )?,
        None => reduce_passes(
            op,
            elem,
            options.accumulation,
            input,
            kept,
            reduced,
            options.tie_break,
            &output_shape,
        )?,
    };
    if accumulator_dtype == result {
        return Ok(accumulated);
    }
    let to = elem_of(result).expect("results of native inputs are native");
    let cast = cast_kernel(accumulator, to).expect("every pair of native types has a cast");
    let output = Tensor::empty(device, result, &output_shape)?;
    launch(name, cast, &[&accumulated], &output)?;
    Ok(output)
}

fn options(axes: Option<&[usize]>, keep_axes: bool) -> ReduceOptions<'_> {
    ReduceOptions {
        axes,
        keep_axes,
        ..ReduceOptions::default()
    }
}

fn is_zero(value: Value) -> bool {
    match value {
        Value::Int(value) => value == 0,
        Value::Float(value) => value == 0.0,
        Value::Complex(value) => value.re == 0.0 && value.im == 0.0,
    }
}

/// Orders two real values (integers exactly); `None` when either is NaN.
fn compare(a: Value, b: Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(&b)),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(&b),
        _ => None,
    }
}

fn is_nan(value: Value) -> bool {
    matches!(value, Value::Float(value) if value.is_nan())
}

fn real(value: Value) -> f64 {
    match value {
        Value::Int(value) => value as f64,
        Value::Float(value) => value,
        Value::Complex(value) => value.re,
    }
}

fn complex(value: Value) -> nxvk_core::Complex64 {
    match value {
        Value::Complex(value) => value,
        other => nxvk_core::Complex64::new(real(other), 0.0),
    }
}

/// One output of `op` over `group` (row-major over the reduced axes), with Nx.BinaryBackend's
/// semantics, rounded into `result`.
fn host_value(op: ReduceOp, group: &[Value], result: DType, tie_break: TieBreak) -> Value {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let round = |value: Value| reference::round_to(value, result);
    let arithmetic = |identity: i128, combine: fn(Value, Value) -> Value| {
        let start = match result.class() {
            nxvk_core::DTypeClass::SignedInt | nxvk_core::DTypeClass::UnsignedInt => {
                Value::Int(identity)
            }
            nxvk_core::DTypeClass::Complex => {
                Value::Complex(nxvk_core::Complex64::new(identity as f64, 0.0))
            }
            nxvk_core::DTypeClass::Float => Value::Float(identity as f64),
        };
        // Integers wrap at every step (the ring is the same); floats accumulate in f64.
        let integer = matches!(start, Value::Int(_));
        let folded = group.iter().fold(start, |acc, &value| {
            let combined = combine(acc, value);
            if integer { round(combined) } else { combined }
        });
        round(folded)
    };
    match op {
        ReduceOp::Sum => arithmetic(0, |a, b| match (a, b) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a + b),
            (Value::Complex(a), b) => Value::Complex(a + complex(b)),
            (a, b) => Value::Float(real(a) + real(b)),
        }),
        ReduceOp::Product => arithmetic(1, |a, b| match (a, b) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_mul(b)),
            (Value::Complex(a), b) => Value::Complex(a * complex(b)),
            (a, b) => Value::Float(real(a) * real(b)),
        }),
        ReduceOp::All => Value::Int(i128::from(group.iter().all(|&value| !is_zero(value)))),
        ReduceOp::Any => Value::Int(i128::from(group.iter().any(|&value| !is_zero(value)))),
        ReduceOp::ReduceMax | ReduceOp::ReduceMin => {
            let wanted = if op == ReduceOp::ReduceMax {
                Greater
            } else {
                Less
            };
            group
                .iter()
                .copied()
                .reduce(|best, value| {
                    if is_nan(best) {
                        best
                    } else if is_nan(value) || compare(value, best) == Some(wanted) {
                        value
                    } else {
                        best
                    }
                })
                .expect("empty reductions were rejected")
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => {
            let wanted = if op == ReduceOp::ArgMax {
                Greater
            } else {
                Less
            };
            let mut best: Option<(usize, Value)> = None;
            for (index, &value) in group.iter().enumerate() {
                let replace = match best {
                    None => true,
                    // Every NaN replaces the extreme (Nx.BinaryBackend).
                    Some(_) if is_nan(value) => true,
                    Some((_, extreme)) => match compare(value, extreme) {
                        Some(Equal) => tie_break == TieBreak::High,
                        Some(order) => order == wanted,
                        None => false,
                    },
                };
                if replace {
                    best = Some((index, value));
                }
            }
            Value::Int(best.map_or(0, |(index, _)| index as i128))
        }
    }
}

/// The counted host fallback of reductions (sub-byte types, devices lacking a shader
/// feature): obeys strict mode, then reduces the downloaded values.
fn reduce_on_host(
    op: ReduceOp,
    input: &Tensor,
    axes: &[usize],
    tie_break: TieBreak,
    output_shape: &[usize],
) -> Result<Tensor> {
    let name = op.name();
    let dtype = input.dtype();
    let device = input.device();
    let shape = input.shape();
    device.host_fallback(name, dtype, &[shape])?;
    let values = reference::decode(dtype, &input.to_bytes()?, input.n_elements())
        .ok_or_else(|| bad(name, input, "no host decoding for this type".into()))?;
    let kept: Vec<usize> = (0..shape.len())
        .filter(|axis| !axes.contains(axis))
        .collect();
    let n_outputs: usize = kept.iter().map(|&axis| shape[axis]).product();
    let mut groups = vec![Vec::new(); n_outputs];
    let mut coordinates = vec![0usize; shape.len()];
    for &value in &values {
        let output = kept
            .iter()
            .fold(0, |acc, &axis| acc * shape[axis] + coordinates[axis]);
        groups[output].push(value);
        // Row-major increment of the coordinates.
        for axis in (0..shape.len()).rev() {
            coordinates[axis] += 1;
            if coordinates[axis] < shape[axis] {
                break;
            }
            coordinates[axis] = 0;
        }
    }
    let result = result_dtype(op, dtype);
    let outputs: Vec<Value> = groups
        .iter()
        .map(|group| host_value(op, group, result, tie_break))
        .collect();
    Tensor::from_bytes(
        device,
        result,
        output_shape,
        &reference::encode(result, &outputs),
    )
}

/// Nx's `sum` (`axes: None` reduces every axis).
pub fn sum(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::Sum, input, &options(axes, keep_axes))
}

/// Nx's `product`.
pub fn product(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::Product, input, &options(axes, keep_axes))
}

/// Nx's `reduce_max`.
pub fn reduce_max(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::ReduceMax, input, &options(axes, keep_axes))
}

/// Nx's `reduce_min`.
pub fn reduce_min(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::ReduceMin, input, &options(axes, keep_axes))
}

/// Nx's `all` (u8 result).
pub fn all(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::All, input, &options(axes, keep_axes))
}

/// Nx's `any` (u8 result).
pub fn any(input: &Tensor, axes: Option<&[usize]>, keep_axes: bool) -> Result<Tensor> {
    reduce(ReduceOp::Any, input, &options(axes, keep_axes))
}

/// Nx's `argmax`: over `axis`, or over the flattened tensor when `None` (s64 result).
pub fn argmax(
    input: &Tensor,
    axis: Option<usize>,
    tie_break: TieBreak,
    keep_axis: bool,
) -> Result<Tensor> {
    arg_reduce(ReduceOp::ArgMax, input, axis, tie_break, keep_axis, None)
}

/// Nx's `argmin`: over `axis`, or over the flattened tensor when `None` (s64 result).
pub fn argmin(
    input: &Tensor,
    axis: Option<usize>,
    tie_break: TieBreak,
    keep_axis: bool,
) -> Result<Tensor> {
    arg_reduce(ReduceOp::ArgMin, input, axis, tie_break, keep_axis, None)
}

/// argmax or argmin, with rows split into `arg_chunks` when given (see
/// [`reduce_with_arg_chunks`]).
pub(crate) fn arg_reduce(
    op: ReduceOp,
    input: &Tensor,
    axis: Option<usize>,
    tie_break: TieBreak,
    keep_axis: bool,
    arg_chunks: Option<usize>,
) -> Result<Tensor> {
    let axes = [axis.unwrap_or(0)];
    let options = ReduceOptions {
        axes: axis.map(|_| &axes[..]),
        keep_axes: keep_axis,
        tie_break,
        ..ReduceOptions::default()
    };
    reduce_with_arg_chunks(op, input, &options, arg_chunks)
}
