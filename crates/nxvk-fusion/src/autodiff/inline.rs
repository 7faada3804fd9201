//! Inlining a nested graph into a builder: its nodes are appended with its parameters replaced
//! by the given arguments, so the copy fuses with the nodes around it.
//!
//! The gradients of `block`, `cond` and `while` are written as graphs built from their nested
//! graphs (a block's default inlined where its gradient is needed, a branch body inlined into
//! its vector-Jacobian product, a loop body into the loops that replay it). A node of a
//! checked graph keeps its type when its operands are replaced by nodes of the same types, so
//! nodes are copied without re-inferring types; the arguments are checked once.

use crate::builder::GraphBuilder;
use crate::graph::{Graph, NodeId, Op, SliceStart, TensorType};
use nxvk_core::{Error, Result};

/// Appends `graph`'s nodes to `builder` over `arguments` (one per parameter, of the
/// parameter's type) and returns the nodes standing for `graph`'s outputs.
pub(super) fn inline(
    builder: &mut GraphBuilder,
    graph: &Graph,
    arguments: &[NodeId],
) -> Result<Vec<NodeId>> {
    let argument_types = arguments
        .iter()
        .map(|&argument| builder.tensor("grad", argument))
        .collect::<Result<Vec<TensorType>>>()?;
    if argument_types != graph.parameters() {
        return Err(Error::BadOperands {
            op: "grad",
            shapes: argument_types.iter().map(|ty| ty.shape.clone()).collect(),
            dtypes: argument_types.iter().map(|ty| ty.dtype).collect(),
            detail: format!(
                "inlining a nested graph that takes {:?}",
                graph.parameters()
            ),
        });
    }
    let mut copies: Vec<NodeId> = Vec::with_capacity(graph.nodes().len());
    for node in graph.nodes() {
        let copy = match node.op {
            Op::Parameter { index } => arguments[index],
            _ => {
                let mut op = node.op.clone();
                let operands = op.operands();
                let rewritable = operands_mut(&mut op);
                // The two lists are written apart (shared and mutable access); a node whose
                // lists disagree is refused rather than copied with wrong operands.
                if rewritable.len() != operands.len()
                    || rewritable.iter().zip(&operands).any(|(a, b)| **a != *b)
                {
                    return Err(Error::Unsupported {
                        op: node.op.name(),
                        dtype: node.ty.tensor().map_or(nxvk_core::DType::F32, |ty| ty.dtype),
                        detail: "grad: autodiff/inline.rs lists this op's operands differently from Op::operands".into(),
                    });
                }
                for operand in rewritable {
                    *operand = copies[operand.index()];
                }
                builder.push(op, node.ty.clone())?
            }
        };
        copies.push(copy);
    }
    Ok(graph
        .outputs()
        .iter()
        .map(|output| copies[output.index()])
        .collect())
}

/// The operand handles of `op`, in [`Op::operands`]'s order, for rewriting: that function's
/// mutable twin, kept here rather than in `graph.rs` (one body cannot serve both kinds of
/// access without a macro, or a clone of every literal), and checked against it on every
/// copy.
fn operands_mut(op: &mut Op) -> Vec<&mut NodeId> {
    match op {
        Op::Parameter { .. }
        | Op::Constant { .. }
        | Op::Literal { .. }
        | Op::Fun { .. }
        | Op::Iota { .. } => Vec::new(),
        Op::Unary { input, .. }
        | Op::AsType { input }
        | Op::Broadcast { input, .. }
        | Op::Reshape { input }
        | Op::Transpose { input, .. }
        | Op::Squeeze { input, .. }
        | Op::Slice { input, .. }
        | Op::Reduce { input, .. }
        | Op::Reverse { input, .. }
        | Op::Metadata { input, .. }
        | Op::Cumulative { input, .. }
        | Op::Window { input, .. }
        | Op::Sort { input, .. }
        | Op::Fft { input, .. } => vec![input],
        Op::Elem { tuple, .. } => vec![tuple],
        Op::Binary { left, right, .. } | Op::Dot { left, right, .. } => vec![left, right],
        Op::Conv { input, kernel, .. } => vec![input, kernel],
        Op::TriangularSolve { a, b, .. } => vec![a, b],
        Op::Select {
            predicate,
            on_true,
            on_false,
        } => vec![predicate, on_true, on_false],
        Op::Clip { input, min, max } => vec![input, min, max],
        Op::Cond { inputs, .. }
        | Op::Block { inputs, .. }
        | Op::Concatenate { inputs, .. }
        | Op::LinAlg { inputs, .. } => inputs.iter_mut().collect(),
        Op::While { initial, .. } => initial.iter_mut().collect(),
        Op::ReduceWith { input, init, .. } | Op::WindowReduceWith { input, init, .. } => {
            vec![input, init]
        }
        Op::Pad { input, value, .. } => vec![input, value],
        Op::PutSlice { input, update, .. } => vec![input, update],
        Op::DynamicSlice { input, starts, .. } => std::iter::once(input)
            .chain(start_nodes_mut(starts))
            .collect(),
        Op::DynamicPutSlice {
            input,
            update,
            starts,
        } => [input, update]
            .into_iter()
            .chain(start_nodes_mut(starts))
            .collect(),
        Op::Gather { input, indices, .. }
        | Op::Take { input, indices, .. }
        | Op::TakeAlongAxis { input, indices, .. } => vec![input, indices],
        Op::Indexed {
            target,
            indices,
            updates,
            ..
        } => vec![target, indices, updates],
        Op::WindowScatter {
            input,
            source,
            init_value,
            ..
        } => vec![input, source, init_value],
    }
}

/// The start nodes of a dynamic slice, for rewriting (`SliceStart::nodes`' mutable twin).
fn start_nodes_mut(starts: &mut [SliceStart]) -> impl Iterator<Item = &mut NodeId> {
    starts.iter_mut().filter_map(|start| match start {
        SliceStart::Static(_) => None,
        SliceStart::Node(node) => Some(node),
    })
}

#[cfg(test)]
mod tests {
    use super::{inline, operands_mut};
    use crate::builder::GraphBuilder;
    use nxvk_core::DType;
    use nxvk_kernels::{BinaryOp, UnaryOp};

    #[test]
    fn operands_mut_lists_what_operands_lists() {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[3]).unwrap();
        let y = builder.parameter(DType::F32, &[3]).unwrap();
        let z = builder.binary(BinaryOp::Less, x, y).unwrap();
        let selected = builder.select(z, y, x).unwrap();
        let graph = builder.finish(&[selected]).unwrap();
        let mut op = graph.node(selected).op.clone();
        let listed = op.operands();
        let rewritable: Vec<_> = operands_mut(&mut op).into_iter().map(|id| *id).collect();
        assert_eq!(rewritable, listed);
        assert_eq!(
            listed,
            [z, y, x],
            "null arm: the order is the op's, not sorted"
        );
    }

    #[test]
    fn inlining_replaces_parameters_and_checks_their_types() {
        let mut inner = GraphBuilder::new();
        let a = inner.parameter(DType::F32, &[2]).unwrap();
        let b = inner.parameter(DType::F32, &[2]).unwrap();
        let difference = inner.binary(BinaryOp::Subtract, a, b).unwrap();
        let negated = inner.unary(UnaryOp::Negate, difference).unwrap();
        let graph = inner.finish(&[negated, a]).unwrap();

        let mut outer = GraphBuilder::new();
        let x = outer.parameter(DType::F32, &[2]).unwrap();
        let y = outer.parameter(DType::F32, &[2]).unwrap();
        let outputs = inline(&mut outer, &graph, &[y, x]).unwrap();
        assert_eq!(outputs[1], y, "a parameter output is its argument");
        let copy = outer.node(outputs[0]).unwrap().op.operands()[0];
        assert_eq!(outer.node(copy).unwrap().op.operands(), [y, x]);

        let wrong = outer.parameter(DType::F64, &[2]).unwrap();
        assert!(inline(&mut outer, &graph, &[x, wrong]).is_err());
    }
}
