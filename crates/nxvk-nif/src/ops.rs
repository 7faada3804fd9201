//! Element-wise ops, looked up by their Nx names in nxvk-kernels' op table.
//!
//! The names come from the table's own `name()` methods, so the NIF accepts exactly the ops
//! the catalog defines; semantics, types and fallbacks are all nxvk-kernels'.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, decode_dtype, wrap};
use crate::terms::decode_name;
use nxvk_kernels::{BinaryOp, UnaryOp};
use rustler::{Env, Term};

pub fn binary_op_named(name: &str) -> Reply<BinaryOp> {
    BinaryOp::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("binary_op: unknown binary op `{name}`"))
}

pub fn unary_op_named(name: &str) -> Reply<UnaryOp> {
    UnaryOp::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("unary_op: unknown unary op `{name}`"))
}

/// `binary_op(name, left, right)` with Nx's broadcasting and type promotion. Dirty: it may
/// compile a kernel, wait for the GPU or run the host fallback.
#[rustler::nif(schedule = "DirtyCpu")]
fn binary_op<'a>(name: Term<'a>, left: TensorArc, right: TensorArc) -> Reply<TensorArc> {
    guarded("binary_op", || {
        let op = binary_op_named(&decode_name(name)?)?;
        nxvk_kernels::binary(op, &left.tensor, &right.tensor)
            .map(wrap)
            .map_err(message)
    })
}

/// `unary_op(name, tensor)` with Nx's result-type rule.
#[rustler::nif(schedule = "DirtyCpu")]
fn unary_op<'a>(name: Term<'a>, tensor: TensorArc) -> Reply<TensorArc> {
    guarded("unary_op", || {
        let op = unary_op_named(&decode_name(name)?)?;
        nxvk_kernels::unary(op, &tensor.tensor)
            .map(wrap)
            .map_err(message)
    })
}

/// `as_type(tensor, dtype)`: Nx's conversion (wrapping integers, saturating float casts).
#[rustler::nif(schedule = "DirtyCpu")]
fn as_type(tensor: TensorArc, dtype: String) -> Reply<TensorArc> {
    guarded("as_type", || {
        let dtype = decode_dtype("as_type", &dtype)?;
        nxvk_kernels::as_type(&tensor.tensor, dtype)
            .map(wrap)
            .map_err(message)
    })
}

/// The op names the NIF accepts, from the catalog's tables:
/// `%{binary: [...], unary: [...], reduce: [...], cumulative: [...]}`.
#[rustler::nif]
fn op_names<'a>(env: Env<'a>) -> Reply<Term<'a>> {
    guarded("op_names", || {
        use rustler::Encoder;
        let binary: Vec<&str> = BinaryOp::ALL.iter().map(|op| op.name()).collect();
        let unary: Vec<&str> = UnaryOp::ALL.iter().map(|op| op.name()).collect();
        crate::terms::atom_map(
            env,
            &[
                ("binary", binary.encode(env)),
                ("unary", unary.encode(env)),
                ("reduce", crate::reduce::reduce_names().encode(env)),
                ("cumulative", crate::scan::scan_names().encode(env)),
            ],
        )
    })
}
