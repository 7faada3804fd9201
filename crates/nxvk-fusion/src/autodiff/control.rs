//! Gradient rules of the structural nodes: `elem`, `block`, `cond` and `while`.
//!
//! Tuple-valued nodes receive one adjoint per element, gathered from their `elem` users; an
//! element nobody differentiates counts as zeros. Each rule writes the gradient as graph nodes
//! built from the node's nested graphs, after Nx's `grad`:
//! - `block`: the gradient flows through the default graph (as in Nx, whatever kernel runs
//!   the block): its vector-Jacobian product is inlined where the block's inputs need it, so
//!   it fuses with the nodes around it.
//! - `cond`: the adjoint of the inputs is a new `cond` with the same predicates over (inputs,
//!   output adjoints) whose branches are the vector-Jacobian products of the branch bodies, so
//!   each input takes the derivative of the branch that ran.
//! - `while`: Nx's rematerialisation. A first loop counts the iterations `n`; a second runs
//!   `k = n .. 1`, each step replaying the body `k - 1` times from the initial state (a nested
//!   loop) and applying the body's vector-Jacobian product at that state. That costs O(n^2)
//!   body evaluations and no memory that grows with `n`. Nx flattens the two loops into one
//!   that evaluates the body and its product on every step and selects; nested loops evaluate
//!   the product only once per `k`. Keeping every state instead (O(n) time) needs a stack
//!   whose size is known only at run time, which static shapes cannot express.
//! - The condition of a `while` and the predicates of a `cond` are piecewise constant: no
//!   gradient flows through them. Integer state slots and inputs carry no gradient; floating-point
//!   and complex ones do.

use super::inline::inline;
use super::{Differentiator, carries_gradient, vjp};
use crate::builder::GraphBuilder;
use crate::graph::{CondClause, Graph, NodeId, NodeType, Op, TensorType};
use nxvk_core::{DType, Error, Result};
use nxvk_kernels::BinaryOp;
use std::sync::Arc;

/// The dtype of the iteration counters the while rule adds to the loop states.
const COUNTER_DTYPE: DType = DType::S64;

impl Differentiator<'_> {
    /// Adds `gradient` to the adjoint of element `index` of the tuple node `tuple`.
    pub(super) fn elem_rule(
        &mut self,
        tuple: NodeId,
        index: usize,
        gradient: NodeId,
    ) -> Result<()> {
        let types = tuple_types(self.builder, tuple)?;
        if !carries_gradient(types[index].dtype) {
            return Ok(());
        }
        let elements = self
            .tuple_adjoints
            .entry(tuple)
            .or_insert_with(|| vec![None; types.len()]);
        elements[index] = Some(match elements[index] {
            Some(existing) => self.builder.binary(BinaryOp::Add, existing, gradient)?,
            None => gradient,
        });
        Ok(())
    }

    /// The contributions of the element adjoints `elements` of the tuple node `node` to its
    /// operands.
    pub(super) fn control_rule(
        &mut self,
        node: NodeId,
        elements: &[Option<NodeId>],
        needed: &[bool],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let op = self.op_of(node);
        let wanted = |this: &Self, inputs: &[NodeId]| -> Vec<usize> {
            (0..inputs.len())
                .filter(|&position| {
                    needed[inputs[position].index()]
                        && this
                            .ty(inputs[position])
                            .is_ok_and(|ty| carries_gradient(ty.dtype))
                })
                .collect()
        };
        match op {
            Op::Block {
                inputs, default, ..
            } => {
                let wanted = wanted(self, &inputs);
                self.block_rule(node, &inputs, &default, elements, &wanted)
            }
            Op::Cond {
                inputs,
                clauses,
                otherwise,
            } => {
                let wanted = wanted(self, &inputs);
                self.cond_rule(node, &inputs, &clauses, &otherwise, elements, &wanted)
            }
            Op::While {
                initial,
                condition,
                body,
            } => {
                let wanted = wanted(self, &initial);
                self.while_rule(node, &initial, &condition, &body, elements, &wanted)
            }
            Op::LinAlg { kind, inputs } => {
                self.linalg_tuple_rule(node, kind, inputs[0], elements, needed)
            }
            _ => Err(self.no_rule(op.name(), node)),
        }
    }

    /// The adjoints of the differentiable (floating-point or complex) elements of the tuple
    /// node `node`, in order (zeros where no user differentiated an element).
    fn output_cotangents(
        &mut self,
        node: NodeId,
        elements: &[Option<NodeId>],
    ) -> Result<Vec<NodeId>> {
        let types = tuple_types(self.builder, node)?;
        types
            .iter()
            .zip(elements)
            .filter(|(ty, _)| carries_gradient(ty.dtype))
            .map(|(ty, element)| match element {
                Some(adjoint) => Ok(*adjoint),
                None => zeros(self.builder, ty),
            })
            .collect()
    }

    /// `block`: the default graph's vector-Jacobian product, inlined.
    fn block_rule(
        &mut self,
        node: NodeId,
        inputs: &[NodeId],
        default: &Graph,
        elements: &[Option<NodeId>],
        wanted: &[usize],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let mut arguments = inputs.to_vec();
        arguments.extend(self.output_cotangents(node, elements)?);
        let product = vjp_graph(default, wanted)?;
        let gradients = inline(self.builder, &product, &arguments)?;
        Ok(wanted
            .iter()
            .map(|&position| inputs[position])
            .zip(gradients)
            .collect())
    }

    /// `cond`: a cond of the same predicates whose branches are the bodies' vector-Jacobian
    /// products.
    fn cond_rule(
        &mut self,
        node: NodeId,
        inputs: &[NodeId],
        clauses: &[CondClause],
        otherwise: &Graph,
        elements: &[Option<NodeId>],
        wanted: &[usize],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let cotangents = self.output_cotangents(node, elements)?;
        let cotangent_types = cotangents
            .iter()
            .map(|&cotangent| self.ty(cotangent))
            .collect::<Result<Vec<TensorType>>>()?;
        let product_clauses = clauses
            .iter()
            .map(|clause| {
                Ok(CondClause {
                    predicate: Arc::new(with_unused_parameters(
                        &clause.predicate,
                        &cotangent_types,
                    )?),
                    body: Arc::new(vjp_graph(&clause.body, wanted)?),
                })
            })
            .collect::<Result<Vec<CondClause>>>()?;
        let mut arguments = inputs.to_vec();
        arguments.extend(cotangents);
        let gradients =
            self.builder
                .cond(&arguments, product_clauses, vjp_graph(otherwise, wanted)?)?;
        wanted
            .iter()
            .enumerate()
            .map(|(element, &position)| {
                Ok((inputs[position], self.builder.elem(gradients, element)?))
            })
            .collect()
    }

    /// `while`: Nx's rematerialisation (see the module docs). `wanted` lists the state slots
    /// whose initial values need a gradient; every floating-point or complex slot carries an
    /// adjoint through the loop, since the slots feed each other.
    fn while_rule(
        &mut self,
        node: NodeId,
        initial: &[NodeId],
        condition: &Graph,
        body: &Graph,
        elements: &[Option<NodeId>],
        wanted: &[usize],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let state = body.parameters().to_vec();
        let gradient_slots: Vec<usize> = (0..state.len())
            .filter(|&slot| carries_gradient(state[slot].dtype))
            .collect();
        let counter = TensorType::new(COUNTER_DTYPE, &[]);
        // The iteration count: the loop again, with a counter.
        let zero = self.builder.constant(COUNTER_DTYPE, 0.0)?;
        let counting = self.builder.while_loop(
            &[initial, &[zero]].concat(),
            with_unused_parameters(condition, std::slice::from_ref(&counter))?,
            stepped_body(body, 1)?,
        )?;
        let count = self.builder.elem(counting, state.len())?;
        // From the last iteration back: (initial state, adjoints, iterations left).
        let cotangents = self.output_cotangents(node, elements)?;
        let cotangent_types: Vec<TensorType> = gradient_slots
            .iter()
            .map(|&slot| state[slot].clone())
            .collect();
        let loop_state: Vec<TensorType> = state
            .iter()
            .chain(&cotangent_types)
            .chain([&counter])
            .cloned()
            .collect();
        let any_left = counter_condition(&loop_state, BinaryOp::Greater, None)?;
        let step_back = backward_step(body, &state, &gradient_slots, &cotangent_types)?;
        let arguments = [initial, cotangents.as_slice(), &[count]].concat();
        let backward = self.builder.while_loop(&arguments, any_left, step_back)?;
        gradient_slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| wanted.contains(slot))
            .map(|(element, &slot)| {
                let gradient = self.builder.elem(backward, state.len() + element)?;
                Ok((initial[slot], gradient))
            })
            .collect()
    }
}

/// The element types of the tuple node `id`.
fn tuple_types(builder: &GraphBuilder, id: NodeId) -> Result<Vec<TensorType>> {
    match builder.type_of(id) {
        Some(NodeType::Tuple(types)) => Ok(types.clone()),
        _ => Err(Error::BadOperands {
            op: "grad",
            shapes: Vec::new(),
            dtypes: Vec::new(),
            detail: format!("node {} is not a tuple of this graph", id.index()),
        }),
    }
}

/// Zeros of type `ty`.
fn zeros(builder: &mut GraphBuilder, ty: &TensorType) -> Result<NodeId> {
    let zero = builder.constant(ty.dtype, 0.0)?;
    builder.broadcast_to(zero, &ty.shape)
}

/// One parameter per type, in order.
fn parameters(builder: &mut GraphBuilder, types: &[TensorType]) -> Result<Vec<NodeId>> {
    types
        .iter()
        .map(|ty| builder.parameter(ty.dtype, &ty.shape))
        .collect()
}

/// The vector-Jacobian product of `graph` as a graph: its parameters are `graph`'s, then one
/// adjoint per differentiable (floating-point or complex) output (in order); its outputs are
/// the gradients with respect to the parameters at positions `wrt` (differentiable ones), of
/// their types.
fn vjp_graph(graph: &Graph, wrt: &[usize]) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let arguments = parameters(&mut builder, graph.parameters())?;
    let outputs: Vec<NodeId> = inline(&mut builder, graph, &arguments)?
        .into_iter()
        .zip(graph.output_types())
        .filter(|(_, ty)| carries_gradient(ty.dtype))
        .map(|(output, _)| output)
        .collect();
    let output_types = outputs
        .iter()
        .map(|&output| builder.tensor("grad", output))
        .collect::<Result<Vec<TensorType>>>()?;
    let cotangents = parameters(&mut builder, &output_types)?;
    let targets: Vec<NodeId> = wrt.iter().map(|&position| arguments[position]).collect();
    let gradients = vjp(&mut builder, &outputs, &cotangents, &targets)?;
    builder.finish(&gradients)
}

/// `graph` taking `extra` parameters after its own, which it ignores (so a predicate or
/// condition can be called on a longer state).
fn with_unused_parameters(graph: &Graph, extra: &[TensorType]) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let arguments = parameters(&mut builder, graph.parameters())?;
    parameters(&mut builder, extra)?;
    let outputs = inline(&mut builder, graph, &arguments)?;
    builder.finish(&outputs)
}

/// A loop body over (`body`'s state, `counters` counters): `body`'s step, the first counter
/// plus one, the other counters unchanged.
fn stepped_body(body: &Graph, counters: usize) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let state = parameters(&mut builder, body.parameters())?;
    let counter_types = vec![TensorType::new(COUNTER_DTYPE, &[]); counters];
    let counters = parameters(&mut builder, &counter_types)?;
    let mut outputs = inline(&mut builder, body, &state)?;
    let one = builder.constant(COUNTER_DTYPE, 1.0)?;
    outputs.push(builder.binary(BinaryOp::Add, counters[0], one)?);
    outputs.extend(&counters[1..]);
    builder.finish(&outputs)
}

/// A loop condition over `state`, whose last element is the counter `k`: `k > 0` with
/// `Greater`, or `j < k - 1` with `Less`, `j` being the element at position `other`.
fn counter_condition(state: &[TensorType], op: BinaryOp, other: Option<usize>) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let arguments = parameters(&mut builder, state)?;
    let last = arguments[arguments.len() - 1];
    let holds = match other {
        None => {
            let zero = builder.constant(COUNTER_DTYPE, 0.0)?;
            builder.binary(op, last, zero)?
        }
        Some(position) => {
            let one = builder.constant(COUNTER_DTYPE, 1.0)?;
            let limit = builder.binary(BinaryOp::Subtract, last, one)?;
            builder.binary(op, arguments[position], limit)?
        }
    };
    builder.finish(&[holds])
}

/// The body of the backward loop over (initial state, adjoints of the differentiable slots
/// `gradient_slots`, iterations left `k`): replays `body` `k - 1` times from the initial state,
/// applies its vector-Jacobian product there, and counts `k` down.
fn backward_step(
    body: &Graph,
    state: &[TensorType],
    gradient_slots: &[usize],
    cotangent_types: &[TensorType],
) -> Result<Graph> {
    let counter = TensorType::new(COUNTER_DTYPE, &[]);
    let mut builder = GraphBuilder::new();
    let initial = parameters(&mut builder, state)?;
    let cotangents = parameters(&mut builder, cotangent_types)?;
    let left = builder.parameter(COUNTER_DTYPE, &[])?;
    // Replay: (state, j, k) while j < k - 1.
    let replay_state: Vec<TensorType> = state.iter().chain([&counter, &counter]).cloned().collect();
    let replay_condition = counter_condition(&replay_state, BinaryOp::Less, Some(state.len()))?;
    let zero = builder.constant(COUNTER_DTYPE, 0.0)?;
    let replay = builder.while_loop(
        &[initial.as_slice(), &[zero, left]].concat(),
        replay_condition,
        stepped_body(body, 2)?,
    )?;
    let mut arguments = (0..state.len())
        .map(|slot| builder.elem(replay, slot))
        .collect::<Result<Vec<NodeId>>>()?;
    arguments.extend(&cotangents);
    let product = vjp_graph(body, gradient_slots)?;
    let mut outputs = initial;
    outputs.extend(inline(&mut builder, &product, &arguments)?);
    let one = builder.constant(COUNTER_DTYPE, 1.0)?;
    outputs.push(builder.binary(BinaryOp::Subtract, left, one)?);
    builder.finish(&outputs)
}
