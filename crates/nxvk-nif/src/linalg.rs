//! Linear algebra: Nx's triangular_solve and the Nx.LinAlg decompositions (cholesky, lu, qr,
//! eigh) plus determinant and solve, on nxvk-kernels' batched kernels.
//!
//! Shapes, result types and refusals are nxvk-kernels'; tuples of results come back as Elixir
//! tuples of tensors. Dirty: each compiles kernels and records GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use nxvk_kernels::TriangularSolveOptions;

/// `triangular_solve(a, b, lower, left_side, transpose_a)`: Nx's options as booleans
/// (`transform_a: :transpose` is `transpose_a`).
#[rustler::nif(schedule = "DirtyCpu")]
fn triangular_solve(
    a: TensorArc,
    b: TensorArc,
    lower: bool,
    left_side: bool,
    transpose_a: bool,
) -> Reply<TensorArc> {
    guarded("triangular_solve", || {
        let options = TriangularSolveOptions {
            lower,
            left_side,
            transpose_a,
        };
        nxvk_kernels::triangular_solve(&a.tensor, &b.tensor, &options)
            .map(wrap)
            .map_err(message)
    })
}

/// `cholesky(a)`: the lower-triangular factor.
#[rustler::nif(schedule = "DirtyCpu")]
fn cholesky(a: TensorArc) -> Reply<TensorArc> {
    guarded("cholesky", || {
        nxvk_kernels::cholesky(&a.tensor).map(wrap).map_err(message)
    })
}

/// `lu(a)`: `{p, l, u}`.
#[rustler::nif(schedule = "DirtyCpu")]
fn lu(a: TensorArc) -> Reply<(TensorArc, TensorArc, TensorArc)> {
    guarded("lu", || {
        nxvk_kernels::lu(&a.tensor)
            .map(|(p, l, u)| (wrap(p), wrap(l), wrap(u)))
            .map_err(message)
    })
}

/// `qr(a, complete)`: `{q, r}`; `complete` is Nx's `mode: :complete` (else `:reduced`).
#[rustler::nif(schedule = "DirtyCpu")]
fn qr(a: TensorArc, complete: bool) -> Reply<(TensorArc, TensorArc)> {
    guarded("qr", || {
        nxvk_kernels::qr(&a.tensor, complete)
            .map(|(q, r)| (wrap(q), wrap(r)))
            .map_err(message)
    })
}

/// `eigh(a)`: `{eigenvalues, eigenvectors}`.
#[rustler::nif(schedule = "DirtyCpu")]
fn eigh(a: TensorArc) -> Reply<(TensorArc, TensorArc)> {
    guarded("eigh", || {
        nxvk_kernels::eigh(&a.tensor)
            .map(|(values, vectors)| (wrap(values), wrap(vectors)))
            .map_err(message)
    })
}

/// `determinant(a)`.
#[rustler::nif(schedule = "DirtyCpu")]
fn determinant(a: TensorArc) -> Reply<TensorArc> {
    guarded("determinant", || {
        nxvk_kernels::determinant(&a.tensor)
            .map(wrap)
            .map_err(message)
    })
}

/// `solve(a, b)`: x with a x = b.
#[rustler::nif(schedule = "DirtyCpu")]
fn solve(a: TensorArc, b: TensorArc) -> Reply<TensorArc> {
    guarded("solve", || {
        nxvk_kernels::solve(&a.tensor, &b.tensor)
            .map(wrap)
            .map_err(message)
    })
}
