//! The binary graph encoding: random graphs round-trip, every structural kind round-trips,
//! and arbitrary or damaged bytes give errors, never panics.

mod common;

use common::random_graph;
use common::slice_graphs::random_slice_graph;
use nxvk_core::DType;
use nxvk_fusion::{
    CondClause, DotAxes, Graph, GraphBuilder, IndexedUpdate, MAGIC, NodeId, SliceStart, VERSION,
    decode, encode,
};
use nxvk_kernels::sort::Direction;
use nxvk_kernels::{
    BinaryOp, ConvOptions, ReduceOp, ScanOp, ScatterSelect, TieBreak, UnaryOp, WindowOp,
    WindowOptions,
};
use proptest::prelude::*;

/// A graph using every structural kind once (fun, cond, while, block, elem, metadata, dot,
/// literal, slice, squeeze, clip).
fn structural_graph() -> Graph {
    let scalar_graph = |op: BinaryOp| {
        let mut inner = GraphBuilder::new();
        let x = inner.parameter(DType::F32, &[]).unwrap();
        let one = inner.constant(DType::F32, 1.0).unwrap();
        let y = inner.binary(op, x, one).unwrap();
        inner.finish(&[y]).unwrap()
    };
    let predicate = || {
        let mut inner = GraphBuilder::new();
        let x = inner.parameter(DType::F32, &[]).unwrap();
        let limit = inner.constant(DType::F32, 10.0).unwrap();
        let less = inner.binary(BinaryOp::Less, x, limit).unwrap();
        inner.finish(&[less]).unwrap()
    };
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[]).unwrap();
    let m = builder.parameter(DType::F32, &[2, 3]).unwrap();
    let literal = builder
        .literal(DType::S32, &[3], &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0])
        .unwrap();
    let as_float = builder.as_type(literal, DType::F32).unwrap();
    let dot = builder.dot(m, as_float, DotAxes::matrix_product()).unwrap();
    let sliced = builder.slice(m, &[0, 1], &[1, 2], &[1, 2]).unwrap();
    let squeezed = builder.squeeze(sliced, &[0]).unwrap();
    let low = builder.constant(DType::F32, -1.0).unwrap();
    let high = builder.constant(DType::F32, 1.0).unwrap();
    let clipped = builder.clip(squeezed, low, high).unwrap();
    let fun = builder.fun(scalar_graph(BinaryOp::Add)).unwrap();
    let looped = builder
        .while_loop(&[x], predicate(), scalar_graph(BinaryOp::Add))
        .unwrap();
    let state = builder.elem(looped, 0).unwrap();
    let cond = builder
        .cond(
            &[state],
            vec![CondClause {
                predicate: predicate().into(),
                body: scalar_graph(BinaryOp::Multiply).into(),
            }],
            scalar_graph(BinaryOp::Subtract),
        )
        .unwrap();
    let chosen = builder.elem(cond, 0).unwrap();
    let block = builder
        .block("logsumexp", &[chosen], scalar_graph(BinaryOp::Max))
        .unwrap();
    let from_block = builder.elem(block, 0).unwrap();
    let labelled = builder.metadata(from_block, "stop_grad").unwrap();
    let argmax = builder
        .reduce(ReduceOp::ArgMax, m, Some(&[1]), true, TieBreak::High)
        .unwrap();
    let _ = fun;
    builder.finish(&[dot, clipped, labelled, argmax]).unwrap()
}

#[test]
fn every_structural_kind_round_trips() {
    let graph = structural_graph();
    let bytes = encode(&graph);
    assert_eq!(&bytes[..8], MAGIC);
    let decoded = decode(&bytes).expect("decodes");
    assert_eq!(decoded, graph);
    assert_eq!(encode(&decoded), bytes);
}

/// conv (every option set, negative padding, permutations) and reverse round-trip, and a
/// changed padding encodes differently.
#[test]
fn conv_and_reverse_round_trip() {
    let build = |low_padding: i64| {
        let mut builder = GraphBuilder::new();
        let input = builder.parameter(DType::F32, &[2, 6, 5, 4]).unwrap();
        let kernel = builder.parameter(DType::F32, &[3, 4, 2, 2]).unwrap();
        let options = ConvOptions {
            strides: vec![2, 1],
            padding: vec![(low_padding, 1), (0, 2)],
            input_dilation: vec![1, 2],
            kernel_dilation: vec![1, 1],
            feature_group_size: 1,
            batch_group_size: 1,
            input_permutation: Some(vec![0, 3, 2, 1]),
            kernel_permutation: None,
            output_permutation: Some(vec![0, 1, 3, 2]),
        };
        let output = builder.conv(input, kernel, options).unwrap();
        let reversed = builder.reverse(output, &[1, 3]).unwrap();
        builder.finish(&[reversed]).unwrap()
    };
    let graph = build(-1);
    let bytes = encode(&graph);
    assert_eq!(decode(&bytes).expect("decodes"), graph);
    assert_ne!(encode(&build(0)), bytes);
}

/// Null arm of the round trip: a graph differing in one op encodes differently, and a
/// damaged byte in an op name is rejected (so equality above is a real check).
#[test]
fn a_different_graph_is_told_apart() {
    let build = |op: UnaryOp| {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[4]).unwrap();
        let y = builder.unary(op, x).unwrap();
        builder.finish(&[y]).unwrap()
    };
    let (exp, log) = (build(UnaryOp::Exp), build(UnaryOp::Log));
    assert_ne!(exp, log);
    assert_ne!(encode(&exp), encode(&log));
    assert_ne!(decode(&encode(&log)).unwrap(), exp);
    let mut damaged = encode(&exp);
    let name = damaged
        .windows(3)
        .position(|window| window == b"exp")
        .unwrap();
    damaged[name] = b'q';
    assert!(decode(&damaged).is_err());
}

#[test]
fn wrong_magic_version_and_trailing_bytes_are_errors() {
    let bytes = encode(&structural_graph());
    let mut wrong_magic = bytes.clone();
    wrong_magic[0] = b'X';
    assert!(decode(&wrong_magic).is_err());
    let mut wrong_version = bytes.clone();
    wrong_version[8] = 99;
    let message = decode(&wrong_version).unwrap_err().to_string();
    assert!(message.contains("version 99"), "{message}");
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(decode(&trailing).is_err());
    assert!(decode(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn operands_must_come_before_their_users() {
    let mut bytes = MAGIC.to_vec();
    bytes.extend(1u32.to_le_bytes());
    bytes.extend(1u32.to_le_bytes()); // one node
    bytes.push(3); // unary
    bytes.extend(3u32.to_le_bytes());
    bytes.extend(b"exp");
    bytes.extend(0u32.to_le_bytes()); // refers to itself
    bytes.extend(0u32.to_le_bytes()); // no outputs
    let message = decode(&bytes).unwrap_err().to_string();
    assert!(message.contains("not a node of this graph"), "{message}");
}

/// A graph using every data-movement, indexing, scan, window, creation and sort node once
/// (tags 23-36); `variant` changes one option of each, so variants must encode apart.
fn movement_graph(variant: bool) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let zero = builder.constant(DType::F32, 0.0).unwrap();
    let config = [(1, -1, usize::from(variant)), (0, 2, 0)];
    let padded = builder.pad(x, zero, &config).unwrap();
    let joined = builder.concatenate(&[x, x], usize::from(variant)).unwrap();
    let patch = builder.slice(x, &[0, 0], &[2, 2], &[1, 1]).unwrap();
    let written = builder.put_slice(x, &[1, 7], patch).unwrap();
    let rows: Vec<u8> = [0i32, 1, 3, 2]
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    let at = builder.literal(DType::S32, &[2, 2], &rows).unwrap();
    let gathered = builder.gather(x, at, None).unwrap();
    let column = builder.reshape(gathered, &[2, 1]).unwrap();
    let column = builder.as_type(column, DType::S32).unwrap();
    let taken = builder.take(x, column, 1).unwrap();
    let along = builder.take_along_axis(x, column, 0).unwrap();
    let updates = builder
        .constant_bytes(DType::F32, &[2], &1f32.to_le_bytes())
        .unwrap();
    let update = if variant {
        IndexedUpdate::Put
    } else {
        IndexedUpdate::Add
    };
    let scattered = builder.indexed(update, x, at, updates, None).unwrap();
    let scanned = builder.cumulative(ScanOp::Product, x, 1, variant).unwrap();
    let options = WindowOptions {
        strides: vec![1, 2],
        padding: vec![(-1, 1), (0, 0)],
        window_dilations: vec![],
    };
    let pooled = builder
        .window(WindowOp::Max, x, &[2, 2], options.clone())
        .unwrap();
    let spread = builder
        .window_scatter(ScatterSelect::Min, x, pooled, zero, &[2, 2], options)
        .unwrap();
    let positions = builder
        .iota(DType::S64, &[4, 3], variant.then_some(1))
        .unwrap();
    let direction = if variant {
        Direction::Descending
    } else {
        Direction::Ascending
    };
    let sorted = builder.sort(x, 0, direction, None).unwrap();
    let order = builder.sort(x, 1, direction, Some(DType::U16)).unwrap();
    let outputs: [NodeId; 14] = [
        padded, joined, written, gathered, taken, along, scattered, scanned, pooled, spread,
        positions, sorted, order, patch,
    ];
    builder.finish(&outputs).unwrap()
}

#[test]
fn movement_indexing_scan_window_and_sort_nodes_round_trip() {
    for variant in [false, true] {
        let graph = movement_graph(variant);
        let bytes = encode(&graph);
        assert_eq!(decode(&bytes).expect("decodes"), graph);
        assert_eq!(encode(&decode(&bytes).unwrap()), bytes);
    }
    // Null arm: a changed option is a different encoding and a different graph.
    let (plain, changed) = (movement_graph(false), movement_graph(true));
    assert_ne!(encode(&plain), encode(&changed));
    assert_ne!(decode(&encode(&changed)).unwrap(), plain);
}

/// Nx's clamping of put_slice's starts happens in the builder, so a decoded graph holds the
/// clamped starts; shapes a kernel would reject are decoder errors, not panics.
#[test]
fn movement_nodes_reject_bad_operands() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let y = builder.parameter(DType::F64, &[4, 3]).unwrap();
    let float_indices = builder.parameter(DType::F32, &[2, 1]).unwrap();
    assert!(builder.concatenate(&[x, y], 0).is_err(), "mixed dtypes");
    assert!(builder.concatenate(&[], 0).is_err(), "nothing to join");
    assert!(
        builder.gather(x, float_indices, None).is_err(),
        "float indices"
    );
    assert!(builder.put_slice(x, &[0, 0], y).is_err(), "dtype mismatch");
    let zero = builder.constant(DType::F32, 0.0).unwrap();
    assert!(
        builder.pad(x, zero, &[(-3, -3, 0), (0, 0, 0)]).is_err(),
        "negative size"
    );
    assert!(
        builder
            .window(WindowOp::Sum, x, &[5, 1], WindowOptions::default())
            .is_err(),
        "window larger than the axis"
    );
    assert!(
        builder.cumulative(ScanOp::Sum, x, 2, false).is_err(),
        "no axis 2"
    );
    assert!(
        builder
            .sort(x, 0, Direction::Ascending, Some(DType::F32))
            .is_err()
    );
    assert!(builder.iota(DType::F32, &[2], Some(1)).is_err());
    let rows = builder.parameter(DType::S32, &[2, 2]).unwrap();
    let updates = builder.parameter(DType::F32, &[2]).unwrap();
    let add = IndexedUpdate::Add;
    assert!(
        builder
            .indexed(add, x, rows, updates, Some(&[1, 0]))
            .is_err(),
        "axes not increasing"
    );
    assert!(
        builder.indexed(add, x, rows, updates, Some(&[0])).is_err(),
        "too few axes"
    );
    assert!(
        builder.indexed(add, x, rows, x, None).is_err(),
        "updates of the wrong shape"
    );
    assert!(builder.indexed(add, x, rows, updates, None).is_ok());
    let written = builder.put_slice(x, &[9, -4], x).unwrap();
    let graph = builder.finish(&[written]).unwrap();
    assert!(matches!(
        &graph.node(written).op,
        nxvk_fusion::Op::PutSlice { starts, .. } if starts == &[0, 0]
    ));
}

/// A graph with both dynamic nodes (tags 43 and 44): starts static, a u64 parameter and an
/// argmax computed in the graph; `variant` changes one static start and one length.
fn dynamic_slice_graph(variant: bool) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[5, 4]).unwrap();
    let row = builder.parameter(DType::U64, &[]).unwrap();
    let position = builder
        .reduce(ReduceOp::ArgMax, x, None, false, TieBreak::Low)
        .unwrap();
    let starts = [
        SliceStart::Node(row),
        SliceStart::Static(i64::from(variant)),
    ];
    let length = if variant { 3 } else { 2 };
    let sliced = builder
        .dynamic_slice(x, &starts, &[length, 2], &[2, 1])
        .unwrap();
    let patch = builder.slice(x, &[0, 0], &[2, 2], &[1, 1]).unwrap();
    let starts = [SliceStart::Static(-3), SliceStart::Node(position)];
    let written = builder.dynamic_put_slice(x, &starts, patch).unwrap();
    builder.finish(&[sliced, written]).unwrap()
}

#[test]
fn dynamic_slice_nodes_round_trip() {
    for variant in [false, true] {
        let graph = dynamic_slice_graph(variant);
        assert!(
            graph
                .nodes()
                .iter()
                .any(|node| matches!(node.op, nxvk_fusion::Op::DynamicSlice { .. }))
        );
        assert!(
            graph
                .nodes()
                .iter()
                .any(|node| matches!(node.op, nxvk_fusion::Op::DynamicPutSlice { .. }))
        );
        let bytes = encode(&graph);
        assert_eq!(decode(&bytes).expect("decodes"), graph);
        assert_eq!(encode(&decode(&bytes).unwrap()), bytes);
    }
    // Null arm: a changed start or length is a different encoding and a different graph.
    let (plain, changed) = (dynamic_slice_graph(false), dynamic_slice_graph(true));
    assert_ne!(encode(&plain), encode(&changed));
    assert_ne!(decode(&encode(&changed)).unwrap(), plain);
}

/// Version 1 graphs (no tags 43 and 44) still decode; a version 1 graph with tag 43 is an
/// error naming the version it needs.
#[test]
fn version_one_graphs_decode_without_dynamic_slices() {
    assert_eq!(VERSION, 2);
    let graph = movement_graph(false);
    let mut old = encode(&graph);
    old[8..12].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(decode(&old).expect("version 1 decodes"), graph);
    let mut dynamic = encode(&dynamic_slice_graph(false));
    dynamic[8..12].copy_from_slice(&1u32.to_le_bytes());
    let message = decode(&dynamic).unwrap_err().to_string();
    assert!(message.contains("needs format version 2"), "{message}");
}

/// Bad start kinds and start nodes that are not scalar integers are decoder errors.
#[test]
fn bad_dynamic_slice_fields_are_errors() {
    let mut bytes = encode(&dynamic_slice_graph(false));
    let tag = bytes.iter().position(|&byte| byte == 43).unwrap();
    // The first start's kind byte follows the tag, the input id and the starts' count.
    let kind = tag + 1 + 4 + 4;
    assert_eq!(bytes[kind], 1);
    bytes[kind] = 2;
    let message = decode(&bytes).unwrap_err().to_string();
    assert!(message.contains("start kind 2"), "{message}");
    // The row start pointing at the f32 input instead of the u64 parameter.
    let mut bytes = encode(&dynamic_slice_graph(false));
    bytes[kind + 1..kind + 5].copy_from_slice(&0u32.to_le_bytes());
    let message = decode(&bytes).unwrap_err().to_string();
    assert!(message.contains("scalar integer"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_dynamic_slice_graphs_round_trip(seed in any::<u64>()) {
        let graph = random_slice_graph(seed);
        let bytes = encode(&graph);
        let decoded = decode(&bytes).expect("decodes");
        prop_assert_eq!(&decoded, &graph);
        prop_assert_eq!(encode(&decoded), bytes);
    }

    #[test]
    fn damaged_dynamic_slice_encodings_never_panic(seed in any::<u64>(), position in any::<usize>(), value in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = encode(&random_slice_graph(seed));
        let position = position % bytes.len();
        bytes[position] = value;
        let _ = decode(&bytes);
        let _ = decode(&bytes[..cut % bytes.len()]);
    }

    /// Arbitrary fields after a dynamic-slice tag, over a valid f32 input and s32 start.
    #[test]
    fn arbitrary_dynamic_slice_fields_never_panic(
        tag in 43u8..=44,
        fields in proptest::collection::vec(any::<u8>(), 0..96),
    ) {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(VERSION.to_le_bytes());
        bytes.extend(3u32.to_le_bytes());
        for (dtype, shape) in [("f32", &[4u64, 3][..]), ("s32", &[][..])] {
            bytes.push(0);
            bytes.extend((dtype.len() as u32).to_le_bytes());
            bytes.extend(dtype.as_bytes());
            bytes.extend((shape.len() as u32).to_le_bytes());
            shape.iter().for_each(|size| bytes.extend(size.to_le_bytes()));
        }
        bytes.push(tag);
        bytes.extend(&fields);
        let _ = decode(&bytes);
    }

    #[test]
    fn random_graphs_round_trip(seed in any::<u64>(), steps in 0usize..24) {
        for dtype in [DType::F32, DType::S32] {
            let (graph, _) = random_graph(seed, dtype, steps);
            let bytes = encode(&graph);
            let decoded = decode(&bytes).expect("decodes");
            prop_assert_eq!(&decoded, &graph);
            prop_assert_eq!(encode(&decoded), bytes);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode(&bytes);
        let mut prefixed = MAGIC.to_vec();
        prefixed.extend(1u32.to_le_bytes());
        prefixed.extend(&bytes);
        let _ = decode(&prefixed);
    }

    #[test]
    fn damaged_encodings_never_panic(seed in any::<u64>(), position in any::<usize>(), value in any::<u8>(), cut in any::<usize>()) {
        let mut bytes = encode(&structural_graph());
        bytes.extend(encode(&movement_graph(seed % 2 == 0)));
        bytes.extend(encode(&dynamic_slice_graph(seed % 3 == 0)));
        let (graph, _) = random_graph(seed, DType::F32, 12);
        bytes.extend(encode(&graph));
        let position = position % bytes.len();
        bytes[position] = value;
        let _ = decode(&bytes);
        let _ = decode(&bytes[..cut % bytes.len()]);
    }
}
