//! Window reductions and select-and-scatter: Nx's window_sum / product / max / min and
//! window_scatter_max / min, looked up by their Nx names in nxvk-kernels' window tables.
//!
//! Padding, strides, dilations and result types are nxvk-kernels'. Dirty: each may compile a
//! kernel and records GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::{decode_indices, decode_name};
use nxvk_kernels::{ScatterSelect, WindowOp, WindowOptions};
use rustler::{NifMap, Term};

const WINDOW_OPS: [WindowOp; 4] = [
    WindowOp::Sum,
    WindowOp::Product,
    WindowOp::Max,
    WindowOp::Min,
];
const SCATTER_SELECTS: [ScatterSelect; 2] = [ScatterSelect::Max, ScatterSelect::Min];

fn window_op_named(name: &str) -> Reply<WindowOp> {
    WINDOW_OPS
        .into_iter()
        .find(|op| op.name() == name)
        .ok_or_else(|| format!("window_reduce: unknown window op `{name}`"))
}

fn scatter_select_named(name: &str) -> Reply<ScatterSelect> {
    SCATTER_SELECTS
        .into_iter()
        .find(|select| select.name() == name)
        .ok_or_else(|| format!("window_scatter: unknown window scatter op `{name}`"))
}

/// The window options as the Elixir side passes them: a map with these atom keys, one entry
/// per input axis (padding as `{low, high}`).
#[derive(NifMap)]
struct WindowTerm {
    strides: Vec<usize>,
    padding: Vec<(i64, i64)>,
    window_dilations: Vec<usize>,
}

fn decode_options(what: &str, term: Term<'_>) -> Reply<WindowOptions> {
    let options: WindowTerm = term.decode().map_err(|_| {
        format!(
            "{what}: expected a map of strides, padding ({{low, high}} pairs) and window_dilations"
        )
    })?;
    Ok(WindowOptions {
        strides: options.strides,
        padding: options.padding,
        window_dilations: options.window_dilations,
    })
}

/// `window_reduce(name, tensor, window_dimensions, options)`: `name` one of window_sum,
/// window_product, window_max, window_min.
#[rustler::nif(schedule = "DirtyCpu")]
fn window_reduce<'a>(
    name: Term<'a>,
    tensor: TensorArc,
    window_dimensions: Term<'a>,
    options: Term<'a>,
) -> Reply<TensorArc> {
    guarded("window_reduce", || {
        let op = window_op_named(&decode_name(name)?)?;
        nxvk_kernels::window_reduce(
            op,
            &tensor.tensor,
            &decode_indices("window_reduce", window_dimensions)?,
            &decode_options("window_reduce", options)?,
        )
        .map(wrap)
        .map_err(message)
    })
}

/// `window_scatter(name, tensor, source, init_value, window_dimensions, options)`: `name`
/// window_scatter_max or window_scatter_min.
#[rustler::nif(schedule = "DirtyCpu")]
fn window_scatter<'a>(
    name: Term<'a>,
    tensor: TensorArc,
    source: TensorArc,
    init_value: TensorArc,
    window_dimensions: Term<'a>,
    options: Term<'a>,
) -> Reply<TensorArc> {
    guarded("window_scatter", || {
        let select = scatter_select_named(&decode_name(name)?)?;
        nxvk_kernels::window_scatter(
            select,
            &tensor.tensor,
            &source.tensor,
            &init_value.tensor,
            &decode_indices("window_scatter", window_dimensions)?,
            &decode_options("window_scatter", options)?,
        )
        .map(wrap)
        .map_err(message)
    })
}
