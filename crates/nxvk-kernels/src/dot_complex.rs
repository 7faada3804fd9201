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
//! one complex multiply and one stack over B (O(K N), against the GEMM's O(M N K)), written
//! with the row axis right after B's contraction axes so the GEMM reads it in place. The 3M
//! (Gauss) form was rejected: it saves a quarter of the multiplies but loses accuracy on parts
//! of different magnitudes.
//!
//! Numerics: each part accumulates in the component type (f32 for c64, with fused
//! multiply-adds, f64 for c128) in the GEMM's order, so a part's error is bounded by a small
//! multiple of `K eps sum |a| |b|`, as for real dots. Non-finite parts give non-finite results,
//! but not always the NaN/Inf pattern of BinaryBackend's sequential Complex arithmetic.

use crate::complex_view::{from_parts, imaginary_unit, parts};
use crate::dot::{dot_with_config, result_dtype};
use crate::dot_codegen::TileConfig;
use crate::movement::stack;
use crate::ops;
use nxvk_core::{Result, Tensor};

const OP: &str = "dot";

/// Each complex element of `b` as the real block `[[re, im], [-im, re]]`: the row axis p
/// inserted at `p_axis`, the column axis q last. Row p = 0 is b's parts (re, im), row p = 1
/// the parts of i b, (-im, re).
fn expanded(b: &Tensor, p_axis: usize) -> Result<Tensor> {
    let rotated = ops::multiply(&imaginary_unit(b)?, b)?;
    stack(&[&parts(OP, b)?, &parts(OP, &rotated)?], p_axis)
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
    // p goes right after B's last contraction axis, so that for the usual layouts (B's
    // contraction axes before its free ones) B's contraction and free axes stay one stride
    // each, (k, p) and (n, q), and the GEMM reads the blocks without another copy.
    let p_axis = contract_b.iter().max().map_or(0, |&axis| axis + 1);
    let shifted = |axes: &[usize]| -> Vec<usize> {
        axes.iter()
            .map(|&axis| if axis >= p_axis { axis + 1 } else { axis })
            .collect()
    };
    let b_blocks = expanded(&b, p_axis)?;
    // A's part axis pairs with B's row axis p; B's column axis q ends the result.
    let contract_a = [contract_a, &[a.shape().len()]].concat();
    let contract_b = [shifted(contract_b), vec![p_axis]].concat();
    let real = dot_with_config(
        &parts(OP, &a)?,
        &contract_a,
        batch_a,
        &b_blocks,
        &contract_b,
        &shifted(batch_b),
        config,
    )?;
    from_parts(OP, &real)
}
