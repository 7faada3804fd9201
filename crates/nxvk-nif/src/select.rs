//! Selection and clamping: Nx's `select` and `clip` (nxvk-kernels' `select` templates).
//!
//! Broadcasting, type promotion and the counted fallback for complex and sub-byte results are
//! nxvk-kernels'; these NIFs only decode and map errors. Dirty: they may compile a kernel and
//! record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};

/// `select(pred, on_true, on_false)`: `on_true` where `pred` is non-zero, else `on_false`.
#[rustler::nif(schedule = "DirtyCpu")]
fn select(pred: TensorArc, on_true: TensorArc, on_false: TensorArc) -> Reply<TensorArc> {
    guarded("select", || {
        nxvk_kernels::select(&pred.tensor, &on_true.tensor, &on_false.tensor)
            .map(wrap)
            .map_err(message)
    })
}

/// `clip(tensor, min, max)`: Nx's `min(max(tensor, min), max)`.
#[rustler::nif(schedule = "DirtyCpu")]
fn clip(tensor: TensorArc, min: TensorArc, max: TensorArc) -> Reply<TensorArc> {
    guarded("clip", || {
        nxvk_kernels::clip(&tensor.tensor, &min.tensor, &max.tensor)
            .map(wrap)
            .map_err(message)
    })
}
