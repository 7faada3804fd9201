//! Convolution epilogues (`gemm_epilogue.rs`): a `conv` and the elementwise kernel that alone
//! reads its output run as one implicit-GEMM dispatch whose store applies the kernel's
//! expression. Checked against the plan without epilogues and the eager API op by op, bit
//! for bit, over random geometries (images, channels, feature or batch groups, padding,
//! strides) in f32 and f64 with a per-channel bias; a full-size operand is copied
//! channel-major first, and a non-identity output permutation keeps the two stages. (The
//! comparison's null arm is `gemm_epilogue.rs`'s.)

mod common;

use common::{
    SplitMix, bit_equal, cache_with_epilogues, device, random_input, run_counted, serial,
};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{Graph, GraphBuilder};
use nxvk_kernels::{BinaryOp, ConvGeometry, ConvOptions, as_type, binary, conv};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    images: usize,
    channels: usize,
    filters: usize,
    side: usize,
    kernel_side: usize,
    groups: usize,
    options: ConvOptions,
    dtype: DType,
    /// The operand added before the relu: a per-channel bias [1, F, 1, 1], or (`full`) one of
    /// the output's shape.
    full: bool,
}

impl Case {
    fn input_shapes(&self) -> [Vec<usize>; 2] {
        [
            vec![self.images, self.channels, self.side, self.side],
            vec![
                self.filters,
                self.channels / self.groups,
                self.kernel_side,
                self.kernel_side,
            ],
        ]
    }

    /// relu(conv(x, k) + operand), with the conv's output shape.
    fn graph(&self) -> (Graph, Vec<usize>) {
        let [x_shape, k_shape] = self.input_shapes();
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(self.dtype, &x_shape).unwrap();
        let k = builder.parameter(self.dtype, &k_shape).unwrap();
        let output = builder.conv(x, k, self.options.clone()).unwrap();
        let output_shape = ConvGeometry::new(&x_shape, &k_shape, &self.options)
            .unwrap()
            .output_shape;
        let operand_shape = self.operand_shape(&output_shape);
        let operand = builder.parameter(self.dtype, &operand_shape).unwrap();
        let shifted = builder.binary(BinaryOp::Add, output, operand).unwrap();
        let zero = builder.constant(self.dtype, 0.0).unwrap();
        let out = builder.binary(BinaryOp::Max, shifted, zero).unwrap();
        (builder.finish(&[out]).unwrap(), output_shape)
    }

    fn operand_shape(&self, output_shape: &[usize]) -> Vec<usize> {
        if self.full {
            output_shape.to_vec()
        } else {
            vec![1, output_shape[1], 1, 1]
        }
    }

    fn inputs(&self, output_shape: &[usize], seed: u64) -> Vec<Tensor> {
        let mut random = SplitMix(seed);
        let [x_shape, k_shape] = self.input_shapes();
        [x_shape, k_shape, self.operand_shape(output_shape)]
            .iter()
            .map(|shape| random_input(&mut random, self.dtype, shape))
            .collect()
    }

    fn eager(&self, inputs: &[Tensor]) -> Tensor {
        let output = conv(&inputs[0], &inputs[1], &self.options).unwrap();
        let shifted = binary(BinaryOp::Add, &output, &inputs[2]).unwrap();
        let zero = as_type(
            &Tensor::from_slice(&device(), &[], &[0.0f32]).unwrap(),
            self.dtype,
        )
        .unwrap();
        binary(BinaryOp::Max, &shifted, &zero).unwrap()
    }
}

/// Runs the case fused and unfused: returns (fused dispatches, unfused dispatches, epilogues
/// applied per fused run) after checking both against the eager ops.
fn check(case: &Case, seed: u64) -> Result<(u64, u64, u64), TestCaseError> {
    let _serial = serial();
    let (graph, output_shape) = case.graph();
    let inputs = case.inputs(&output_shape, seed);
    let fused_cache = cache_with_epilogues(true);
    prop_assert_eq!(fused_cache.plan(&graph).unwrap().gemm_epilogues(), 1);
    let (fused, fused_dispatches) = run_counted(&fused_cache, &graph, &inputs);
    let (unfused, unfused_dispatches) = run_counted(&cache_with_epilogues(false), &graph, &inputs);
    let (fused, unfused) = (&fused[0], &unfused[0]);
    prop_assert!(bit_equal(fused, unfused), "fused vs unfused: {:?}", case);
    prop_assert!(
        bit_equal(fused, &case.eager(&inputs)),
        "fused vs eager: {:?}",
        case
    );
    Ok((
        fused_dispatches,
        unfused_dispatches,
        fused_cache.counters().gemm_epilogues / 2,
    ))
}

fn any_case() -> impl Strategy<Value = Case> {
    (
        (1usize..4, 1usize..3, 1usize..4, 3usize..10, 1usize..4),
        prop_oneof![Just(1usize), Just(2)],
        any::<bool>(),
        0i64..2,
        1usize..3,
        prop_oneof![Just(DType::F32), Just(DType::F64)],
    )
        .prop_map(
            |(
                (images, channels, filters_per_group, side, kernel_side),
                groups,
                by_batch,
                pad,
                stride,
                dtype,
            )| {
                // Groups split the channels (feature groups) or the images (batch groups).
                let (feature_groups, batch_groups) =
                    if by_batch { (1, groups) } else { (groups, 1) };
                Case {
                    images: images * batch_groups,
                    channels: channels * feature_groups,
                    filters: filters_per_group * groups,
                    side,
                    kernel_side: kernel_side.min(side),
                    groups: feature_groups,
                    options: ConvOptions {
                        strides: vec![stride, stride],
                        padding: vec![(pad, pad), (pad, pad)],
                        feature_group_size: feature_groups,
                        batch_group_size: batch_groups,
                        ..ConvOptions::default()
                    },
                    dtype,
                    full: false,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// A per-channel bias and relu: one dispatch fewer than the unfused plan, one epilogue.
    #[test]
    fn a_conv_with_bias_and_relu_is_one_dispatch_equal_to_the_unfused_plan(
        case in any_case(),
        seed in any::<u64>(),
    ) {
        let (fused, unfused, applied) = check(&case, seed)?;
        prop_assert_eq!(applied, 1);
        prop_assert_eq!(fused + 1, unfused, "{:?}", case);
    }
}

fn base_case() -> Case {
    Case {
        images: 2,
        channels: 3,
        filters: 4,
        side: 7,
        kernel_side: 3,
        groups: 1,
        options: ConvOptions {
            padding: vec![(1, 1), (1, 1)],
            ..ConvOptions::default()
        },
        dtype: DType::F32,
        full: false,
    }
}

/// A full-size operand's image and position strides are not one axis: it is copied
/// channel-major (one dispatch), then read by the epilogue.
#[test]
fn a_full_size_operand_is_copied_channel_major() {
    let case = Case {
        full: true,
        ..base_case()
    };
    let (fused, unfused, applied) = check(&case, 7).unwrap();
    assert_eq!(applied, 1);
    assert_eq!(fused, unfused);
}

/// With an output permutation other than the identity, C is not the result's layout: the
/// stage runs the conv and the unfused kernel.
#[test]
fn a_permuted_output_keeps_the_unfused_path() {
    let case = Case {
        options: ConvOptions {
            output_permutation: Some(vec![0, 2, 3, 1]),
            ..base_case().options
        },
        ..base_case()
    };
    let (graph, output_shape) = case.graph();
    let inputs = case.inputs(&output_shape, 9);
    let fused_cache = cache_with_epilogues(true);
    let (fused, fused_dispatches) = {
        let _serial = serial();
        run_counted(&fused_cache, &graph, &inputs)
    };
    let (unfused, unfused_dispatches) = {
        let _serial = serial();
        run_counted(&cache_with_epilogues(false), &graph, &inputs)
    };
    assert_eq!(fused_cache.counters().gemm_epilogues, 0);
    assert_eq!(fused_dispatches, unfused_dispatches);
    assert!(bit_equal(&fused[0], &unfused[0]));
    assert!(bit_equal(&fused[0], &case.eager(&inputs)));
}
