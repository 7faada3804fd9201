//! `dot_with_epilogue`: a hand-written epilogue (`2 * value + operand`, written with
//! `precise` so the compiler cannot contract it) applied in the GEMM's store equals the
//! product followed by the eager ops; batched products, broadcast operands; split-K and
//! integer products come back plain; a misshapen operand is an error.

mod common;

use common::device;
use nxvk_core::{DType, Error, Tensor};
use nxvk_kernels::dot::{EpilogueOutcome, dot, dot_with_epilogue};
use nxvk_kernels::{BinaryOp, Elem, GemmEpilogue, binary, movement};

/// `2 * value + operand` of f32 elements.
fn twice_plus_operand() -> GemmEpilogue {
    GemmEpilogue {
        functions: "layout(buffer_reference, scalar, buffer_reference_align = 4) readonly buffer Operand { float v; };
layout(buffer_reference, scalar) readonly buffer OperandAddress { uint64_t v; };
layout(buffer_reference, scalar) readonly buffer OperandStrides { uint v[3]; };
float nx_gemm_epilogue(float value, uint batch, uint row, uint column) {
    OperandStrides strides = OperandStrides(push.epilogue + 8ul);
    uint index = batch * strides.v[0] + row * strides.v[1] + column * strides.v[2];
    precise float twice = value * 2.0;
    precise float result = twice + Operand(OperandAddress(push.epilogue).v + uint64_t(index) * 4ul).v;
    return result;
}
"
        .into(),
        output: Elem::F32,
        word: 0,
    }
}

fn tensor(shape: &[usize], seed: u32) -> Tensor {
    let count: usize = shape.iter().product();
    let values: Vec<f32> = (0..count)
        .map(|index| ((index as u32 * 37 + seed * 11) % 29) as f32 / 8.0 - 1.5)
        .collect();
    Tensor::from_slice(&device(), shape, &values).unwrap()
}

/// The epilogue of a batched product with a bias broadcast along the rows and the batch
/// matches the eager ops bit for bit, and an altered element does not (null arm).
#[test]
fn the_epilogue_equals_the_eager_ops() {
    let (a, b) = (tensor(&[3, 7, 5], 1), tensor(&[3, 5, 9], 2));
    let bias = tensor(&[9], 3);
    let broadcast = movement::broadcast(&bias, &[3, 7, 9], &[2]).unwrap();
    let axes: [&[usize]; 4] = [&[2], &[0], &[1], &[0]];
    let outcome = dot_with_epilogue(&a, axes, &b, &twice_plus_operand(), &[&broadcast]).unwrap();
    let EpilogueOutcome::Applied(fused) = outcome else {
        panic!("a small f32 product takes one tiled pass");
    };
    let product = dot(&a, &[2], &[0], &b, &[1], &[0]).unwrap();
    let two = Tensor::from_slice(&device(), &[], &[2.0f32]).unwrap();
    let twice = binary(BinaryOp::Multiply, &product, &two).unwrap();
    let expected = binary(BinaryOp::Add, &twice, &bias).unwrap();
    assert_eq!(fused.shape(), expected.shape());
    let (fused, expected) = (
        fused.to_vec::<f32>().unwrap(),
        expected.to_vec::<f32>().unwrap(),
    );
    assert_eq!(fused, expected);
    let mut altered = fused.clone();
    altered[40] += 1.0;
    assert_ne!(altered, expected);
}

/// Split-K and integer products return the plain product.
#[test]
fn products_without_one_tiled_pass_come_back_plain() {
    let (a, b) = (tensor(&[4, 4096], 4), tensor(&[4096, 4], 5));
    let operand = movement::broadcast(&tensor(&[], 6), &[4, 4], &[]).unwrap();
    let axes: [&[usize]; 4] = [&[1], &[], &[0], &[]];
    let outcome = dot_with_epilogue(&a, axes, &b, &twice_plus_operand(), &[&operand]).unwrap();
    let EpilogueOutcome::Plain(product) = outcome else {
        panic!("a deep product with one tile splits K");
    };
    let expected = dot(&a, &[1], &[], &b, &[0], &[]).unwrap();
    assert_eq!(
        product.to_vec::<f32>().unwrap(),
        expected.to_vec::<f32>().unwrap()
    );
    let integers = |tensor: &Tensor| nxvk_kernels::as_type(tensor, DType::S32).unwrap();
    let (a, b) = (integers(&tensor(&[2, 3], 7)), integers(&tensor(&[3, 4], 8)));
    let operand = movement::broadcast(&tensor(&[], 9), &[2, 4], &[]).unwrap();
    let outcome = dot_with_epilogue(&a, axes, &b, &twice_plus_operand(), &[&operand]).unwrap();
    assert!(matches!(outcome, EpilogueOutcome::Plain(_)));
}

#[test]
fn an_operand_of_another_shape_is_an_error() {
    let (a, b) = (tensor(&[2, 3], 1), tensor(&[3, 4], 2));
    let axes: [&[usize]; 4] = [&[1], &[], &[0], &[]];
    let result = dot_with_epilogue(&a, axes, &b, &twice_plus_operand(), &[&tensor(&[4], 3)]);
    assert!(matches!(result, Err(Error::BadOperands { .. })));
}
