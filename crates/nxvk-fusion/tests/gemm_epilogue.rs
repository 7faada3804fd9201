//! GEMM epilogues (`gemm_epilogue.rs`): a `dot` and the elementwise kernel that alone reads
//! its product run as one GEMM dispatch whose store applies the kernel's expression. Checked
//! against the plan without epilogues (`PlanOptions::gemm_epilogues` off) and against the
//! eager API op by op, bit for bit, over random shapes (odd sizes, one-element axes, batches),
//! f32, f64, f16 and bf16, biases of shape [N], [M, 1] and scalars, results of the product's
//! type and of others (a comparison's u8, a cast to f16); the cases that do not fit (the
//! product also an output, split-K, integers) keep their stages and their results.

mod common;

use common::{
    SplitMix, bit_equal, cache_with_epilogues, device, random_input, run_counted, serial,
};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{DotAxes, Graph, GraphBuilder, NodeId};
use nxvk_kernels::{BinaryOp, UnaryOp, as_type, binary, dot, unary};
use proptest::prelude::*;

/// The consumer of the product `p`.
#[derive(Debug, Clone, Copy)]
enum Epilogue {
    /// max(p + bias, 0).
    BiasRelu,
    /// 0.375 * p.
    Scale,
    /// sigmoid(p + bias).
    BiasSigmoid,
    /// p > bias: a u8 result.
    GreaterThanBias,
    /// as_type(p + bias, f16): a result of another type than the product's.
    BiasToF16,
}

/// The shape of the bias parameter, for a product of rows M and columns N.
#[derive(Debug, Clone, Copy)]
enum Bias {
    Row,
    Column,
    Scalar,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    batch: Option<usize>,
    m: usize,
    k: usize,
    n: usize,
    dtype: DType,
    epilogue: Epilogue,
    bias: Bias,
}

impl Case {
    fn shapes(&self) -> [Vec<usize>; 3] {
        let Case { m, k, n, .. } = *self;
        let batched = |shape: Vec<usize>| match self.batch {
            Some(batch) => [vec![batch], shape].concat(),
            None => shape,
        };
        let bias = match self.bias {
            Bias::Row => vec![n],
            Bias::Column => vec![m, 1],
            Bias::Scalar => vec![],
        };
        [batched(vec![m, k]), batched(vec![k, n]), bias]
    }

    fn axes(&self) -> DotAxes {
        let batched = usize::from(self.batch.is_some());
        DotAxes {
            contract_left: vec![1 + batched],
            batch_left: (0..batched).collect(),
            contract_right: vec![batched],
            batch_right: (0..batched).collect(),
        }
    }

    /// The graph over x, w and the bias; with `product_too`, the product is an output as well.
    fn graph(&self, product_too: bool) -> Graph {
        let [x_shape, w_shape, bias_shape] = self.shapes();
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(self.dtype, &x_shape).unwrap();
        let w = builder.parameter(self.dtype, &w_shape).unwrap();
        let bias = builder.parameter(self.dtype, &bias_shape).unwrap();
        let product = builder.dot(x, w, self.axes()).unwrap();
        let out = match self.epilogue {
            Epilogue::BiasRelu => {
                let shifted = builder.binary(BinaryOp::Add, product, bias).unwrap();
                let zero = builder.constant(self.dtype, 0.0).unwrap();
                builder.binary(BinaryOp::Max, shifted, zero).unwrap()
            }
            Epilogue::Scale => {
                let scale = builder.constant(self.dtype, 0.375).unwrap();
                builder.binary(BinaryOp::Multiply, scale, product).unwrap()
            }
            Epilogue::BiasSigmoid => {
                let shifted = builder.binary(BinaryOp::Add, product, bias).unwrap();
                builder.unary(UnaryOp::Sigmoid, shifted).unwrap()
            }
            Epilogue::GreaterThanBias => builder.binary(BinaryOp::Greater, product, bias).unwrap(),
            Epilogue::BiasToF16 => {
                let shifted = builder.binary(BinaryOp::Add, product, bias).unwrap();
                builder.as_type(shifted, DType::F16).unwrap()
            }
        };
        let outputs: Vec<NodeId> = if product_too {
            vec![out, product]
        } else {
            vec![out]
        };
        builder.finish(&outputs).unwrap()
    }

    fn inputs(&self, seed: u64) -> Vec<Tensor> {
        let mut random = SplitMix(seed);
        self.shapes()
            .iter()
            .map(|shape| random_input(&mut random, self.dtype, shape))
            .collect()
    }

    /// The eager API op by op.
    fn eager(&self, inputs: &[Tensor]) -> Tensor {
        let axes = self.axes();
        let product = dot(
            &inputs[0],
            &axes.contract_left,
            &axes.batch_left,
            &inputs[1],
            &axes.contract_right,
            &axes.batch_right,
        )
        .unwrap();
        let scalar = |value: f32| {
            as_type(
                &Tensor::from_slice(&device(), &[], &[value]).unwrap(),
                self.dtype,
            )
            .unwrap()
        };
        match self.epilogue {
            Epilogue::BiasRelu => {
                let shifted = binary(BinaryOp::Add, &product, &inputs[2]).unwrap();
                binary(BinaryOp::Max, &shifted, &scalar(0.0)).unwrap()
            }
            Epilogue::Scale => binary(BinaryOp::Multiply, &scalar(0.375), &product).unwrap(),
            Epilogue::BiasSigmoid => {
                let shifted = binary(BinaryOp::Add, &product, &inputs[2]).unwrap();
                unary(UnaryOp::Sigmoid, &shifted).unwrap()
            }
            Epilogue::GreaterThanBias => binary(BinaryOp::Greater, &product, &inputs[2]).unwrap(),
            Epilogue::BiasToF16 => {
                let shifted = binary(BinaryOp::Add, &product, &inputs[2]).unwrap();
                as_type(&shifted, DType::F16).unwrap()
            }
        }
    }
}

/// The fused plan takes one dispatch and one epilogue, and equals the unfused plan (two
/// dispatches) and the eager API.
fn check_fused(case: Case, seed: u64) -> Result<(), TestCaseError> {
    let _serial = serial();
    let graph = case.graph(false);
    let inputs = case.inputs(seed);
    let fused_cache = cache_with_epilogues(true);
    prop_assert_eq!(fused_cache.plan(&graph).unwrap().gemm_epilogues(), 1);
    let (fused, fused_dispatches) = run_counted(&fused_cache, &graph, &inputs);
    prop_assert_eq!(fused_dispatches, 1, "{:?}", case);
    prop_assert_eq!(fused_cache.counters().gemm_epilogues, 2);
    let (unfused, unfused_dispatches) = run_counted(&cache_with_epilogues(false), &graph, &inputs);
    prop_assert_eq!(unfused_dispatches, 2);
    prop_assert!(
        bit_equal(&fused[0], &unfused[0]),
        "fused vs unfused: {:?}",
        case
    );
    prop_assert!(
        bit_equal(&fused[0], &case.eager(&inputs)),
        "fused vs eager: {:?}",
        case
    );
    Ok(())
}

fn any_case() -> impl Strategy<Value = Case> {
    let size = prop_oneof![Just(1usize), 2usize..40];
    (
        prop_oneof![Just(None), Just(Some(1usize)), Just(Some(3))],
        size.clone(),
        size.clone(),
        size,
        prop_oneof![Just(DType::F32), Just(DType::F64)],
        prop_oneof![
            3 => Just(Epilogue::BiasRelu),
            3 => Just(Epilogue::Scale),
            3 => Just(Epilogue::BiasSigmoid),
            1 => Just(Epilogue::GreaterThanBias),
            1 => Just(Epilogue::BiasToF16)
        ],
        prop_oneof![Just(Bias::Row), Just(Bias::Column), Just(Bias::Scalar)],
    )
        .prop_map(|(batch, m, k, n, dtype, epilogue, bias)| Case {
            batch,
            m,
            k,
            n,
            dtype,
            epilogue,
            bias,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_dot_with_its_epilogue_is_one_dispatch_equal_to_the_unfused_plan(
        case in any_case(),
        seed in any::<u64>(),
    ) {
        check_fused(case, seed)?;
    }
}

fn relu_case(dtype: DType) -> Case {
    Case {
        batch: None,
        m: 17,
        k: 9,
        n: 31,
        dtype,
        epilogue: Epilogue::BiasRelu,
        bias: Bias::Row,
    }
}

#[test]
fn bias_relu_f32_and_f64_fuse() {
    for dtype in [DType::F32, DType::F64] {
        check_fused(relu_case(dtype), 3).unwrap();
    }
}

/// Null arm of the comparison: one result bit flipped is caught.
#[test]
fn a_perturbed_result_fails_the_comparison() {
    // Its dispatches would otherwise land inside another test's counted run.
    let _serial = serial();
    let case = relu_case(DType::F32);
    let inputs = case.inputs(5);
    let graph = case.graph(false);
    let inputs_ref: Vec<&Tensor> = inputs.iter().collect();
    let fused = cache_with_epilogues(true)
        .run(&graph, &inputs_ref)
        .unwrap()
        .remove(0);
    let expected = case.eager(&inputs);
    assert!(bit_equal(&fused, &expected));
    let mut values = fused.to_vec::<f32>().unwrap();
    let index = values
        .iter()
        .position(|value| value.is_finite() && *value != 0.0)
        .unwrap();
    values[index] = f32::from_bits(values[index].to_bits() ^ 1);
    let perturbed = Tensor::from_slice(&device(), fused.shape(), &values).unwrap();
    assert!(!bit_equal(&perturbed, &expected));
}

/// A product that is also a graph output keeps its own stage (it must be written anyway).
#[test]
fn a_product_read_elsewhere_keeps_two_dispatches() {
    let _serial = serial();
    let case = relu_case(DType::F32);
    let graph = case.graph(true);
    let inputs = case.inputs(11);
    let fused_cache = cache_with_epilogues(true);
    assert_eq!(fused_cache.plan(&graph).unwrap().gemm_epilogues(), 0);
    let (results, used) = run_counted(&fused_cache, &graph, &inputs);
    assert_eq!(used, 2);
    assert_eq!(fused_cache.counters().gemm_epilogues, 0);
    assert!(bit_equal(&results[0], &case.eager(&inputs)));
}

/// Split-K (few output tiles, deep K) has no epilogue: the stage runs the plain product's
/// dispatches and the unfused kernel, as many as the plan without epilogues, same result.
#[test]
fn a_split_k_product_keeps_the_unfused_path() {
    let _serial = serial();
    let case = Case {
        m: 8,
        k: 2048,
        n: 8,
        ..relu_case(DType::F32)
    };
    let graph = case.graph(false);
    let inputs = case.inputs(13);
    let fused_cache = cache_with_epilogues(true);
    assert_eq!(fused_cache.plan(&graph).unwrap().gemm_epilogues(), 1);
    let (fused, fused_dispatches) = run_counted(&fused_cache, &graph, &inputs);
    assert_eq!(fused_cache.counters().gemm_epilogues, 0);
    let (unfused, unfused_dispatches) = run_counted(&cache_with_epilogues(false), &graph, &inputs);
    assert!(unfused_dispatches > 2, "split-K takes a reduction too");
    assert_eq!(fused_dispatches, unfused_dispatches);
    assert!(bit_equal(&fused[0], &unfused[0]));
}

/// f16 and bf16 products keep their two stages (they differed on the H200), with the eager
/// API's results.
#[test]
fn half_precision_products_take_no_epilogue() {
    let _serial = serial();
    for dtype in [DType::F16, DType::BF16] {
        let case = Case {
            batch: None,
            m: 10,
            k: 1,
            n: 1,
            dtype,
            epilogue: Epilogue::BiasRelu,
            bias: Bias::Scalar,
        };
        let graph = case.graph(false);
        let inputs = case.inputs(3);
        let cache = cache_with_epilogues(true);
        assert_eq!(cache.plan(&graph).unwrap().gemm_epilogues(), 0, "{dtype:?}");
        let (results, dispatches) = run_counted(&cache, &graph, &inputs);
        assert_eq!(dispatches, 2, "{dtype:?}");
        assert!(bit_equal(&results[0], &case.eager(&inputs)), "{dtype:?}");
    }
}

/// Integer products keep their stages.
#[test]
fn an_integer_product_takes_no_epilogue() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::S32, &[5, 3]).unwrap();
    let w = builder.parameter(DType::S32, &[3, 4]).unwrap();
    let bias = builder.parameter(DType::S32, &[4]).unwrap();
    let product = builder.dot(x, w, DotAxes::matrix_product()).unwrap();
    let out = builder.binary(BinaryOp::Add, product, bias).unwrap();
    let graph = builder.finish(&[out]).unwrap();
    assert_eq!(
        cache_with_epilogues(true)
            .plan(&graph)
            .unwrap()
            .gemm_epilogues(),
        0
    );
}

/// An operand whose strides do not collapse onto C's column axes (B has two free axes, the
/// operand is transposed across them) is copied dense first: still one epilogue, the same
/// result as the unfused plan.
#[test]
fn an_operand_across_two_column_axes_is_copied_dense() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[6, 5]).unwrap();
    let w = builder.parameter(DType::F32, &[5, 3, 7]).unwrap();
    let r = builder.parameter(DType::F32, &[6, 7, 3]).unwrap();
    let product = builder.dot(x, w, DotAxes::matrix_product()).unwrap();
    let transposed = builder.transpose(r, &[0, 2, 1]).unwrap();
    let out = builder.binary(BinaryOp::Add, product, transposed).unwrap();
    let graph = builder.finish(&[out]).unwrap();
    let mut random = SplitMix(19);
    let inputs: Vec<Tensor> = [vec![6, 5], vec![5, 3, 7], vec![6, 7, 3]]
        .iter()
        .map(|shape| random_input(&mut random, DType::F32, shape))
        .collect();
    let fused_cache = cache_with_epilogues(true);
    let (fused, fused_dispatches) = run_counted(&fused_cache, &graph, &inputs);
    assert_eq!(fused_cache.counters().gemm_epilogues, 2);
    // The copy of the operand, then the GEMM.
    assert_eq!(fused_dispatches, 2);
    let (unfused, _) = run_counted(&cache_with_epilogues(false), &graph, &inputs);
    assert!(bit_equal(&fused[0], &unfused[0]));
}
