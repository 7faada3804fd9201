//! Sorting: Nx's `sort`, `argsort` and `top_k` (nxvk-kernels' `sort` kernels, stable).
//!
//! Directions are Nx's atoms `:asc` and `:desc`; NaN ordering is nxvk-kernels' (Nx's). Dirty:
//! they may compile kernels and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, decode_dtype, wrap};
use nxvk_kernels::sort::{self, Direction};
use rustler::{Env, Term};

rustler::atoms! { asc, desc }

fn decode_direction<'a>(env: Env<'a>, nif: &str, term: Term<'a>) -> Reply<Direction> {
    if term == asc().to_term(env) {
        Ok(Direction::Ascending)
    } else if term == desc().to_term(env) {
        Ok(Direction::Descending)
    } else {
        Err(format!(
            "{nif}: expected direction :asc or :desc, got {term:?}"
        ))
    }
}

/// `sort(tensor, axis, direction)`.
#[rustler::nif(schedule = "DirtyCpu")]
fn sort<'a>(env: Env<'a>, tensor: TensorArc, axis: usize, direction: Term<'a>) -> Reply<TensorArc> {
    guarded("sort", || {
        let direction = decode_direction(env, "sort", direction)?;
        sort::sort(&tensor.tensor, axis, direction)
            .map(wrap)
            .map_err(message)
    })
}

/// `argsort(tensor, axis, direction, index_dtype)`: positions as `index_dtype`.
#[rustler::nif(schedule = "DirtyCpu")]
fn argsort<'a>(
    env: Env<'a>,
    tensor: TensorArc,
    axis: usize,
    direction: Term<'a>,
    index_dtype: String,
) -> Reply<TensorArc> {
    guarded("argsort", || {
        let direction = decode_direction(env, "argsort", direction)?;
        let index_dtype = decode_dtype("argsort", &index_dtype)?;
        sort::argsort(&tensor.tensor, axis, direction, index_dtype)
            .map(wrap)
            .map_err(message)
    })
}

/// `top_k(tensor, k)`: `{values, s32 positions}` of the `k` largest along the last axis.
#[rustler::nif(schedule = "DirtyCpu")]
fn top_k(tensor: TensorArc, k: usize) -> Reply<(TensorArc, TensorArc)> {
    guarded("top_k", || {
        sort::top_k(&tensor.tensor, k)
            .map(|(values, positions)| (wrap(values), wrap(positions)))
            .map_err(message)
    })
}
