//! Indexing: Nx's `gather`, `take`, `take_along_axis`, `indexed_put` and `indexed_add`
//! (nxvk-kernels' `index` kernels).
//!
//! Index clamping, repeated-index rules and result shapes are nxvk-kernels'. Dirty: they may
//! compile kernels and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::decode_optional_indices;
use nxvk_kernels::index;
use rustler::Term;

/// `gather(tensor, indices, axes)`: `axes` a list, or `nil` for the leading axes.
#[rustler::nif(schedule = "DirtyCpu")]
fn gather<'a>(tensor: TensorArc, indices: TensorArc, axes: Term<'a>) -> Reply<TensorArc> {
    guarded("gather", || {
        let axes = decode_optional_indices("gather", axes)?;
        index::gather(&tensor.tensor, &indices.tensor, axes.as_deref())
            .map(wrap)
            .map_err(message)
    })
}

/// `take(tensor, indices, axis)`: Nx's `take`.
#[rustler::nif(schedule = "DirtyCpu")]
fn take(tensor: TensorArc, indices: TensorArc, axis: usize) -> Reply<TensorArc> {
    guarded("take", || {
        index::take(&tensor.tensor, &indices.tensor, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// `take_along_axis(tensor, indices, axis)`: Nx's `take_along_axis`.
#[rustler::nif(schedule = "DirtyCpu")]
fn take_along_axis(tensor: TensorArc, indices: TensorArc, axis: usize) -> Reply<TensorArc> {
    guarded("take_along_axis", || {
        index::take_along_axis(&tensor.tensor, &indices.tensor, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// `indexed_put(target, indices, updates, axes)`: the last of repeated rows wins.
#[rustler::nif(schedule = "DirtyCpu")]
fn indexed_put<'a>(
    target: TensorArc,
    indices: TensorArc,
    updates: TensorArc,
    axes: Term<'a>,
) -> Reply<TensorArc> {
    guarded("indexed_put", || {
        let axes = decode_optional_indices("indexed_put", axes)?;
        index::indexed_put(
            &target.tensor,
            &indices.tensor,
            &updates.tensor,
            axes.as_deref(),
        )
        .map(wrap)
        .map_err(message)
    })
}

/// `indexed_add(target, indices, updates, axes)`: repeated rows add up.
#[rustler::nif(schedule = "DirtyCpu")]
fn indexed_add<'a>(
    target: TensorArc,
    indices: TensorArc,
    updates: TensorArc,
    axes: Term<'a>,
) -> Reply<TensorArc> {
    guarded("indexed_add", || {
        let axes = decode_optional_indices("indexed_add", axes)?;
        index::indexed_add(
            &target.tensor,
            &indices.tensor,
            &updates.tensor,
            axes.as_deref(),
        )
        .map(wrap)
        .map_err(message)
    })
}
