//! Random graphs of dynamic slices and put_slices (starts given by nodes), shared by the
//! fused-against-eager proptest and the encoding round trip, and the start values they run on.

use super::{SplitMix, device};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, NodeId, SliceStart};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp};

/// Every integer type a start node may have.
pub const START_DTYPES: [DType; 8] = [
    DType::S8,
    DType::S16,
    DType::S32,
    DType::S64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
];

/// The dtypes of the sliced data.
const DATA_DTYPES: [DType; 3] = [DType::F32, DType::F64, DType::S32];

/// A random graph over a data parameter (rank 1 to 3, axes of 0 to 4 elements), a dynamic
/// slice (random lengths, strides 1 to 3) or put_slice (an update parameter) of it whose
/// starts are, per axis, a static value (negative and past the end included), a rank-0 start
/// parameter of a random integer type, or a start computed inside the graph (the data's
/// argmax minus 1, so possibly -1); then, at random, an elementwise op reading the result (so
/// a fused kernel takes the stage's output).
pub fn random_slice_graph(seed: u64) -> Graph {
    let mut random = SplitMix(seed);
    let dtype = random.pick(&DATA_DTYPES);
    let rank = 1 + random.below(3);
    let shape: Vec<usize> = (0..rank).map(|_| random.below(5)).collect();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &shape).unwrap();
    let mut computed: Option<NodeId> = None;
    let mut starts = Vec::with_capacity(rank);
    for _ in 0..rank {
        let start = match random.below(4) {
            0 => SliceStart::Static(random.below(9) as i64 - 3),
            3 if shape.iter().all(|&size| size > 0) => {
                let start = *computed.get_or_insert_with(|| {
                    let position = builder
                        .reduce(ReduceOp::ArgMax, x, None, false, TieBreak::Low)
                        .unwrap();
                    let start_dtype = builder.type_of(position).unwrap().tensor().unwrap().dtype;
                    let one = builder.constant(start_dtype, 1.0).unwrap();
                    builder.binary(BinaryOp::Subtract, position, one).unwrap()
                });
                SliceStart::Node(start)
            }
            _ => SliceStart::Node(builder.parameter(random.pick(&START_DTYPES), &[]).unwrap()),
        };
        starts.push(start);
    }
    let lengths: Vec<usize> = shape.iter().map(|&size| random.below(size + 1)).collect();
    let result = if random.below(2) == 0 {
        let strides: Vec<usize> = (0..rank).map(|_| 1 + random.below(3)).collect();
        builder
            .dynamic_slice(x, &starts, &lengths, &strides)
            .unwrap()
    } else {
        let update = builder.parameter(dtype, &lengths).unwrap();
        builder.dynamic_put_slice(x, &starts, update).unwrap()
    };
    let output = if random.below(2) == 0 {
        builder.unary(UnaryOp::Negate, result).unwrap()
    } else {
        result
    };
    builder.finish(&[output]).unwrap()
}

/// A rank-0 start of `dtype`: the type's extremes or a small value (-3 to 5, clamped to the
/// type), and its value.
pub fn random_start(random: &mut SplitMix, dtype: DType) -> (Tensor, i128) {
    let (min, max) = reference::integer_limits(dtype);
    let value = match random.below(6) {
        0 => min,
        1 => max,
        _ => (random.below(9) as i128 - 3).clamp(min, max),
    };
    (start_tensor(dtype, value), value)
}

/// A rank-0 tensor of `dtype` holding `value`.
pub fn start_tensor(dtype: DType, value: i128) -> Tensor {
    Tensor::from_bytes(
        &device(),
        dtype,
        &[],
        &reference::encode(dtype, &[Value::Int(value)]),
    )
    .unwrap()
}

/// Inputs for `graph`: rank-0 integer parameters are random starts, the others small
/// integers (exact in every data dtype).
pub fn random_inputs(graph: &Graph, random: &mut SplitMix) -> Vec<Tensor> {
    graph
        .parameters()
        .iter()
        .map(|parameter| {
            if parameter.shape.is_empty() && parameter.dtype.is_integer() {
                random_start(random, parameter.dtype).0
            } else {
                let values: Vec<f64> = (0..parameter.n_elements())
                    .map(|_| random.below(19) as f64 - 9.0)
                    .collect();
                let floats = Tensor::from_slice(&device(), &parameter.shape, &values).unwrap();
                nxvk_kernels::as_type(&floats, parameter.dtype).unwrap()
            }
        })
        .collect()
}

/// The value of a scalar integer tensor (read back).
pub fn integer_value(tensor: &Tensor) -> i128 {
    match reference::decode(tensor.dtype(), &tensor.to_bytes().unwrap(), 1)
        .and_then(|values| values.first().copied())
    {
        Some(Value::Int(value)) => value,
        other => panic!("{} is no integer scalar: {other:?}", tensor.dtype()),
    }
}
