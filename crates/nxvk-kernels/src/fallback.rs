//! The one host fallback: an op with no GPU path (complex and sub-byte types, f64
//! transcendentals, devices lacking a shader feature) runs its host reference here.
//!
//! Every call is counted by (op, dtype) and passes strict mode first (`Device::host_fallback`,
//! which refuses it under `NXVK_STRICT=raise`). The inputs are downloaded, broadcast and cast
//! to the compute type on the host, evaluated by `reference.rs` and uploaded as a new tensor.

use crate::reference::{self, Value};
use nxvk_core::{DType, Error, Result, Tensor};
use std::sync::Arc;

/// The fallback allowlist: `op dtype reason` per line (`#` comments), kept next to the code so
/// that `coverage --strict` can insist that every fallback cell was chosen on purpose.
pub const FALLBACK_ALLOWLIST: &str = include_str!("../fallback_allowlist.txt");

/// One allowlist line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowlistEntry {
    pub op: String,
    /// A dtype name or `*` for every dtype.
    pub dtype: String,
    pub reason: String,
}

/// The parsed allowlist.
pub fn allowlist() -> Vec<AllowlistEntry> {
    FALLBACK_ALLOWLIST
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let mut parts = line.splitn(3, char::is_whitespace);
            Some(AllowlistEntry {
                op: parts.next()?.to_owned(),
                dtype: parts.next()?.to_owned(),
                reason: parts.next().unwrap_or("").trim().to_owned(),
            })
        })
        .collect()
}

/// True when the allowlist names (op, dtype).
pub fn is_allowlisted(op: &str, dtype: DType) -> bool {
    allowlist().iter().any(|entry| {
        (entry.op == "*" || entry.op == op) && (entry.dtype == "*" || entry.dtype == dtype.name())
    })
}

fn unsupported(op: &'static str, inputs: &[&Tensor], detail: &str) -> Error {
    Error::BadOperands {
        op,
        shapes: inputs.iter().map(|input| input.shape().to_vec()).collect(),
        dtypes: inputs.iter().map(|input| input.dtype()).collect(),
        detail: detail.to_owned(),
    }
}

/// Host values of `tensor` broadcast (right-aligned) to `shape`, cast to `compute`.
fn host_values(
    op: &'static str,
    tensor: &Tensor,
    shape: &[usize],
    compute: DType,
) -> Result<Vec<Value>> {
    let bytes = tensor.to_bytes()?;
    let values =
        reference::decode(tensor.dtype(), &bytes, tensor.n_elements()).ok_or_else(|| {
            unsupported(
                op,
                &[tensor],
                "8-bit float types have no host implementation yet",
            )
        })?;
    let view = nxvk_core::Layout::contiguous(tensor.shape()).broadcast_to(shape)?;
    Ok(view
        .element_indices()
        .map(|index| reference::round_to(values[index], compute))
        .collect())
}

/// Runs `evaluate` over the broadcast, cast inputs on the host and uploads the result.
/// `counted_dtype` is the dtype the fallback is counted (and allowlisted) under.
pub(crate) fn run_on_host(
    op: &'static str,
    counted_dtype: DType,
    inputs: &[&Tensor],
    shape: &[usize],
    compute: DType,
    result: DType,
    evaluate: impl Fn(&[Value]) -> Option<Value>,
) -> Result<Tensor> {
    let device: &Arc<nxvk_core::Device> = inputs[0].device();
    let shapes: Vec<&[usize]> = inputs.iter().map(|input| input.shape()).collect();
    device.host_fallback(op, counted_dtype, &shapes)?;
    let columns = inputs
        .iter()
        .map(|input| host_values(op, input, shape, compute))
        .collect::<Result<Vec<_>>>()?;
    let n_elements: usize = shape.iter().product();
    let mut values = Vec::with_capacity(n_elements);
    let mut operands = Vec::with_capacity(inputs.len());
    for index in 0..n_elements {
        operands.clear();
        operands.extend(columns.iter().map(|column| column[index]));
        values.push(evaluate(&operands).ok_or_else(|| {
            unsupported(
                op,
                inputs,
                &format!("no host implementation for {compute} yet"),
            )
        })?);
    }
    Tensor::from_bytes(device, result, shape, &reference::encode(result, &values))
}
