//! `reduce` and `window_reduce` with a reducer function: random reducers, shapes, axes,
//! windows and dtypes on the GPU against a host fold (Nx.BinaryBackend's order: the
//! accumulator starts at init, `acc = fun(element, acc)`) evaluated with nxvk-kernels' host
//! references; empty reductions, rank 0, NaN and infinities, chunked long rows, unsupported
//! reducers, the encoding, and null arms.

mod common;

use common::{SplitMix, device};
use nxvk_core::{DType, Error, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, Op, PlanCache, decode, encode};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::types::{binary_types, unary_types};
use nxvk_kernels::{BinaryOp, UnaryOp, WindowOptions, window_output_shape};
use proptest::prelude::*;

/// The reducers the tests draw from (each associative and commutative on the values drawn).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Add,
    Multiply,
    Max,
    Min,
    /// logical_or(a, b) (u8) converted back to the reducer's dtype.
    LogicalOr,
    /// as_type(as_type(a, wide) + as_type(b, wide), dtype): an add through casts.
    WideAdd,
    /// a * b + a + b, i.e. (1 + a)(1 + b) - 1 (integers only: exact with wrapping).
    Affine,
}

const KINDS: [Kind; 7] = [
    Kind::Add,
    Kind::Multiply,
    Kind::Max,
    Kind::Min,
    Kind::LogicalOr,
    Kind::WideAdd,
    Kind::Affine,
];

const DTYPES: [DType; 7] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::S32,
    DType::U8,
    DType::S64,
    DType::U16,
];

/// The reducer graph `kind` over two scalars of `dtype`.
fn reducer(kind: Kind, dtype: DType) -> Graph {
    let mut builder = GraphBuilder::new();
    let a = builder.parameter(dtype, &[]).unwrap();
    let b = builder.parameter(dtype, &[]).unwrap();
    let result = match kind {
        Kind::Add => builder.binary(BinaryOp::Add, a, b).unwrap(),
        Kind::Multiply => builder.binary(BinaryOp::Multiply, a, b).unwrap(),
        Kind::Max => builder.binary(BinaryOp::Max, a, b).unwrap(),
        Kind::Min => builder.binary(BinaryOp::Min, a, b).unwrap(),
        Kind::LogicalOr => {
            let or = builder.binary(BinaryOp::LogicalOr, a, b).unwrap();
            builder.as_type(or, dtype).unwrap()
        }
        Kind::WideAdd => {
            let wide = if dtype.is_float() {
                DType::F64
            } else {
                DType::S64
            };
            let wide_a = builder.as_type(a, wide).unwrap();
            let wide_b = builder.as_type(b, wide).unwrap();
            let sum = builder.binary(BinaryOp::Add, wide_a, wide_b).unwrap();
            builder.as_type(sum, dtype).unwrap()
        }
        Kind::Affine => {
            let product = builder.binary(BinaryOp::Multiply, a, b).unwrap();
            let partial = builder.binary(BinaryOp::Add, product, a).unwrap();
            builder.binary(BinaryOp::Add, partial, b).unwrap()
        }
    };
    builder.finish(&[result]).unwrap()
}

/// Evaluates a scalar graph on the host with the catalog's reference semantics.
fn host_call(graph: &Graph, arguments: &[Value]) -> Value {
    let mut values: Vec<Value> = Vec::with_capacity(graph.nodes().len());
    for node in graph.nodes() {
        let dtype = node.ty.tensor().expect("tensor").dtype;
        let get = |id: nxvk_fusion::NodeId| values[id.index()];
        let dtype_of =
            |id: nxvk_fusion::NodeId| graph.nodes()[id.index()].ty.tensor().unwrap().dtype;
        let value = match &node.op {
            Op::Parameter { index } => arguments[*index],
            Op::Constant { element } => reference::decode(dtype, element, 1).unwrap()[0],
            Op::AsType { input } => reference::round_to(get(*input), dtype),
            Op::Unary { op, input } => {
                let compute = unary_types(*op, dtype_of(*input), &[]).unwrap().compute;
                let argument = reference::round_to(get(*input), compute);
                reference::round_to(reference::unary(*op, compute, argument).unwrap(), dtype)
            }
            Op::Binary { op, left, right } => {
                let compute = binary_types(*op, dtype_of(*left), dtype_of(*right), &[])
                    .unwrap()
                    .compute;
                let a = reference::round_to(get(*left), compute);
                let b = reference::round_to(get(*right), compute);
                reference::round_to(reference::binary(*op, compute, a, b).unwrap(), dtype)
            }
            other => panic!("the test reducers do not use {}", other.name()),
        };
        values.push(value);
    }
    values[graph.outputs()[0].index()]
}

fn same(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// Random elements of `dtype` for `kind`: integers anywhere in their range (wrapping is
/// exact in any order); floats small integers (exact sums), NaN and infinities where the
/// fold's result does not depend on the order, ±1 for products.
fn elements(random: &mut SplitMix, kind: Kind, dtype: DType, count: usize) -> Vec<Value> {
    (0..count)
        .map(|_| {
            if !dtype.is_float() {
                let (min, max) = reference::integer_limits(dtype);
                let span = (max - min) as u128 + 1;
                let offset = if span > u128::from(u64::MAX) {
                    i128::from(random.next() as i64) - min
                } else {
                    (u128::from(random.next()) % span) as i128
                };
                return Value::Int(min + offset);
            }
            let special = matches!(kind, Kind::Max | Kind::Min | Kind::Add | Kind::LogicalOr);
            match random.below(20) {
                0 if special => Value::Float(f64::NAN),
                1 if special && kind != Kind::Add => Value::Float(f64::INFINITY),
                2 if special && kind != Kind::Add => Value::Float(f64::NEG_INFINITY),
                _ if kind == Kind::Multiply => Value::Float(random.pick(&[-1.0, 1.0])),
                _ => Value::Float(random.below(9) as f64 - 4.0),
            }
        })
        .collect()
}

fn tensor_of(dtype: DType, shape: &[usize], values: &[Value]) -> Tensor {
    Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, values)).unwrap()
}

fn values_of(tensor: &Tensor) -> Vec<Value> {
    let bytes = tensor.to_bytes().unwrap();
    reference::decode(tensor.dtype(), &bytes, tensor.n_elements()).unwrap()
}

/// Row-major coordinates of `index` in `shape`.
fn coordinates(mut index: usize, shape: &[usize]) -> Vec<usize> {
    let mut result = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        result[axis] = index % shape[axis];
        index /= shape[axis];
    }
    result
}

fn linear(coordinates: &[usize], shape: &[usize]) -> usize {
    coordinates
        .iter()
        .zip(shape)
        .fold(0, |index, (&coordinate, &size)| index * size + coordinate)
}

/// Nx.BinaryBackend's reduce: per output, acc = init, then acc = fun(x, acc) in row-major
/// order over the reduced axes.
fn host_reduce(
    fun: &Graph,
    input: &[Value],
    shape: &[usize],
    init: Value,
    axes: &[usize],
) -> Vec<Value> {
    let kept: Vec<usize> = (0..shape.len())
        .filter(|axis| !axes.contains(axis))
        .collect();
    let kept_shape: Vec<usize> = kept.iter().map(|&axis| shape[axis]).collect();
    let rows: usize = kept_shape.iter().product();
    let mut results = vec![init; rows];
    for (index, &value) in input.iter().enumerate() {
        let at = coordinates(index, shape);
        let row = linear(
            &kept.iter().map(|&axis| at[axis]).collect::<Vec<_>>(),
            &kept_shape,
        );
        results[row] = host_call(fun, &[value, results[row]]);
    }
    results
}

/// Nx.BinaryBackend's window_reduce: the input padded with init, each window folded from init.
fn host_window(
    fun: &Graph,
    input: &[Value],
    shape: &[usize],
    init: Value,
    window: &[usize],
    options: &WindowOptions,
) -> Vec<Value> {
    let output_shape = window_output_shape(shape, window, options).unwrap();
    let positions: usize = window.iter().product();
    (0..output_shape.iter().product::<usize>())
        .map(|index| {
            let out = coordinates(index, &output_shape);
            (0..positions).fold(init, |acc, position| {
                let offset = coordinates(position, window);
                let mut inside = true;
                let at: Vec<usize> = (0..shape.len())
                    .map(|axis| {
                        let coordinate = (out[axis] * options.strides[axis]
                            + offset[axis] * options.window_dilations[axis])
                            as i64
                            - options.padding[axis].0;
                        inside &= coordinate >= 0 && coordinate < shape[axis] as i64;
                        coordinate.max(0) as usize
                    })
                    .collect();
                let value = if inside {
                    input[linear(&at, shape)]
                } else {
                    init
                };
                host_call(fun, &[value, acc])
            })
        })
        .collect()
}

/// Runs `reduce(input, init, axes, keep_axes, fun)` through a plan.
fn gpu_reduce(
    fun: Graph,
    input: &Tensor,
    init: &Tensor,
    axes: Option<&[usize]>,
    keep_axes: bool,
) -> Result<Tensor, Error> {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(input.dtype(), input.shape()).unwrap();
    let start = builder.parameter(init.dtype(), &[]).unwrap();
    let reduced = builder.reduce_with(x, start, fun, axes, keep_axes)?;
    let graph = builder.finish(&[reduced]).unwrap();
    let cache = PlanCache::new(&device());
    Ok(cache.run(&graph, &[input, init])?.remove(0))
}

fn gpu_window(
    fun: Graph,
    input: &Tensor,
    init: &Tensor,
    window: &[usize],
    options: &WindowOptions,
) -> Result<Tensor, Error> {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(input.dtype(), input.shape()).unwrap();
    let start = builder.parameter(init.dtype(), &[]).unwrap();
    let pooled = builder.window_reduce_with(x, start, fun, window, options.clone())?;
    let graph = builder.finish(&[pooled]).unwrap();
    let cache = PlanCache::new(&device());
    Ok(cache.run(&graph, &[input, init])?.remove(0))
}

fn assert_same(gpu: &[Value], host: &[Value], context: &str) {
    assert_eq!(gpu.len(), host.len(), "{context}");
    for (index, (g, h)) in gpu.iter().zip(host).enumerate() {
        assert!(
            same(*g, *h),
            "{context}: element {index}: gpu {g:?}, host {h:?}"
        );
    }
}

const SHAPES: [&[usize]; 9] = [
    &[],
    &[1],
    &[5],
    &[3, 4],
    &[2, 3, 5],
    &[0, 3],
    &[2, 0],
    &[7, 1, 3],
    &[3, 300],
];

fn draw_kind(random: &mut SplitMix, dtype: DType) -> Kind {
    loop {
        let kind = random.pick(&KINDS);
        if kind != Kind::Affine || !dtype.is_float() {
            return kind;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn reduce_matches_the_host_fold(seed in any::<u64>()) {
        let mut random = SplitMix(seed);
        let dtype = random.pick(&DTYPES);
        let kind = draw_kind(&mut random, dtype);
        let shape = random.pick(&SHAPES);
        let axes: Vec<usize> = (0..shape.len()).filter(|_| random.below(2) == 0).collect();
        let all_axes = random.below(4) == 0;
        let keep_axes = random.below(2) == 0;
        let count: usize = shape.iter().product();
        let input = elements(&mut random, kind, dtype, count);
        let init = elements(&mut random, kind, dtype, 1)[0];
        let axes_used: Vec<usize> = if all_axes { (0..shape.len()).collect() } else { axes.clone() };
        let fun = reducer(kind, dtype);
        let expected = host_reduce(&fun, &input, shape, init, &axes_used);
        let output = gpu_reduce(
            fun,
            &tensor_of(dtype, shape, &input),
            &tensor_of(dtype, &[], &[init]),
            (!all_axes).then_some(&axes[..]),
            keep_axes,
        )
        .unwrap();
        prop_assert_eq!(output.dtype(), dtype);
        let context = format!("{kind:?} {dtype} {shape:?} axes {axes_used:?}");
        assert_same(&values_of(&output), &expected, &context);
    }

    #[test]
    fn window_reduce_matches_the_host_fold(seed in any::<u64>()) {
        let mut random = SplitMix(seed);
        let dtype = random.pick(&DTYPES);
        let kind = draw_kind(&mut random, dtype);
        let rank = 1 + random.below(3);
        let shape: Vec<usize> = (0..rank).map(|_| random.below(6)).collect();
        let window: Vec<usize> = (0..rank).map(|_| 1 + random.below(3)).collect();
        let options = WindowOptions {
            strides: (0..rank).map(|_| 1 + random.below(2)).collect(),
            padding: (0..rank)
                .map(|_| (random.below(4) as i64 - 1, random.below(3) as i64))
                .collect(),
            window_dilations: (0..rank).map(|_| 1 + random.below(2)).collect(),
        };
        prop_assume!(window_output_shape(&shape, &window, &options).is_ok());
        let count: usize = shape.iter().product();
        let input = elements(&mut random, kind, dtype, count);
        let init = elements(&mut random, kind, dtype, 1)[0];
        let fun = reducer(kind, dtype);
        let expected = host_window(&fun, &input, &shape, init, &window, &options);
        let output = gpu_window(
            fun,
            &tensor_of(dtype, &shape, &input),
            &tensor_of(dtype, &[], &[init]),
            &window,
            &options,
        )
        .unwrap();
        let context = format!("{kind:?} {dtype} {shape:?} window {window:?} {options:?}");
        assert_same(&values_of(&output), &expected, &context);
    }
}

/// Long rows (a full reduction and a few rows) take the chunked two-pass path; init is folded
/// once per output, not once per chunk.
#[test]
fn long_rows_fold_init_once() {
    for (shape, axes) in [(vec![10_000], vec![0]), (vec![9_000, 2], vec![0])] {
        for kind in [Kind::Add, Kind::Max, Kind::Affine] {
            let mut random = SplitMix(7);
            let count: usize = shape.iter().product();
            let input = elements(&mut random, kind, DType::S32, count);
            let init = Value::Int(10);
            let fun = reducer(kind, DType::S32);
            let expected = host_reduce(&fun, &input, &shape, init, &axes);
            let output = gpu_reduce(
                fun,
                &tensor_of(DType::S32, &shape, &input),
                &tensor_of(DType::S32, &[], &[init]),
                Some(&axes),
                false,
            )
            .unwrap();
            assert_same(
                &values_of(&output),
                &expected,
                &format!("{kind:?} {shape:?}"),
            );
        }
    }
    // Nx's own example: reduce([1, 2, 3], 10, add) is 16.
    let output = gpu_reduce(
        reducer(Kind::Add, DType::S32),
        &tensor_of(DType::S32, &[3], &[1, 2, 3].map(Value::Int)),
        &tensor_of(DType::S32, &[], &[Value::Int(10)]),
        None,
        false,
    )
    .unwrap();
    assert_eq!(output.to_vec::<i32>().unwrap(), [16]);
}

/// Input and init of other dtypes are converted to the reducer's dtype (Nx merges them
/// before tracing the function), and an empty reduction gives init.
#[test]
fn operands_are_converted_and_empty_reductions_give_init() {
    let input = tensor_of(DType::U8, &[2, 3], &[1, 2, 3, 4, 5, 6].map(Value::Int));
    let init = tensor_of(DType::F64, &[], &[Value::Float(0.5)]);
    let output = gpu_reduce(
        reducer(Kind::Add, DType::F32),
        &input,
        &init,
        Some(&[1]),
        true,
    )
    .unwrap();
    assert_eq!(output.dtype(), DType::F32);
    assert_eq!(output.shape(), [2, 1]);
    let expected = host_reduce(
        &reducer(Kind::Add, DType::F32),
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0].map(Value::Float),
        &[2, 3],
        Value::Float(0.5),
        &[1],
    );
    assert_same(&values_of(&output), &expected, "converted");
    let empty = tensor_of(DType::F32, &[4, 0], &[]);
    let init = tensor_of(DType::F32, &[], &[Value::Float(-3.0)]);
    let output = gpu_reduce(
        reducer(Kind::Max, DType::F32),
        &empty,
        &init,
        Some(&[1]),
        false,
    )
    .unwrap();
    assert_same(&values_of(&output), &[Value::Float(-3.0); 4], "empty");
}

/// Null arms: the comparison fails for the wrong reducer, and for init folded twice.
#[test]
fn the_check_can_fail() {
    let mut random = SplitMix(3);
    let input = elements(&mut random, Kind::Add, DType::S32, 12);
    let init = Value::Int(5);
    let output = gpu_reduce(
        reducer(Kind::Max, DType::S32),
        &tensor_of(DType::S32, &[3, 4], &input),
        &tensor_of(DType::S32, &[], &[init]),
        Some(&[1]),
        false,
    )
    .unwrap();
    let gpu = values_of(&output);
    let wrong = host_reduce(&reducer(Kind::Min, DType::S32), &input, &[3, 4], init, &[1]);
    assert!(gpu.iter().zip(&wrong).any(|(g, w)| !same(*g, *w)));
    let add = reducer(Kind::Add, DType::S32);
    let once = host_reduce(&add, &input, &[3, 4], init, &[1]);
    let twice: Vec<Value> = once
        .iter()
        .map(|&value| host_call(&add, &[value, init]))
        .collect();
    assert!(once.iter().zip(&twice).all(|(a, b)| !same(*a, *b)));
}

/// A reducer the GPU fold cannot compute is an `Unsupported` error naming the op; a
/// reducer of the wrong signature is refused by the builder.
#[test]
fn unsupported_and_ill_typed_reducers_are_errors() {
    let mut inner = GraphBuilder::new();
    let a = inner.parameter(DType::F32, &[]).unwrap();
    let b = inner.parameter(DType::F32, &[]).unwrap();
    let literal = inner.literal(DType::F32, &[], &2f32.to_le_bytes()).unwrap();
    let scaled = inner.binary(BinaryOp::Multiply, a, literal).unwrap();
    let sum = inner.binary(BinaryOp::Add, scaled, b).unwrap();
    let with_literal = inner.finish(&[sum]).unwrap();
    let input = tensor_of(DType::F32, &[4], &[Value::Float(1.0); 4]);
    let init = tensor_of(DType::F32, &[], &[Value::Float(0.0)]);
    let error = gpu_reduce(with_literal, &input, &init, None, false).unwrap_err();
    assert!(
        matches!(error, Error::Unsupported { op: "reduce", .. }),
        "{error}"
    );

    let mut inner = GraphBuilder::new();
    let a = inner.parameter(DType::F32, &[]).unwrap();
    let _ = inner.parameter(DType::F32, &[]).unwrap();
    let test = inner.unary(UnaryOp::IsNan, a).unwrap();
    let ill_typed = inner.finish(&[test]).unwrap();
    let error = gpu_reduce(ill_typed, &input, &init, None, false).unwrap_err();
    assert!(
        matches!(error, Error::BadOperands { op: "reduce", .. }),
        "{error}"
    );
}

/// Both nodes round-trip through the encoding; damaged encodings are errors, never panics.
#[test]
fn reducer_nodes_round_trip() {
    // Both nodes, the reduction's function being `kind`.
    let build = |kind: Kind| {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::S16, &[4, 6]).unwrap();
        let init = builder.constant(DType::S32, 0.0).unwrap();
        let reduced = builder
            .reduce_with(x, init, reducer(kind, DType::S32), Some(&[1]), true)
            .unwrap();
        let options = WindowOptions {
            strides: vec![1, 2],
            padding: vec![(-1, 1), (0, 2)],
            window_dilations: vec![2, 1],
        };
        let pooled = builder
            .window_reduce_with(x, init, reducer(Kind::Max, DType::S32), &[2, 3], options)
            .unwrap();
        builder.finish(&[reduced, pooled]).unwrap()
    };
    let graph = build(Kind::Affine);
    let bytes = encode(&graph);
    let decoded = decode(&bytes).unwrap();
    assert_eq!(decoded, graph);
    assert_eq!(encode(&decoded), bytes);
    let mut random = SplitMix(11);
    for _ in 0..2000 {
        let mut damaged = bytes.clone();
        let position = random.below(damaged.len());
        damaged[position] = random.next() as u8;
        let _ = decode(&damaged);
        let _ = decode(&bytes[..random.below(bytes.len())]);
    }
    // Null arm: a different reducer encodes differently.
    assert_ne!(encode(&build(Kind::Add)), bytes);
}

/// Each call adds exactly one node whatever its operands' dtypes (the Elixir encoder numbers
/// nodes one per call), and the decoded graph runs to the host fold's result.
#[test]
fn one_node_per_call_and_decoded_graphs_run() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[2, 2]).unwrap();
    let start = builder.parameter(DType::S32, &[]).unwrap();
    let add = reducer(Kind::Add, DType::F32);
    let reduced = builder
        .reduce_with(x, start, add.clone(), None, false)
        .unwrap();
    assert_eq!(reduced.index(), 2);
    let graph = builder.finish(&[reduced]).unwrap();
    assert_eq!(graph.nodes().len(), 3);
    let decoded = decode(&encode(&graph)).unwrap();
    let elements = [1.0, 2.0, 3.0, 4.0].map(Value::Float);
    let input = tensor_of(DType::F32, &[2, 2], &elements);
    let init = tensor_of(DType::S32, &[], &[Value::Int(7)]);
    let output = PlanCache::new(&device())
        .run(&decoded, &[&input, &init])
        .unwrap();
    let expected = host_reduce(&add, &elements, &[2, 2], Value::Float(7.0), &[0, 1]);
    assert_same(&values_of(&output[0]), &expected, "decoded");
}

/// The reducer's kernel is generated when the plan is made: a second run of the cached plan
/// generates nothing.
#[test]
fn a_cached_plan_generates_no_code() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::S32, &[6, 5]).unwrap();
    let start = builder.constant(DType::S32, 1.0).unwrap();
    let options = WindowOptions {
        strides: vec![2, 1],
        padding: vec![(1, 0), (0, 1)],
        window_dilations: vec![1, 2],
    };
    let pooled = builder
        .window_reduce_with(x, start, reducer(Kind::Min, DType::S32), &[2, 2], options)
        .unwrap();
    let reduced = builder
        .reduce_with(
            pooled,
            start,
            reducer(Kind::Add, DType::S32),
            Some(&[0]),
            false,
        )
        .unwrap();
    let graph = builder.finish(&[reduced]).unwrap();
    let cache = PlanCache::new(&device());
    let input = tensor_of(
        DType::S32,
        &[6, 5],
        &(0..30).map(Value::Int).collect::<Vec<_>>(),
    );
    let first = cache.run(&graph, &[&input]).unwrap().remove(0);
    let after_first = cache.counters();
    assert!(after_first.codegens >= 2, "{after_first:?}");
    let second = cache.run(&graph, &[&input]).unwrap().remove(0);
    let after_second = cache.counters();
    assert_eq!(after_second.codegens, after_first.codegens);
    assert_eq!(after_second.cache_hits, after_first.cache_hits + 1);
    assert_same(&values_of(&second), &values_of(&first), "second run");
}
