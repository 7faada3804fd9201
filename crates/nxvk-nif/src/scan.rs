//! Cumulative ops, looked up by their Nx names in nxvk-kernels' scan table.
//!
//! One NIF serves every [`ScanOp`]: the names come from the table's own `name()` methods.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::decode_name;
use nxvk_kernels::ScanOp;
use rustler::Term;

pub fn scan_op_named(name: &str) -> Reply<ScanOp> {
    ScanOp::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("cumulative: unknown cumulative op `{name}`"))
}

/// The cumulative op names the NIF accepts, in the table's order.
pub fn scan_names() -> Vec<&'static str> {
    ScanOp::ALL.iter().map(|op| op.name()).collect()
}

/// `cumulative(name, tensor, axis, reverse)`: Nx's `cumulative_sum` (and product, min, max)
/// along `axis`, from the end when `reverse`. Dirty: it may compile a kernel and records GPU
/// work.
#[rustler::nif(schedule = "DirtyCpu")]
fn cumulative<'a>(
    name: Term<'a>,
    tensor: TensorArc,
    axis: usize,
    reverse: bool,
) -> Reply<TensorArc> {
    guarded("cumulative", || {
        let op = scan_op_named(&decode_name(name)?)?;
        nxvk_kernels::cumulative(op, &tensor.tensor, axis, reverse)
            .map(wrap)
            .map_err(message)
    })
}
