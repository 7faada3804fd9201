//! Data movement that writes new memory: materialised views, reverse, strided slice, pad,
//! concatenate, stack and put_slice (nxvk-kernels' `movement` templates).
//!
//! Each NIF decodes its arguments and calls the catalog; bounds, clamping and dtype rules are
//! nxvk-kernels'. All are dirty: they allocate, may compile a kernel and record GPU work.
//! The `_as` variants take the result type Nx chose (`out`'s type): operands of other types
//! are converted on the device while they are copied. Starts of `slice_at` and `put_slice_as`
//! may be tensors, read and clamped on the device: one rank-1 tensor, or a list with one
//! integer or scalar integer tensor per axis (each tensor read in its own type, so Nx's mixed
//! start types clamp exactly).

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, decode_dtype, wrap};
use crate::terms::{decode_indices, tuple_or_list_items};
use nxvk_core::Tensor;
use nxvk_kernels::movement::{self, AxisStart, Starts};
use rustler::Term;

/// A list of (possibly negative) integers given as a tuple or a list.
fn decode_offsets(what: &str, term: Term<'_>) -> Reply<Vec<i64>> {
    tuple_or_list_items(what, term)?
        .into_iter()
        .map(|item| {
            item.decode::<i64>()
                .map_err(|_| format!("{what}: expected integers, got {item:?}"))
        })
        .collect()
}

/// One axis's start of a per-axis list.
enum StartTerm {
    Fixed(i64),
    Tensor(TensorArc),
}

/// Starts as the NIFs take them: a rank-1 integer tensor, or a list (or tuple) of integers and
/// scalar integer tensors, one per axis.
enum StartTerms {
    Tensor(TensorArc),
    PerAxis(Vec<StartTerm>),
}

impl StartTerms {
    fn decode(what: &str, term: Term<'_>) -> Reply<StartTerms> {
        if let Ok(tensor) = term.decode::<TensorArc>() {
            return Ok(StartTerms::Tensor(tensor));
        }
        let items = tuple_or_list_items(what, term)?
            .into_iter()
            .map(|item| {
                item.decode::<i64>()
                    .map(StartTerm::Fixed)
                    .or_else(|_| item.decode::<TensorArc>().map(StartTerm::Tensor))
                    .map_err(|_| format!("{what}: expected integers or tensors, got {item:?}"))
            })
            .collect::<Reply<Vec<StartTerm>>>()?;
        Ok(StartTerms::PerAxis(items))
    }

    /// Runs `run` on the catalog's form of these starts.
    fn with<R>(&self, run: impl FnOnce(Starts<'_>) -> R) -> R {
        match self {
            StartTerms::Tensor(tensor) => run(Starts::Tensor(&tensor.tensor)),
            StartTerms::PerAxis(items) => {
                let starts: Vec<AxisStart<'_>> = items
                    .iter()
                    .map(|item| match item {
                        StartTerm::Fixed(value) => AxisStart::Fixed(*value),
                        StartTerm::Tensor(tensor) => AxisStart::Tensor(&tensor.tensor),
                    })
                    .collect();
                run(Starts::PerAxis(&starts))
            }
        }
    }
}

fn tensors(list: &[TensorArc]) -> Vec<&Tensor> {
    list.iter().map(|resource| &resource.tensor).collect()
}

/// `contiguous(tensor)`: the view materialised in row-major order (the same tensor when it
/// already is).
#[rustler::nif(schedule = "DirtyCpu")]
fn contiguous(tensor: TensorArc) -> Reply<TensorArc> {
    guarded("contiguous", || {
        movement::contiguous(&tensor.tensor)
            .map(wrap)
            .map_err(message)
    })
}

#[rustler::nif(schedule = "DirtyCpu")]
fn reverse<'a>(tensor: TensorArc, axes: Term<'a>) -> Reply<TensorArc> {
    guarded("reverse", || {
        let axes = decode_indices("reverse", axes)?;
        movement::reverse(&tensor.tensor, &axes)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `slice` with steps: starts are clamped as Nx clamps them.
#[rustler::nif(schedule = "DirtyCpu")]
fn strided_slice<'a>(
    tensor: TensorArc,
    starts: Term<'a>,
    lengths: Term<'a>,
    steps: Term<'a>,
) -> Reply<TensorArc> {
    guarded("strided_slice", || {
        let starts = decode_offsets("slice", starts)?;
        let lengths = decode_indices("slice", lengths)?;
        let steps = decode_indices("slice", steps)?;
        movement::slice(&tensor.tensor, &starts, &lengths, &steps)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `slice` at starts given as tensors (a rank-1 integer tensor, or a list of integers and
/// scalar integer tensors), read and clamped on the device.
#[rustler::nif(schedule = "DirtyCpu")]
fn slice_at<'a>(
    tensor: TensorArc,
    starts: Term<'a>,
    lengths: Term<'a>,
    steps: Term<'a>,
) -> Reply<TensorArc> {
    guarded("slice_at", || {
        let starts = StartTerms::decode("slice", starts)?;
        let lengths = decode_indices("slice", lengths)?;
        let steps = decode_indices("slice", steps)?;
        starts
            .with(|starts| movement::slice_at(&tensor.tensor, starts, &lengths, &steps))
            .map(wrap)
            .map_err(message)
    })
}

/// `config`: a list of `{low, high, interior}` with a non-negative interior.
fn decode_pad_config(config: Vec<(i64, i64, i64)>) -> Reply<Vec<(i64, i64, usize)>> {
    config
        .into_iter()
        .map(|(low, high, interior)| {
            usize::try_from(interior)
                .map(|interior| (low, high, interior))
                .map_err(|_| format!("pad: interior padding {interior} is negative"))
        })
        .collect()
}

/// Nx's `pad` into the operands' merged type: `config` is a list of `{low, high, interior}`;
/// `value` a scalar tensor.
#[rustler::nif(schedule = "DirtyCpu")]
fn pad(tensor: TensorArc, value: TensorArc, config: Vec<(i64, i64, i64)>) -> Reply<TensorArc> {
    guarded("pad", || {
        let config = decode_pad_config(config)?;
        movement::pad(&tensor.tensor, &value.tensor, &config)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `pad` into `dtype` (Nx's `out` type).
#[rustler::nif(schedule = "DirtyCpu")]
fn pad_as(
    tensor: TensorArc,
    value: TensorArc,
    config: Vec<(i64, i64, i64)>,
    dtype: String,
) -> Reply<TensorArc> {
    guarded("pad_as", || {
        let config = decode_pad_config(config)?;
        let dtype = decode_dtype("pad_as", &dtype)?;
        movement::pad_as(&tensor.tensor, &value.tensor, &config, dtype)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `concatenate` into the operands' merged type.
#[rustler::nif(schedule = "DirtyCpu")]
fn concatenate(list: Vec<TensorArc>, axis: usize) -> Reply<TensorArc> {
    guarded("concatenate", || {
        movement::concatenate(&tensors(&list), axis)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `concatenate` into `dtype` (Nx's `out` type).
#[rustler::nif(schedule = "DirtyCpu")]
fn concatenate_as(list: Vec<TensorArc>, axis: usize, dtype: String) -> Reply<TensorArc> {
    guarded("concatenate_as", || {
        let dtype = decode_dtype("concatenate_as", &dtype)?;
        movement::concatenate_as(&tensors(&list), axis, dtype)
            .map(wrap)
            .map_err(message)
    })
}

#[rustler::nif(schedule = "DirtyCpu")]
fn stack(list: Vec<TensorArc>, axis: usize) -> Reply<TensorArc> {
    guarded("stack", || {
        movement::stack(&tensors(&list), axis)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `put_slice` into the operands' merged type: starts are clamped so the update fits.
#[rustler::nif(schedule = "DirtyCpu")]
fn put_slice<'a>(tensor: TensorArc, starts: Term<'a>, update: TensorArc) -> Reply<TensorArc> {
    guarded("put_slice", || {
        let starts = decode_offsets("put_slice", starts)?;
        movement::put_slice(&tensor.tensor, &starts, &update.tensor)
            .map(wrap)
            .map_err(message)
    })
}

/// Nx's `put_slice` into `dtype` (Nx's `out` type); `starts` is a list (or tuple) of integers
/// and scalar integer tensors, or a rank-1 integer tensor; tensors are read and clamped on the
/// device.
#[rustler::nif(schedule = "DirtyCpu")]
fn put_slice_as<'a>(
    tensor: TensorArc,
    starts: Term<'a>,
    update: TensorArc,
    dtype: String,
) -> Reply<TensorArc> {
    guarded("put_slice_as", || {
        let dtype = decode_dtype("put_slice_as", &dtype)?;
        let starts = StartTerms::decode("put_slice", starts)?;
        starts
            .with(|starts| movement::put_slice_as(&tensor.tensor, starts, &update.tensor, dtype))
            .map(wrap)
            .map_err(message)
    })
}
