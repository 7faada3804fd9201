//! Indexing: Nx's `gather`, `take`, `take_along_axis`, `indexed_put` and `indexed_add`
//! (nxvk-kernels' `index` kernels).
//!
//! Index clamping, repeated-index rules and result shapes are nxvk-kernels'. Dirty: they may
//! compile kernels and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::decode_optional_indices;
use nxvk_core::Tensor;
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
    along_axis("take", index::take, tensor, indices, axis)
}

/// `take_along_axis(tensor, indices, axis)`: Nx's `take_along_axis`.
#[rustler::nif(schedule = "DirtyCpu")]
fn take_along_axis(tensor: TensorArc, indices: TensorArc, axis: usize) -> Reply<TensorArc> {
    along_axis(
        "take_along_axis",
        index::take_along_axis,
        tensor,
        indices,
        axis,
    )
}

/// `indexed_put(target, indices, updates, axes)`: the last of repeated rows wins.
#[rustler::nif(schedule = "DirtyCpu")]
fn indexed_put<'a>(
    target: TensorArc,
    indices: TensorArc,
    updates: TensorArc,
    axes: Term<'a>,
) -> Reply<TensorArc> {
    scatter(
        "indexed_put",
        index::indexed_put,
        [target, indices, updates],
        axes,
    )
}

/// `indexed_add(target, indices, updates, axes)`: repeated rows add up.
#[rustler::nif(schedule = "DirtyCpu")]
fn indexed_add<'a>(
    target: TensorArc,
    indices: TensorArc,
    updates: TensorArc,
    axes: Term<'a>,
) -> Reply<TensorArc> {
    scatter(
        "indexed_add",
        index::indexed_add,
        [target, indices, updates],
        axes,
    )
}

/// An index op that picks along one axis (`take`, `take_along_axis`).
fn along_axis(
    op: &'static str,
    pick: fn(&Tensor, &Tensor, usize) -> nxvk_core::Result<Tensor>,
    tensor: TensorArc,
    indices: TensorArc,
    axis: usize,
) -> Reply<TensorArc> {
    guarded(op, || {
        pick(&tensor.tensor, &indices.tensor, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// nxvk-kernels' `indexed_put` and `indexed_add`: (target, indices, updates, axes).
type ScatterFunction = fn(&Tensor, &Tensor, &Tensor, Option<&[usize]>) -> nxvk_core::Result<Tensor>;

/// A scatter (`indexed_put`, `indexed_add`) of `[target, indices, updates]` on `axes` (a list,
/// or `nil` for the leading axes).
fn scatter(
    op: &'static str,
    write: ScatterFunction,
    [target, indices, updates]: [TensorArc; 3],
    axes: Term<'_>,
) -> Reply<TensorArc> {
    guarded(op, || {
        let axes = decode_optional_indices(op, axes)?;
        write(
            &target.tensor,
            &indices.tensor,
            &updates.tensor,
            axes.as_deref(),
        )
        .map(wrap)
        .map_err(message)
    })
}
