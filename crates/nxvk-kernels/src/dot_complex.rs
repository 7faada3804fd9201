//! Complex (c64, c128) `dot` as one real GEMM of the catalog's tiled template.
//!
//! With `A` seen as its parts (`complex_view::parts`: `[..A, p]`, p = re, im) and each element
//! of `B` expanded into the 2 x 2 real block `[[re, im], [-im, re]]` (`[..B, p, q]`), the real
//! dot contracting A's axes and `p` with B's axes and `p` gives, along B's last free axis `q`,
//! `sum re_a re_b - im_a im_b` (q = 0) and `sum re_a im_b + im_a re_b` (q = 1): exactly the
//! complex product's parts, laid out as the complex result's parts view. It is the "4M"
//! decomposition (four real multiply-adds per complex one, as Complex.multiply computes it) as
//! a single GEMM of depth 2K and width 2N: the tuned tiles, split-K and autotuner apply, A is
//! never copied (unless the real GEMM needs its axes reordered), and the expansion of B costs
//! one complex multiply and one stack over B (O(K N), against the GEMM's O(M N K)). The 3M
//! (Gauss) form was rejected: it saves a quarter of the multiplies but loses accuracy on parts
//! of different magnitudes.
//!
//! Numerics: each part accumulates in the component type (f32 for c64, with fused
//! multiply-adds, f64 for c128) in the GEMM's order, so a part's error is bounded by a small
//! multiple of `K eps sum |a| |b|`, as for real dots. Non-finite parts give non-finite results,
//! but not always the NaN/Inf pattern of BinaryBackend's sequential Complex arithmetic.

use crate::complex_view::{from_parts, parts};
use crate::dot::{dot_with_config, result_dtype};
use crate::dot_codegen::TileConfig;
use crate::movement::stack;
use crate::ops;
use nxvk_core::{Complex32, Complex64, DType, Result, Tensor};

const OP: &str = "dot";

/// `[..B, p, q]`: each complex element of `b` as `[[re, im], [-im, re]]` (row p, column q).
pub(crate) fn expanded(op: &'static str, b: &Tensor) -> Result<Tensor> {
    // Row p = 0 is b's parts (re, im); row p = 1 is the parts of i b = (-im, re).
    let i = match b.dtype() {
        DType::C64 => Tensor::from_slice(b.device(), &[], &[Complex32::new(0.0, 1.0)])?,
        _ => Tensor::from_slice(b.device(), &[], &[Complex64::new(0.0, 1.0)])?,
    };
    let rotated = ops::multiply(&i, b)?;
    stack(&[&parts(op, b)?, &parts(op, &rotated)?], b.shape().len())
}

/// Complex `dot` of `a` and `b` over `[contract_a, batch_a, contract_b, batch_b]` (the caller
/// checked the axes; the result type is complex), with an optional tile override.
pub(crate) fn dot(
    a: &Tensor,
    b: &Tensor,
    [contract_a, batch_a, contract_b, batch_b]: [&[usize]; 4],
    config: Option<TileConfig>,
) -> Result<Tensor> {
    let result = result_dtype(a.dtype(), b.dtype());
    let a = ops::as_type(a, result)?;
    let b = ops::as_type(b, result)?;
    let a_parts = parts(OP, &a)?;
    let b_blocks = expanded(OP, &b)?;
    // A's part axis pairs with B's row axis p; B's column axis q ends the result.
    let contract_a = [contract_a, &[a.shape().len()]].concat();
    let contract_b = [contract_b, &[b.shape().len()]].concat();
    let real = dot_with_config(
        &a_parts,
        &contract_a,
        batch_a,
        &b_blocks,
        &contract_b,
        batch_b,
        config,
    )?;
    from_parts(OP, &real)
}
