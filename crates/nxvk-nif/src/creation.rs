//! Creation on the device: Nx's `iota` and `eye` (nxvk-kernels' `creation` templates), and
//! `bitcast`, which reinterprets a tensor's bits as a view.

use crate::device::default_device;
use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, decode_dtype, wrap};
use crate::terms::{decode_indices, decode_optional_index};
use nxvk_kernels::creation;
use rustler::Term;

/// `iota(dtype, shape, axis)`: coordinates along `axis`, or row-major positions with `nil`.
/// Dirty: it allocates and may compile a kernel.
#[rustler::nif(schedule = "DirtyCpu")]
fn iota<'a>(dtype: String, shape: Term<'a>, axis: Term<'a>) -> Reply<TensorArc> {
    guarded("iota", || {
        let dtype = decode_dtype("iota", &dtype)?;
        let shape = decode_indices("iota", shape)?;
        let axis = decode_optional_index("iota", axis)?;
        creation::iota(&default_device()?, dtype, &shape, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// `eye(dtype, shape)`: ones on the diagonal of the last two axes.
#[rustler::nif(schedule = "DirtyCpu")]
fn eye<'a>(dtype: String, shape: Term<'a>) -> Reply<TensorArc> {
    guarded("eye", || {
        let dtype = decode_dtype("eye", &dtype)?;
        let shape = decode_indices("eye", shape)?;
        creation::eye(&default_device()?, dtype, &shape)
            .map(wrap)
            .map_err(message)
    })
}

/// `bitcast(tensor, dtype)`: the same bits as a type of the same width; a view, no GPU work.
#[rustler::nif]
fn bitcast(tensor: TensorArc, dtype: String) -> Reply<TensorArc> {
    guarded("bitcast", || {
        let dtype = decode_dtype("bitcast", &dtype)?;
        creation::bitcast(&tensor.tensor, dtype)
            .map(wrap)
            .map_err(message)
    })
}
