//! The op x dtype coverage matrix (gpu / fallback / unsupported), read from the op table and
//! the catalog (elementwise ops, reductions, data movement, scans, creation, select and clip,
//! dot, conv, window ops and linear algebra), for the `coverage` example and CI's strict
//! check.

use crate::catalog::{device_supports_value, value_of};
use crate::fallback::is_allowlisted;
use crate::op_table::{BinaryOp, UnaryOp};
use crate::ops::{Path, binary_path, unary_path};
use crate::reduce::{self, ReduceOp};
use crate::scan::ScanOp;
use crate::{conv, dot, linalg, movement, window};
use nxvk_core::{Capabilities, DType};

/// Where one op runs on one dtype (both operands of that dtype for binary ops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Gpu,
    /// Counted host fallback; `allowlisted` when `fallback_allowlist.txt` names it.
    Fallback {
        allowlisted: bool,
    },
    /// Nx defines the op here but nxvk has neither path yet (8-bit floats, some complex ops).
    Unsupported,
    /// Nx rejects the op on this dtype (bitwise ops on floats, ...).
    Undefined,
}

impl Cell {
    pub const fn label(self) -> &'static str {
        match self {
            Cell::Gpu => "gpu",
            Cell::Fallback { .. } => "fallback",
            Cell::Unsupported => "unsupported",
            Cell::Undefined => "-",
        }
    }
}

/// One row of the matrix.
#[derive(Debug, Clone)]
pub struct Row {
    pub op: &'static str,
    pub arity: usize,
    pub cells: Vec<(DType, Cell)>,
}

fn host_supports(op_name: &str, dtype: DType) -> bool {
    // Complex ops the host reference does not implement yet.
    !(dtype.is_complex() && matches!(op_name, "atan2" | "erf" | "erfc" | "erf_inv"))
}

fn cell(op_name: &'static str, dtype: DType, path: nxvk_core::Result<Path>) -> Cell {
    match path {
        Err(_) => Cell::Undefined,
        Ok(_) if !host_supports(op_name, dtype) => Cell::Unsupported,
        Ok(Path::Gpu) => Cell::Gpu,
        Ok(Path::Fallback(counted)) => Cell::Fallback {
            allowlisted: is_allowlisted(op_name, counted),
        },
    }
}

/// The matrix for a device with `capabilities`, every op of the table against every dtype.
pub fn coverage(capabilities: &Capabilities) -> Vec<Row> {
    let binary = BinaryOp::ALL.iter().map(|&op| Row {
        op: op.name(),
        arity: 2,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                (
                    dtype,
                    cell(
                        op.name(),
                        dtype,
                        binary_path(op, dtype, dtype, capabilities),
                    ),
                )
            })
            .collect(),
    });
    let unary = UnaryOp::ALL.iter().map(|&op| Row {
        op: op.name(),
        arity: 1,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                (
                    dtype,
                    cell(op.name(), dtype, unary_path(op, dtype, capabilities)),
                )
            })
            .collect(),
    });
    let reductions = ReduceOp::ALL.iter().map(|&op| Row {
        op: op.name(),
        arity: 1,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let undefined = dtype.is_complex()
                    && matches!(
                        op,
                        ReduceOp::ReduceMax
                            | ReduceOp::ReduceMin
                            | ReduceOp::ArgMax
                            | ReduceOp::ArgMin
                    );
                let cell = if undefined {
                    Cell::Undefined
                } else if reduce::runs_on_gpu(op, dtype, capabilities) {
                    Cell::Gpu
                } else if matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
                    Cell::Unsupported
                } else {
                    Cell::Fallback {
                        allowlisted: is_allowlisted(op.name(), dtype),
                    }
                };
                (dtype, cell)
            })
            .collect(),
    });
    let movement = movement::MOVEMENT_OPS.iter().map(|&op| Row {
        op,
        arity: 1,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let cell = if movement::runs_on_gpu(dtype) {
                    Cell::Gpu
                } else {
                    Cell::Unsupported
                };
                (dtype, cell)
            })
            .collect(),
    });
    // Real or complex with kernels on this device (complex scans and select have their own).
    let native_value = |dtype: DType| {
        value_of(dtype).is_some_and(|value| device_supports_value(capabilities, value))
    };
    let is_f8 = |dtype: DType| matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN);
    let scans = ScanOp::ALL.iter().map(move |&op| Row {
        op: op.name(),
        arity: 1,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let cell = if dtype.is_complex() && matches!(op, ScanOp::Min | ScanOp::Max) {
                    Cell::Undefined
                } else if native_value(dtype) {
                    Cell::Gpu
                } else if is_f8(dtype) {
                    Cell::Unsupported
                } else {
                    Cell::Fallback {
                        allowlisted: is_allowlisted(op.name(), dtype),
                    }
                };
                (dtype, cell)
            })
            .collect(),
    });
    // iota and eye convert complex and sub-byte results with `as_type` (complex on the GPU,
    // sub-byte types on the host); select falls back under its own name; clip is max then
    // min.
    let creation_and_select = ["iota", "eye", "select", "clip"].map(|op| Row {
        op,
        arity: if op == "select" { 3 } else { 1 },
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let cell = if op == "clip" {
                    if dtype.is_complex() {
                        Cell::Undefined
                    } else {
                        cell(
                            op,
                            dtype,
                            binary_path(BinaryOp::Max, dtype, dtype, capabilities),
                        )
                    }
                } else if native_value(dtype) {
                    Cell::Gpu
                } else if is_f8(dtype) {
                    Cell::Unsupported
                } else {
                    let counted = if op == "select" { op } else { "as_type" };
                    Cell::Fallback {
                        allowlisted: is_allowlisted(counted, dtype),
                    }
                };
                (dtype, cell)
            })
            .collect(),
    });
    // GEMM-based ops, by the dtype of both operands: GPU where the result type has a kernel,
    // otherwise unsupported (they have no host path).
    let gemm_row = |op: &'static str, result: fn(DType, DType) -> DType| Row {
        op,
        arity: 2,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let cell = if dot::runs_on_gpu(result(dtype, dtype), capabilities) {
                    Cell::Gpu
                } else {
                    Cell::Unsupported
                };
                (dtype, cell)
            })
            .collect(),
    };
    let gemm = [
        gemm_row("dot", dot::result_dtype),
        gemm_row("conv", conv::result_dtype),
    ];
    // GPU or unsupported (no host path), by one predicate per family.
    let gpu_or_unsupported = |op: &'static str, runs: fn(DType, &Capabilities) -> bool| Row {
        op,
        arity: 1,
        cells: DType::ALL
            .into_iter()
            .map(|dtype| {
                let cell = if runs(dtype, capabilities) {
                    Cell::Gpu
                } else {
                    Cell::Unsupported
                };
                (dtype, cell)
            })
            .collect(),
    };
    let windows = window::WINDOW_OPS.iter().map(|&op| {
        if matches!(op, "window_sum" | "window_product") {
            gpu_or_unsupported(op, window::sum_and_product_run_on_gpu)
        } else {
            gpu_or_unsupported(op, window::runs_on_gpu)
        }
    });
    let linear_algebra = linalg::LINALG_OPS
        .iter()
        .map(|&op| gpu_or_unsupported(op, linalg::runs_on_gpu));
    binary
        .chain(unary)
        .chain(reductions)
        .chain(movement)
        .chain(scans)
        .chain(creation_and_select)
        .chain(gemm)
        .chain(windows)
        .chain(linear_algebra)
        .collect()
}
