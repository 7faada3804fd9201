//! Shared test support: one device per test binary and a generator of random graphs.
// Each test binary uses part of this module.
#![allow(dead_code)]

use nxvk_core::{Context, DType, Device, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, NodeId, Op, PlanCache, PlanOptions, SliceStart};
use nxvk_kernels::reduce::{ReduceOptions, reduce};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp, as_type, binary, movement, unary};
use std::sync::{Arc, OnceLock};

/// One context per test binary: device creation costs time on lavapipe.
pub fn device() -> Arc<Device> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| Context::new().expect("a Vulkan device (lavapipe in CI)"));
    context.device().expect("device")
}

/// Held by tests that count the shared device's dispatches, so that tests running on other
/// threads do not add theirs to the count.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs the graph `build` makes over parameters typed like `inputs` (its outputs: the nodes
/// it returns), checks each output against the builder's inferred type, and returns them.
pub fn planned_outputs(
    cache: &PlanCache,
    inputs: &[&Tensor],
    build: impl Fn(&mut GraphBuilder, &[NodeId]) -> Vec<NodeId>,
) -> Vec<Tensor> {
    let mut builder = GraphBuilder::new();
    let parameters: Vec<NodeId> = inputs
        .iter()
        .map(|input| builder.parameter(input.dtype(), input.shape()).unwrap())
        .collect();
    let outputs = build(&mut builder, &parameters);
    let graph = builder.finish(&outputs).unwrap();
    let results = cache.run(&graph, inputs).unwrap();
    for (&output, result) in outputs.iter().zip(&results) {
        let inferred = graph.node(output).ty.tensor().unwrap().clone();
        assert_eq!(
            (inferred.dtype, inferred.shape.as_slice()),
            (result.dtype(), result.shape())
        );
    }
    results
}

/// Same dtype, shape and bytes.
pub fn same(planned: &Tensor, eager: &Tensor) -> bool {
    planned.dtype() == eager.dtype()
        && planned.shape() == eager.shape()
        && planned.to_bytes().unwrap() == eager.to_bytes().unwrap()
}

/// Same dtype, shape and bits, any NaN equal to any NaN (values seen as f64, exactly).
pub fn bit_equal(a: &Tensor, b: &Tensor) -> bool {
    let values = |tensor: &Tensor| {
        as_type(tensor, DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
    };
    a.dtype() == b.dtype()
        && a.shape() == b.shape()
        && values(a)
            .iter()
            .zip(values(b))
            .all(|(x, y)| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits())
}

/// A plan cache with GEMM epilogues on or off, the other options default.
pub fn cache_with_epilogues(gemm_epilogues: bool) -> PlanCache {
    PlanCache::with_options(
        &device(),
        PlanOptions {
            gemm_epilogues,
            ..PlanOptions::default()
        },
    )
}

/// Runs `graph` twice (planning and compiling first) and returns the second run's results
/// with the dispatches it took (callers hold [`serial`]).
pub fn run_counted(cache: &PlanCache, graph: &Graph, inputs: &[Tensor]) -> (Vec<Tensor>, u64) {
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    cache.run(graph, &inputs).unwrap();
    let before = device().counters().dispatches;
    let results = cache.run(graph, &inputs).unwrap();
    (results, device().counters().dispatches - before)
}

/// Softmax of `x` over axis 1 (of a rank-2 value), as nodes of `builder`.
pub fn softmax_of(builder: &mut GraphBuilder, x: NodeId) -> NodeId {
    let max = builder
        .reduce(ReduceOp::ReduceMax, x, Some(&[1]), true, TieBreak::Low)
        .unwrap();
    let shifted = builder.binary(BinaryOp::Subtract, x, max).unwrap();
    let exp = builder.unary(UnaryOp::Exp, shifted).unwrap();
    let sum = builder
        .reduce(ReduceOp::Sum, exp, Some(&[1]), true, TieBreak::Low)
        .unwrap();
    builder.binary(BinaryOp::Divide, exp, sum).unwrap()
}

pub mod slice_graphs;

#[path = "../../../nxvk-kernels/tests/common/split_mix.rs"]
mod split_mix;
pub use split_mix::SplitMix;

impl SplitMix {
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Ops the random graphs draw from: exact ones, and transcendentals checked to an ulp bound.
pub const UNARY: &[UnaryOp] = &[
    UnaryOp::Negate,
    UnaryOp::Abs,
    UnaryOp::Floor,
    UnaryOp::Exp,
    UnaryOp::Sigmoid,
    UnaryOp::Tanh,
    UnaryOp::IsNan,
];
pub const BINARY: &[BinaryOp] = &[
    BinaryOp::Add,
    BinaryOp::Subtract,
    BinaryOp::Multiply,
    BinaryOp::Divide,
    BinaryOp::Max,
    BinaryOp::Min,
    BinaryOp::Less,
];
pub const REDUCE: &[ReduceOp] = &[
    ReduceOp::Sum,
    ReduceOp::ReduceMax,
    ReduceOp::ReduceMin,
    ReduceOp::ArgMax,
];

/// A random graph over one or two parameters of `dtype`: `steps` nodes of elementwise,
/// broadcast, reshape, transpose, reduction and (rarely) select/clip/slice kinds. Nodes the
/// builder rejects (say a binary op on shapes that do not broadcast) are skipped; the graph's
/// outputs are the last node and, at random, one more.
pub fn random_graph(seed: u64, dtype: DType, steps: usize) -> (Graph, Vec<Vec<usize>>) {
    let mut random = SplitMix(seed);
    let shapes: [&[usize]; 6] = [&[], &[5], &[3, 4], &[2, 3, 4], &[4, 1], &[0, 3]];
    let first = shapes[random.below(shapes.len())].to_vec();
    let second = if random.below(2) == 0 {
        first.clone()
    } else {
        first
            .iter()
            .skip(random.below(first.len() + 1))
            .copied()
            .collect()
    };
    let mut builder = GraphBuilder::new();
    let mut nodes: Vec<NodeId> = vec![
        builder.parameter(dtype, &first).expect("parameter"),
        builder.parameter(dtype, &second).expect("parameter"),
    ];
    let shape_of = |builder: &GraphBuilder, id: NodeId| {
        builder
            .type_of(id)
            .and_then(|ty| ty.tensor())
            .expect("tensor")
            .shape
            .clone()
    };
    for _ in 0..steps {
        let a = nodes[nodes.len() - 1 - random.below(nodes.len().min(3))];
        let b = nodes[random.below(nodes.len())];
        let made = match random.below(12) {
            0..=2 => builder.unary(random.pick(UNARY), a),
            3..=5 => builder.binary(random.pick(BINARY), a, b),
            6 => {
                let shape = shape_of(&builder, a);
                let mut permutation: Vec<usize> = (0..shape.len()).collect();
                permutation.reverse();
                builder.transpose(a, &permutation)
            }
            7 => {
                let shape = shape_of(&builder, a);
                let count: usize = shape.iter().product();
                builder.reshape(a, &[count])
            }
            8 => {
                let shape = shape_of(&builder, a);
                let axes = (!shape.is_empty()).then(|| vec![shape.len() - 1]);
                let op = random.pick(REDUCE);
                let keep = random.below(2) == 0;
                builder.reduce(op, a, axes.as_deref(), keep, TieBreak::Low)
            }
            9 => {
                let shape = shape_of(&builder, a);
                let mut target = vec![2];
                target.extend(&shape);
                builder.broadcast_to(a, &target)
            }
            10 => {
                let constant = builder.constant(dtype, 1.5).expect("constant");
                builder.binary(random.pick(BINARY), a, constant)
            }
            _ => {
                let predicate = builder.binary(BinaryOp::Less, a, b);
                predicate.and_then(|predicate| builder.select(predicate, a, b))
            }
        };
        if let Ok(id) = made {
            // Keep graphs small: drop nodes whose result grew past a few hundred elements.
            if shape_of(&builder, id).iter().product::<usize>() <= 512 {
                nodes.push(id);
            }
        }
    }
    let mut outputs = vec![*nodes.last().expect("nodes")];
    if random.below(2) == 0 {
        outputs.push(nodes[2.min(nodes.len() - 1)]);
    }
    (
        builder.finish(&outputs).expect("graph"),
        vec![first, second],
    )
}

/// The oracle: every node run on its own through the eager API (select on the host).
pub fn eager(graph: &Graph, inputs: &[&Tensor]) -> Vec<Tensor> {
    let device = device();
    let mut values: Vec<Option<Tensor>> = vec![None; graph.nodes().len()];
    let get =
        |values: &Vec<Option<Tensor>>, id: NodeId| values[id.index()].clone().expect("computed");
    for (index, node) in graph.nodes().iter().enumerate() {
        let ty = node.ty.tensor().expect("tensor graph");
        let value = match &node.op {
            Op::Parameter { index } => inputs[*index].clone(),
            Op::Constant { element } => Tensor::from_bytes(
                &device,
                ty.dtype,
                &ty.shape,
                &element.repeat(ty.n_elements()),
            )
            .unwrap(),
            Op::Unary { op, input } => unary(*op, &get(&values, *input)).unwrap(),
            Op::Binary { op, left, right } => {
                binary(*op, &get(&values, *left), &get(&values, *right)).unwrap()
            }
            Op::AsType { input } => as_type(&get(&values, *input), ty.dtype).unwrap(),
            Op::Broadcast { input, axes } => {
                movement::broadcast(&get(&values, *input), &ty.shape, axes).unwrap()
            }
            Op::Reshape { input } => movement::contiguous(&get(&values, *input))
                .unwrap()
                .reshape(&ty.shape)
                .unwrap(),
            Op::Transpose { input, permutation } => {
                movement::transpose(&get(&values, *input), permutation).unwrap()
            }
            Op::Reduce {
                op,
                input,
                axes,
                keep_axes,
                tie_break,
            } => reduce(
                *op,
                &get(&values, *input),
                &ReduceOptions {
                    axes: Some(axes),
                    keep_axes: *keep_axes,
                    tie_break: *tie_break,
                    ..ReduceOptions::default()
                },
            )
            .unwrap(),
            Op::Select {
                predicate,
                on_true,
                on_false,
            } => {
                let dense = |id: NodeId, dtype: DType| {
                    let value = as_type(&get(&values, id), dtype).unwrap();
                    movement::contiguous(&value.broadcast_to(&ty.shape).unwrap())
                        .unwrap()
                        .to_bytes()
                        .unwrap()
                };
                let p = dense(*predicate, DType::U8);
                let (t, f) = (dense(*on_true, ty.dtype), dense(*on_false, ty.dtype));
                let size = ty.dtype.byte_size().unwrap() as usize;
                let bytes: Vec<u8> = (0..ty.n_elements())
                    .flat_map(|i| {
                        let source = if p[i] != 0 { &t } else { &f };
                        source[i * size..(i + 1) * size].to_vec()
                    })
                    .collect();
                Tensor::from_bytes(&device, ty.dtype, &ty.shape, &bytes).unwrap()
            }
            Op::Slice {
                input,
                starts,
                lengths,
                strides,
            } => {
                let starts: Vec<i64> = starts.iter().map(|&start| start as i64).collect();
                movement::slice(&get(&values, *input), &starts, lengths, strides).unwrap()
            }
            Op::PutSlice {
                input,
                update,
                starts,
            } => {
                let starts: Vec<i64> = starts.iter().map(|&start| start as i64).collect();
                movement::put_slice(&get(&values, *input), &starts, &get(&values, *update)).unwrap()
            }
            // Dynamic starts read back and clamped here, then the static path.
            Op::DynamicSlice {
                input,
                starts,
                lengths,
                strides,
            } => {
                let input = get(&values, *input);
                let starts = host_starts(&values, starts, input.shape(), lengths);
                movement::slice(&input, &starts, lengths, strides).unwrap()
            }
            Op::DynamicPutSlice {
                input,
                update,
                starts,
            } => {
                let (input, update) = (get(&values, *input), get(&values, *update));
                let starts = host_starts(&values, starts, input.shape(), update.shape());
                movement::put_slice(&input, &starts, &update).unwrap()
            }
            other => panic!("the oracle does not run {}", other.name()),
        };
        values[index] = Some(value);
    }
    graph.outputs().iter().map(|&id| get(&values, id)).collect()
}

/// A dynamic slice's starts on the host: node starts read back, each clamped as Nx clamps
/// it into `0..=size - length`.
fn host_starts(
    values: &[Option<Tensor>],
    starts: &[SliceStart],
    shape: &[usize],
    lengths: &[usize],
) -> Vec<i64> {
    starts
        .iter()
        .zip(shape.iter().zip(lengths))
        .map(|(start, (&size, &length))| {
            let value = match *start {
                SliceStart::Static(value) => i128::from(value),
                SliceStart::Node(node) => {
                    slice_graphs::integer_value(values[node.index()].as_ref().expect("computed"))
                }
            };
            value.clamp(0, (size - length) as i128) as i64
        })
        .collect()
}

/// True when two f32 buffers agree: bit for bit (any NaN equals any NaN), or, where
/// `tolerance` is positive (reassociated sums), to that relative error.
pub fn agree(fused: &[f32], eager: &[f32], tolerance: f32) -> bool {
    fused.len() == eager.len()
        && fused.iter().zip(eager).all(|(&a, &b)| {
            (a.is_nan() && b.is_nan())
                || a.to_bits() == b.to_bits()
                || (tolerance > 0.0
                    && (a == b || (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)))
        })
}

pub fn values_of(tensor: &Tensor) -> Vec<f32> {
    as_type(tensor, DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()
}

pub fn random_input(random: &mut SplitMix, dtype: DType, shape: &[usize]) -> Tensor {
    let count: usize = shape.iter().product();
    let specials = [f32::NAN, f32::INFINITY, -0.0, 0.0, 1.0, -2.5];
    let values: Vec<f32> = (0..count)
        .map(|_| {
            if random.below(8) == 0 {
                specials[random.below(specials.len())]
            } else {
                (random.below(2000) as f32 - 1000.0) / 64.0
            }
        })
        .collect();
    let tensor = Tensor::from_slice(&device(), shape, &values).unwrap();
    as_type(&tensor, dtype).unwrap()
}
