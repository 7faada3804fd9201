//! Gradients of slices and put_slices whose starts are nodes, against central finite
//! differences in f64 on the device: starts of several integer types inside, before and past
//! the valid range (u64 above 2^63 included), strided windows whose start lies past the end
//! (the window is clamped with the slice's lengths, so the gradient must land there too),
//! empty windows, and starts computed from a parameter (an argmax, which gets no gradient).

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;

use finite_differences::{deterministic_values, finite_difference_failure};
use nxvk_core::DType;
use nxvk_fusion::{GraphBuilder, NodeId, SliceStart};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak};

type Loss = Box<dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId>;

/// A start known to the graph as a rank-0 constant of `dtype` (a node, not a static start).
#[derive(Debug, Clone, Copy)]
struct Start(DType, i128);

fn start_node(builder: &mut GraphBuilder, start: Start) -> SliceStart {
    let Start(dtype, value) = start;
    let bytes = reference::encode(dtype, &[Value::Int(value)]);
    SliceStart::Node(builder.constant_bytes(dtype, &[], &bytes).unwrap())
}

/// `v * v`, so that each position's gradient differs (`2 v`).
fn square(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    builder.binary(BinaryOp::Multiply, value, value).unwrap()
}

/// `square(slice(x, starts, lengths, strides))`.
fn sliced(starts: [Start; 2], lengths: [usize; 2], strides: [usize; 2]) -> Loss {
    Box::new(move |builder, parameters| {
        let starts = starts.map(|start| start_node(builder, start));
        let window = builder
            .dynamic_slice(parameters[0], &starts, &lengths, &strides)
            .unwrap();
        square(builder, window)
    })
}

/// `square(put_slice(x, starts, update))`.
fn put(starts: [Start; 2]) -> Loss {
    Box::new(move |builder, parameters| {
        let starts = starts.map(|start| start_node(builder, start));
        let written = builder
            .dynamic_put_slice(parameters[0], &starts, parameters[1])
            .unwrap();
        square(builder, written)
    })
}

fn check(shapes: &[&[usize]], loss: &Loss) {
    let values = deterministic_values(shapes);
    if let Some(failure) = finite_difference_failure(shapes, loss, loss, &values) {
        panic!("{failure}");
    }
}

const HUGE: i128 = (1 << 63) + 5;

#[test]
fn dynamic_slice_gradients_match_finite_differences() {
    let cases: [([Start; 2], [usize; 2], [usize; 2]); 5] = [
        // Inside the range.
        ([Start(DType::S32, 1), Start(DType::U8, 1)], [3, 2], [1, 1]),
        // Negative and past the end, unit strides.
        ([Start(DType::S8, -3), Start(DType::S64, 9)], [3, 2], [1, 1]),
        // Strided, starts past the end: clamped with the lengths (3 and 1), not with the
        // dilated gradient's shorter extent.
        (
            [Start(DType::U64, HUGE), Start(DType::S16, 2)],
            [2, 3],
            [2, 2],
        ),
        (
            [Start(DType::U32, 4), Start(DType::S32, -1)],
            [2, 4],
            [3, 3],
        ),
        // An empty window: no gradient anywhere.
        ([Start(DType::S32, 2), Start(DType::U16, 1)], [0, 2], [1, 2]),
    ];
    for (starts, lengths, strides) in cases {
        check(&[&[5, 4]], &sliced(starts, lengths, strides));
    }
}

#[test]
fn dynamic_put_slice_gradients_match_finite_differences() {
    for starts in [
        [Start(DType::S32, 1), Start(DType::S32, 2)],
        [Start(DType::U8, 200), Start(DType::S64, -1)],
        [Start(DType::U64, HUGE), Start(DType::S8, 1)],
    ] {
        check(&[&[4, 5], &[2, 3]], &put(starts));
    }
}

/// A chain: the window read back out of a put_slice at other starts, so both rules' adjoints
/// meet (the update's gradient is the part of the window it fills).
#[test]
fn chained_dynamic_put_slice_and_slice_gradients_match_finite_differences() {
    let loss: Loss = Box::new(|builder, parameters| {
        let at =
            [Start(DType::S32, 2), Start(DType::U8, 0)].map(|start| start_node(builder, start));
        let written = builder
            .dynamic_put_slice(parameters[0], &at, parameters[1])
            .unwrap();
        let from =
            [Start(DType::S8, 1), Start(DType::S64, 7)].map(|start| start_node(builder, start));
        let window = builder
            .dynamic_slice(written, &from, &[3, 3], &[1, 2])
            .unwrap();
        square(builder, window)
    });
    check(&[&[5, 5], &[2, 3]], &loss);
}

/// The window's row start is `argmax(y) - 1`, computed from a parameter: x gets the window's
/// gradient at the clamped position, y nothing (its argmax does not move under the finite
/// differences' steps, so they agree).
#[test]
fn starts_computed_from_a_parameter_get_no_gradient() {
    let loss: Loss = Box::new(|builder, parameters| {
        let position = builder
            .reduce(ReduceOp::ArgMax, parameters[1], None, false, TieBreak::Low)
            .unwrap();
        let one = builder.constant(DType::S64, 1.0).unwrap();
        let start = builder.binary(BinaryOp::Subtract, position, one).unwrap();
        let starts = [SliceStart::Node(start), SliceStart::Static(1)];
        let window = builder
            .dynamic_slice(parameters[0], &starts, &[2, 3], &[1, 1])
            .unwrap();
        square(builder, window)
    });
    check(&[&[5, 4], &[5]], &loss);
}

/// Null arms: gradients taken at other starts than the forward pass's are rejected, for a
/// unit-stride and a strided window and for put_slice.
#[test]
fn gradients_at_other_starts_are_rejected() {
    let shapes: &[&[usize]] = &[&[5, 4]];
    let values = deterministic_values(shapes);
    let pairs = [
        (
            sliced([Start(DType::S32, 1), Start(DType::S32, 0)], [3, 2], [1, 1]),
            sliced([Start(DType::S32, 2), Start(DType::S32, 0)], [3, 2], [1, 1]),
        ),
        (
            sliced(
                [Start(DType::U64, HUGE), Start(DType::S32, 0)],
                [2, 3],
                [2, 2],
            ),
            sliced([Start(DType::U64, 2), Start(DType::S32, 0)], [2, 3], [2, 2]),
        ),
    ];
    for (forward, gradient) in &pairs {
        assert!(finite_difference_failure(shapes, forward, gradient, &values).is_some());
    }
    let shapes: &[&[usize]] = &[&[4, 5], &[2, 3]];
    let values = deterministic_values(shapes);
    let forward = put([Start(DType::S32, 0), Start(DType::S32, 0)]);
    let gradient = put([Start(DType::S32, 1), Start(DType::S32, 0)]);
    assert!(finite_difference_failure(shapes, &forward, &gradient, &values).is_some());
}
