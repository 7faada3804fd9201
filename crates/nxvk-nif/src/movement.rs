//! Data movement that writes new memory: materialised views, reverse, strided slice, pad,
//! concatenate, stack and put_slice (nxvk-kernels' `movement` templates).
//!
//! Each NIF decodes its arguments and calls the catalog; bounds, clamping and dtype rules are
//! nxvk-kernels'. All are dirty: they allocate, may compile a kernel and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::{decode_indices, tuple_or_list_items};
use nxvk_core::Tensor;
use nxvk_kernels::movement;
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

/// Nx's `pad`: `config` is a list of `{low, high, interior}`; `value` a scalar tensor of the
/// input's dtype.
#[rustler::nif(schedule = "DirtyCpu")]
fn pad(tensor: TensorArc, value: TensorArc, config: Vec<(i64, i64, i64)>) -> Reply<TensorArc> {
    guarded("pad", || {
        let config = config
            .into_iter()
            .map(|(low, high, interior)| {
                usize::try_from(interior)
                    .map(|interior| (low, high, interior))
                    .map_err(|_| format!("pad: interior padding {interior} is negative"))
            })
            .collect::<Reply<Vec<_>>>()?;
        movement::pad(&tensor.tensor, &value.tensor, &config)
            .map(wrap)
            .map_err(message)
    })
}

#[rustler::nif(schedule = "DirtyCpu")]
fn concatenate(list: Vec<TensorArc>, axis: usize) -> Reply<TensorArc> {
    guarded("concatenate", || {
        movement::concatenate(&tensors(&list), axis)
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

/// Nx's `put_slice`: starts are clamped so the update fits.
#[rustler::nif(schedule = "DirtyCpu")]
fn put_slice<'a>(tensor: TensorArc, starts: Term<'a>, update: TensorArc) -> Reply<TensorArc> {
    guarded("put_slice", || {
        let starts = decode_offsets("put_slice", starts)?;
        movement::put_slice(&tensor.tensor, &starts, &update.tensor)
            .map(wrap)
            .map_err(message)
    })
}
