//! Reductions, looked up by their Nx names in nxvk-kernels' reduce table.
//!
//! One NIF serves every [`ReduceOp`]: the names come from the table's own `name()` methods, so
//! a reduction added to the catalog is reachable from Elixir without touching this file.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::{decode_name, decode_optional_indices};
use nxvk_kernels::{ReduceOp, ReduceOptions, TieBreak};
use rustler::{Env, Term};

rustler::atoms! { low, high }

pub fn reduce_op_named(name: &str) -> Reply<ReduceOp> {
    ReduceOp::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("reduce: unknown reduction `{name}`"))
}

fn decode_tie_break<'a>(env: Env<'a>, term: Term<'a>) -> Reply<TieBreak> {
    if term == low().to_term(env) {
        Ok(TieBreak::Low)
    } else if term == high().to_term(env) {
        Ok(TieBreak::High)
    } else {
        Err(format!(
            "reduce: expected tie_break :low or :high, got {term:?}"
        ))
    }
}

/// `reduce(name, tensor, axes, keep_axes, tie_break)`: `axes` is a list or `nil` (every
/// axis); `tie_break` (`:low` or `:high`) matters only to argmax and argmin. Result types are
/// Nx's (`Nx.Type.to_aggregate` for sums and products, u8 for all/any, s64 for indices).
/// Dirty: it may compile a kernel, wait for the GPU or run the counted host fallback.
#[rustler::nif(schedule = "DirtyCpu")]
fn reduce<'a>(
    env: Env<'a>,
    name: Term<'a>,
    tensor: TensorArc,
    axes: Term<'a>,
    keep_axes: bool,
    tie_break: Term<'a>,
) -> Reply<TensorArc> {
    guarded("reduce", || {
        let op = reduce_op_named(&decode_name(name)?)?;
        let axes = decode_optional_indices(op.name(), axes)?;
        let options = ReduceOptions {
            axes: axes.as_deref(),
            keep_axes,
            tie_break: decode_tie_break(env, tie_break)?,
            ..ReduceOptions::default()
        };
        nxvk_kernels::reduce(op, &tensor.tensor, &options)
            .map(wrap)
            .map_err(message)
    })
}

/// The reduction names the NIF accepts, in the table's order.
pub fn reduce_names() -> Vec<&'static str> {
    ReduceOp::ALL.iter().map(|op| op.name()).collect()
}
