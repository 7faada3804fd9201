//! Complex tensors seen as their parts: a c64 (c128) tensor of shape `S` is, bit for bit, an
//! f32 (f64) tensor of shape `S ++ [2]` whose last axis holds the real and the imaginary part.
//!
//! Ops that are linear in the parts (sums, `any` over both parts, the real decompositions of
//! dot and conv) run the catalog's tuned real kernels on these views instead of complex
//! copies of them: no data moves, and every view (transposed, sliced, broadcast) stays one.

use crate::operand_errors::bad_operands;
use nxvk_core::{Complex32, Complex64, DType, Layout, Result, Tensor};

/// The component dtype of a complex dtype (f32 for c64, f64 for c128), `None` for real ones.
pub(crate) const fn component_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::C64 => Some(DType::F32),
        DType::C128 => Some(DType::F64),
        _ => None,
    }
}

/// The complex dtype whose parts are `component` (c64 for f32, c128 for f64).
const fn complex_dtype(component: DType) -> Option<DType> {
    match component {
        DType::F32 => Some(DType::C64),
        DType::F64 => Some(DType::C128),
        _ => None,
    }
}

/// `tensor` (complex) as its parts: shape `S ++ [2]`, the component dtype, the same buffer.
pub(crate) fn parts(op: &'static str, tensor: &Tensor) -> Result<Tensor> {
    let Some(component) = component_dtype(tensor.dtype()) else {
        return Err(bad_operands(
            op,
            &[tensor],
            "expected a complex tensor".into(),
        ));
    };
    let layout = tensor.layout();
    // Every element stride doubles in component units; the part axis has stride 1.
    let shape = [layout.shape(), &[2]].concat();
    let strides: Vec<usize> = layout
        .strides()
        .iter()
        .map(|&stride| stride * 2)
        .chain([1])
        .collect();
    // An empty view may sit past its buffer's end (a slice of an empty tensor): start it at 0.
    let offset = if tensor.n_elements() == 0 {
        0
    } else {
        layout.offset() * 2
    };
    let parts_layout = Layout::from_parts(shape, strides, offset)?;
    Tensor::from_parts(tensor.buffer().clone(), parts_layout, component)
}

/// The inverse of [`parts`]: a real f32 (f64) tensor whose last axis has size 2 and stride 1
/// (and whose other strides and offset are even) as the c64 (c128) tensor of the other axes.
pub(crate) fn from_parts(op: &'static str, tensor: &Tensor) -> Result<Tensor> {
    let layout = tensor.layout();
    let rank = layout.rank();
    let complex = complex_dtype(tensor.dtype());
    let pairs = rank >= 1 && layout.shape()[rank - 1] == 2 && layout.strides()[rank - 1] == 1;
    let even = layout.offset().is_multiple_of(2)
        && layout.strides()[..rank.saturating_sub(1)]
            .iter()
            .all(|stride| stride.is_multiple_of(2));
    let (Some(complex), true, true) = (complex, pairs, even) else {
        return Err(bad_operands(
            op,
            &[tensor],
            "expected f32/f64 parts: a last axis of size 2 and stride 1, even other strides".into(),
        ));
    };
    let complex_layout = Layout::from_parts(
        layout.shape()[..rank - 1].to_vec(),
        layout.strides()[..rank - 1]
            .iter()
            .map(|stride| stride / 2)
            .collect(),
        layout.offset() / 2,
    )?;
    Tensor::from_parts(tensor.buffer().clone(), complex_layout, complex)
}

/// The imaginary unit as a rank-0 tensor of `like`'s complex dtype (c128 unless c64), on its
/// device: the factor that turns parts (re, im) into (-im, re).
pub(crate) fn imaginary_unit(like: &Tensor) -> Result<Tensor> {
    match like.dtype() {
        DType::C64 => Tensor::from_slice(like.device(), &[], &[Complex32::new(0.0, 1.0)]),
        _ => Tensor::from_slice(like.device(), &[], &[Complex64::new(0.0, 1.0)]),
    }
}
