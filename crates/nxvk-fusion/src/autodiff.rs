//! Reverse-mode automatic differentiation on the graph IR.
//!
//! [`gradients`] appends the backward pass to the builder that holds the forward graph, so the
//! forward and backward nodes form one graph that the planner fuses and caches like any
//! other (the gradient of an elementwise chain becomes elementwise nodes that fuse with it).
//!
//! Policy:
//! - Only floating-point and complex values carry gradients ([`carries_gradient`]). Integer
//!   and predicate operands (comparison results, `select` predicates, argmax indices) are
//!   constants to the derivative, as in Nx's `grad`; asking for the gradient of an integer
//!   node is an error. The loss and the nodes of `wrt` are real floats.
//! - Complex values: a complex node's adjoint `c` is the transpose-convention cotangent
//!   `dL/d re - i dL/d im` (JAX's). Holomorphic ops (add, multiply, divide, pow, the complex
//!   transcendentals, dot, sums and products, data movement, triangular_solve, solve, lu,
//!   determinant, fft) then pass it through their plain transposes, with the real rules'
//!   formulas unchanged; the others conjugate where their derivative does: `conjugate` gives
//!   `conj(c)`, `abs` `g conj(z) / |z|`, `real` `g`, `imag` `-i g`, and a real operand of a
//!   complex node takes the real part of its contribution (the accumulator's `as_type`).
//!   Nx writes its complex rules in the conjugate convention (`dL/d re + i dL/d im`), so the
//!   rules that need conjugations (cholesky, qr, eigh) apply Nx's formulas, conjugate
//!   transposes included, between a conjugation of the incoming adjoints and one of the
//!   result (see `autodiff/linalg.rs`).
//! - Each node's adjoint is the sum of its users' contributions, reduced over the axes the
//!   user broadcast (right-aligned, Nx's rule) and converted to the node's dtype.
//! - Ties in `max`/`min` split the gradient equally between the operands (Nx's rule, so
//!   `max(x, 0)` passes half the gradient at exactly 0); in `reduce_max`/`reduce_min` it is
//!   shared equally between the tied elements.
//! - An op without a rule is an `Error::Unsupported` naming it; never a silent zero. `conv`
//!   has rules for every option (groups, dilations, permutations). `reduce` and
//!   `window_reduce` with a reducer function and window_product are not differentiable, as in
//!   Nx: their error says so and points at `stop_grad`.
//! - Data movement, indexing, scans, windows, window_scatter and sort: see
//!   `autodiff/movement.rs` (Nx's rules, and the tie and repeated-index conventions).
//! - `block`, `cond` and `while` (and `elem`, which reads their tuples): see
//!   `autodiff/control.rs`. Their rules need the vector-Jacobian product of a nested graph as
//!   a graph, so the pass itself is `vjp` (several outputs, any cotangents), of which
//!   [`gradients`] is the one-output, seed-one case; `autodiff/inline.rs` copies nested graphs
//!   into the graph being built.
//! - `metadata` nodes labelled [`STOP_GRAD`] pass no gradient (Nx's `stop_grad`).
//! - fft, triangular_solve and the linear-algebra nodes: see `autodiff/linalg.rs` (closed
//!   forms; complex adjoints through fft, `real` and `imag`; tuple elements).

mod control;
mod inline;
mod linalg;
mod movement;

use crate::builder::GraphBuilder;
use crate::graph::{DotAxes, NodeId, NodeType, Op, TensorType};
use nxvk_core::{DType, Error, Result};
use nxvk_kernels::{BinaryOp, ConvGeometry, ConvOptions, ReduceOp, TieBreak, UnaryOp};
use std::collections::HashMap;

/// The `metadata` label that stops gradients.
pub const STOP_GRAD: &str = "stop_grad";

/// True for the dtypes whose values carry gradients: floating-point and complex ones.
pub(crate) const fn carries_gradient(dtype: DType) -> bool {
    dtype.is_float() || dtype.is_complex()
}

/// Appends to `builder` the gradient of the one-element floating-point node `loss` with respect
/// to each node of `wrt`, and returns the gradient nodes in the same order (a zero tensor for a
/// node `loss` does not depend on).
pub fn gradients(builder: &mut GraphBuilder, loss: NodeId, wrt: &[NodeId]) -> Result<Vec<NodeId>> {
    let loss_type = tensor_type(builder, "grad", loss)?;
    if loss_type.n_elements() != 1 || !loss_type.dtype.is_float() {
        return Err(bad(
            &[&loss_type],
            "the loss must be a one-element floating-point tensor",
        ));
    }
    for &target in wrt {
        let target_type = tensor_type(builder, "grad", target)?;
        if target.index() > loss.index() || !target_type.dtype.is_float() {
            return Err(bad(
                &[&target_type],
                "gradients are taken with respect to floating-point nodes built before the loss",
            ));
        }
    }
    let one = builder.constant(loss_type.dtype, 1.0)?;
    let seed = builder.broadcast_to(one, &loss_type.shape)?;
    vjp(builder, &[loss], &[seed], wrt)
}

/// The vector-Jacobian product: appends to `builder` the adjoints of the nodes `wrt` when each
/// node of `outputs` is given the adjoint `cotangents[i]` (of its type), and returns them in
/// order (a zero tensor where no output depends on the node). Integer outputs pass no
/// gradient; nodes of `wrt` built after every output get zeros. The callers check the types.
pub(crate) fn vjp(
    builder: &mut GraphBuilder,
    outputs: &[NodeId],
    cotangents: &[NodeId],
    wrt: &[NodeId],
) -> Result<Vec<NodeId>> {
    let last = outputs.iter().map(|output| output.index()).max();
    let needed = last.map_or_else(Vec::new, |last| needed_nodes(builder, last, wrt));
    let mut differentiator = Differentiator {
        builder,
        adjoints: vec![None; needed.len()],
        tuple_adjoints: HashMap::new(),
    };
    for (&output, &cotangent) in outputs.iter().zip(cotangents) {
        if needed[output.index()] && carries_gradient(differentiator.ty(output)?.dtype) {
            differentiator.accumulate(output, cotangent)?;
        }
    }
    for index in (0..needed.len()).rev() {
        if !needed[index] {
            continue;
        }
        let node = NodeId(index as u32);
        let contributions = if let Some(elements) = differentiator.tuple_adjoints.remove(&node) {
            differentiator.control_rule(node, &elements, &needed)?
        } else if let Some(adjoint) = differentiator.adjoints[index] {
            differentiator.backward(node, adjoint, &needed)?
        } else {
            continue;
        };
        for (operand, contribution) in contributions {
            differentiator.accumulate(operand, contribution)?;
        }
    }
    wrt.iter()
        .map(|&target| {
            match differentiator
                .adjoints
                .get(target.index())
                .copied()
                .flatten()
            {
                Some(gradient) => Ok(gradient),
                None => differentiator.zeros_like(target),
            }
        })
        .collect()
}

fn bad(operands: &[&TensorType], detail: &str) -> Error {
    Error::BadOperands {
        op: "grad",
        shapes: operands.iter().map(|tensor| tensor.shape.clone()).collect(),
        dtypes: operands.iter().map(|tensor| tensor.dtype).collect(),
        detail: detail.into(),
    }
}

fn tensor_type(builder: &GraphBuilder, op: &'static str, id: NodeId) -> Result<TensorType> {
    match builder.type_of(id) {
        Some(NodeType::Tensor(tensor)) => Ok(tensor.clone()),
        _ => Err(Error::BadOperands {
            op,
            shapes: Vec::new(),
            dtypes: Vec::new(),
            detail: format!("node {} is not a tensor of this graph", id.index()),
        }),
    }
}

/// For each node up to `last`: whether it depends on a node of `wrt` (only those get adjoints).
fn needed_nodes(builder: &GraphBuilder, last: usize, wrt: &[NodeId]) -> Vec<bool> {
    let mut needed = vec![false; last + 1];
    for index in 0..=last {
        let id = NodeId(index as u32);
        let Some(node) = builder.node(id) else {
            continue;
        };
        needed[index] = wrt.contains(&id)
            || node
                .op
                .operands()
                .iter()
                .any(|operand| needed[operand.index()]);
    }
    needed
}

/// The axis permutation that undoes `permutation` (Nx's transpose: output axis `i` is input
/// axis `permutation[i]`).
fn inverse_permutation(permutation: &[usize]) -> Vec<usize> {
    let mut inverse = vec![0; permutation.len()];
    for (axis, &source) in permutation.iter().enumerate() {
        inverse[source] = axis;
    }
    inverse
}

struct Differentiator<'b> {
    builder: &'b mut GraphBuilder,
    /// The adjoint of each tensor node, once a user contributed to it.
    adjoints: Vec<Option<NodeId>>,
    /// The adjoints of the elements of tuple nodes (`cond`, `while`, `block`), gathered from
    /// their `elem` users.
    tuple_adjoints: HashMap<NodeId, Vec<Option<NodeId>>>,
}

impl Differentiator<'_> {
    fn ty(&self, id: NodeId) -> Result<TensorType> {
        tensor_type(self.builder, "grad", id)
    }

    fn scalar(&mut self, dtype: DType, value: f64) -> Result<NodeId> {
        self.builder.constant(dtype, value)
    }

    fn zeros_like(&mut self, id: NodeId) -> Result<NodeId> {
        let ty = self.ty(id)?;
        let zero = self.scalar(ty.dtype, 0.0)?;
        self.builder.broadcast_to(zero, &ty.shape)
    }

    fn unary(&mut self, op: UnaryOp, input: NodeId) -> Result<NodeId> {
        self.builder.unary(op, input)
    }

    fn binary(&mut self, op: BinaryOp, left: NodeId, right: NodeId) -> Result<NodeId> {
        self.builder.binary(op, left, right)
    }

    fn mul(&mut self, left: NodeId, right: NodeId) -> Result<NodeId> {
        self.binary(BinaryOp::Multiply, left, right)
    }

    fn div(&mut self, left: NodeId, right: NodeId) -> Result<NodeId> {
        self.binary(BinaryOp::Divide, left, right)
    }

    /// `value * factor` with a scalar `factor` of `value`'s dtype.
    fn scale(&mut self, value: NodeId, factor: f64) -> Result<NodeId> {
        let dtype = self.ty(value)?.dtype;
        let factor = self.scalar(dtype, factor)?;
        self.mul(value, factor)
    }

    /// `value + addend` with a scalar `addend` of `value`'s dtype.
    fn offset(&mut self, value: NodeId, addend: f64) -> Result<NodeId> {
        let dtype = self.ty(value)?.dtype;
        let addend = self.scalar(dtype, addend)?;
        self.binary(BinaryOp::Add, value, addend)
    }

    /// `predicate ? value : 0` (or `predicate ? 0 : value` when `keep_on_true` is false).
    fn mask(&mut self, predicate: NodeId, value: NodeId, keep_on_true: bool) -> Result<NodeId> {
        let zero = self.zeros_like(value)?;
        if keep_on_true {
            self.builder.select(predicate, value, zero)
        } else {
            self.builder.select(predicate, zero, value)
        }
    }

    /// Adds `contribution` to `operand`'s adjoint, after reducing it to the operand's shape and
    /// converting it to the operand's dtype.
    fn accumulate(&mut self, operand: NodeId, contribution: NodeId) -> Result<()> {
        let target = self.ty(operand)?;
        let fitted = self.fit(contribution, &target)?;
        let total = match self.adjoints[operand.index()] {
            Some(existing) => self.binary(BinaryOp::Add, existing, fitted)?,
            None => fitted,
        };
        self.adjoints[operand.index()] = Some(total);
        Ok(())
    }

    /// Undoes Nx's right-aligned broadcasting of an elementwise operand: sums the leading
    /// axes the operand lacks and the axes where it has size 1, then reshapes and converts.
    fn fit(&mut self, gradient: NodeId, target: &TensorType) -> Result<NodeId> {
        let source = self.ty(gradient)?;
        let mut fitted = gradient;
        if source.shape != target.shape {
            let lead = source.shape.len() - target.shape.len().min(source.shape.len());
            let summed: Vec<usize> = (0..source.shape.len())
                .filter(|&axis| axis < lead || target.shape[axis - lead] != source.shape[axis])
                .collect();
            if !summed.is_empty() {
                fitted = self.builder.reduce(
                    ReduceOp::Sum,
                    fitted,
                    Some(&summed),
                    false,
                    TieBreak::Low,
                )?;
            }
            fitted = self.builder.reshape(fitted, &target.shape)?;
        }
        if self.ty(fitted)?.dtype != target.dtype {
            fitted = self.builder.as_type(fitted, target.dtype)?;
        }
        Ok(fitted)
    }

    /// `gradient` of a reduction's output, reshaped to keep the reduced axes and broadcast
    /// back to the reduction's input shape.
    fn unreduce(&mut self, gradient: NodeId, input: &TensorType, axes: &[usize]) -> Result<NodeId> {
        let kept: Vec<usize> = input
            .shape
            .iter()
            .enumerate()
            .map(|(axis, &size)| if axes.contains(&axis) { 1 } else { size })
            .collect();
        let reshaped = self.builder.reshape(gradient, &kept)?;
        self.builder.broadcast_to(reshaped, &input.shape)
    }

    /// The op of `node` (a copy: the rules append to the builder while they read it).
    fn op_of(&self, node: NodeId) -> Op {
        self.builder
            .node(node)
            .map(|node| node.op.clone())
            .expect("node ids come from this builder")
    }

    /// The contributions of `node`'s adjoint `gradient` to its differentiable operands.
    fn backward(
        &mut self,
        node: NodeId,
        gradient: NodeId,
        needed: &[bool],
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let op = self.op_of(node);
        let wants = |operand: NodeId| needed[operand.index()];
        let is_float = |this: &Self, operand: NodeId| {
            this.ty(operand)
                .map(|ty| ty.dtype.is_float())
                .unwrap_or(false)
        };
        let differentiable = |this: &Self, operand: NodeId| {
            this.ty(operand).is_ok_and(|ty| carries_gradient(ty.dtype))
        };
        let mut contributions = Vec::new();
        match op {
            Op::Parameter { .. } | Op::Constant { .. } | Op::Literal { .. } => {}
            Op::Unary {
                op: op @ (UnaryOp::Real | UnaryOp::Imag),
                input,
            } if wants(input) && self.ty(input).is_ok_and(|ty| ty.dtype.is_complex()) => {
                contributions.push((input, self.complex_part_rule(op, input, gradient)?));
            }
            Op::Unary { op, input } => {
                if wants(input)
                    && differentiable(self, input)
                    && let Some(contribution) = self.unary_rule(op, input, node, gradient)?
                {
                    contributions.push((input, contribution));
                }
            }
            Op::Binary { op, left, right } => {
                let (want_left, want_right) = (
                    wants(left) && differentiable(self, left),
                    wants(right) && differentiable(self, right),
                );
                if want_left || want_right {
                    let (to_left, to_right) =
                        self.binary_rule(op, left, right, node, gradient, want_left, want_right)?;
                    contributions.extend(to_left.map(|value| (left, value)));
                    contributions.extend(to_right.map(|value| (right, value)));
                }
            }
            Op::AsType { input } => {
                if wants(input) && differentiable(self, input) {
                    contributions.push((input, gradient));
                }
            }
            Op::Broadcast { input, axes } => {
                let (source, target) = (self.ty(gradient)?, self.ty(input)?);
                let summed: Vec<usize> = (0..source.shape.len())
                    .filter(|axis| match axes.iter().position(|mapped| mapped == axis) {
                        None => true,
                        Some(input_axis) => target.shape[input_axis] != source.shape[*axis],
                    })
                    .collect();
                let reduced = if summed.is_empty() {
                    gradient
                } else {
                    self.builder.reduce(
                        ReduceOp::Sum,
                        gradient,
                        Some(&summed),
                        false,
                        TieBreak::Low,
                    )?
                };
                contributions.push((input, self.builder.reshape(reduced, &target.shape)?));
            }
            Op::Reshape { input } | Op::Squeeze { input, .. } => {
                let shape = self.ty(input)?.shape;
                contributions.push((input, self.builder.reshape(gradient, &shape)?));
            }
            Op::Transpose { input, permutation } => {
                let inverse = inverse_permutation(&permutation);
                contributions.push((input, self.builder.transpose(gradient, &inverse)?));
            }
            Op::Select {
                on_true,
                on_false,
                predicate,
                ..
            } => {
                if wants(on_true) && differentiable(self, on_true) {
                    contributions.push((on_true, self.mask(predicate, gradient, true)?));
                }
                if wants(on_false) && differentiable(self, on_false) {
                    contributions.push((on_false, self.mask(predicate, gradient, false)?));
                }
            }
            Op::Clip { input, min, max } => {
                if wants(input) && is_float(self, input) {
                    let below = self.binary(BinaryOp::Less, input, min)?;
                    let above = self.binary(BinaryOp::Greater, input, max)?;
                    let inside = self.binary(BinaryOp::LogicalOr, below, above)?;
                    contributions.push((input, self.mask(inside, gradient, false)?));
                }
            }
            Op::Reduce {
                op, input, axes, ..
            } => {
                if wants(input)
                    && differentiable(self, input)
                    && let Some(contribution) =
                        self.reduce_rule(op, input, node, gradient, &axes)?
                {
                    contributions.push((input, contribution));
                }
            }
            Op::Dot { left, right, axes } => {
                if wants(left) && differentiable(self, left) {
                    let value = self.dot_operand_gradient(gradient, left, right, &axes, true)?;
                    contributions.push((left, value));
                }
                if wants(right) && differentiable(self, right) {
                    let value = self.dot_operand_gradient(gradient, left, right, &axes, false)?;
                    contributions.push((right, value));
                }
            }
            Op::Conv {
                input,
                kernel,
                options,
            } => {
                let want_input = wants(input) && differentiable(self, input);
                let want_kernel = wants(kernel) && differentiable(self, kernel);
                if want_input || want_kernel {
                    let wanted = (want_input, want_kernel);
                    contributions =
                        self.conv_rule(node, input, kernel, &options, gradient, wanted)?;
                }
            }
            Op::Reverse { input, axes } => {
                if wants(input) {
                    contributions.push((input, self.builder.reverse(gradient, &axes)?));
                }
            }
            Op::Metadata { input, label } => {
                if label != STOP_GRAD && wants(input) {
                    contributions.push((input, gradient));
                }
            }
            Op::Slice { .. }
            | Op::Pad { .. }
            | Op::Concatenate { .. }
            | Op::PutSlice { .. }
            | Op::DynamicSlice { .. }
            | Op::DynamicPutSlice { .. }
            | Op::Gather { .. }
            | Op::Take { .. }
            | Op::TakeAlongAxis { .. }
            | Op::Indexed { .. }
            | Op::Cumulative { .. }
            | Op::Window { .. }
            | Op::WindowScatter { .. }
            | Op::Iota { .. }
            | Op::Sort { .. } => {
                contributions = self.movement_rule(&op, node, gradient, needed)?;
            }
            Op::Fft { .. } | Op::TriangularSolve { .. } | Op::LinAlg { .. } => {
                contributions = self.linalg_rule(&op, node, gradient, needed)?;
            }
            Op::Elem { tuple, index } => self.elem_rule(tuple, index, gradient)?,
            // Tuple and function values get their adjoints per element (see `control_rule`).
            Op::Fun { .. } | Op::Cond { .. } | Op::While { .. } | Op::Block { .. } => {}
            Op::ReduceWith { .. } | Op::WindowReduceWith { .. } => {
                return Err(self.not_differentiable(op.name(), node));
            }
        }
        Ok(contributions)
    }

    fn no_rule(&self, name: &'static str, node: NodeId) -> Error {
        Error::Unsupported {
            op: name,
            dtype: self.ty(node).map_or(DType::F32, |ty| ty.dtype),
            detail: "grad: no gradient rule for this op yet".into(),
        }
    }

    /// The error of an op Nx's `grad` refuses too (reduce and window_reduce with a reducer
    /// function, window_product).
    fn not_differentiable(&self, name: &'static str, node: NodeId) -> Error {
        Error::Unsupported {
            op: name,
            dtype: self.ty(node).map_or(DType::F32, |ty| ty.dtype),
            detail: format!(
                "grad: {name} is not differentiable (Nx's grad refuses it too); wrap it in \
                 stop_grad (a metadata node labelled \"{STOP_GRAD}\") to treat it as a constant"
            ),
        }
    }

    /// d input from `gradient` of `output = op(input)`; `None` where the derivative is zero.
    fn unary_rule(
        &mut self,
        op: UnaryOp,
        input: NodeId,
        output: NodeId,
        gradient: NodeId,
    ) -> Result<Option<NodeId>> {
        use UnaryOp as U;
        let g = gradient;
        let (x, y) = (input, output);
        let value = match op {
            U::Sign | U::Floor | U::Ceil | U::Round | U::Imag => return Ok(None),
            U::Negate => self.unary(U::Negate, g)?,
            U::Real => g,
            // The output is complex (a real input's too): its adjoint, conjugated.
            U::Conjugate => self.unary(U::Conjugate, g)?,
            U::Abs if self.ty(x)?.dtype.is_complex() => {
                // |z| is real: d|z| = re(conj(z) dz) / |z|, so z takes g conj(z) / |z| (zero
                // where z is zero, whose conj(z) is zero too).
                let zero = self.scalar(self.ty(y)?.dtype, 0.0)?;
                let at_zero = self.binary(BinaryOp::Equal, y, zero)?;
                let one = self.scalar(self.ty(y)?.dtype, 1.0)?;
                let modulus = self.builder.select(at_zero, one, y)?;
                let conjugated = self.unary(U::Conjugate, x)?;
                let direction = self.div(conjugated, modulus)?;
                self.mul(g, direction)?
            }
            U::Abs => {
                let sign = self.unary(U::Sign, x)?;
                self.mul(g, sign)?
            }
            U::Exp => self.mul(g, y)?,
            U::Expm1 => {
                let exp = self.offset(y, 1.0)?;
                self.mul(g, exp)?
            }
            U::Log => self.div(g, x)?,
            U::Log1p => {
                let shifted = self.offset(x, 1.0)?;
                self.div(g, shifted)?
            }
            U::Sqrt => {
                let half = self.scale(g, 0.5)?;
                self.div(half, y)?
            }
            U::Rsqrt => {
                let square = self.mul(y, y)?;
                let cube = self.mul(square, y)?;
                let scaled = self.scale(cube, -0.5)?;
                self.mul(g, scaled)?
            }
            U::Sigmoid => {
                let negated = self.unary(U::Negate, y)?;
                let complement = self.offset(negated, 1.0)?;
                let slope = self.mul(y, complement)?;
                self.mul(g, slope)?
            }
            U::Tanh => {
                let square = self.mul(y, y)?;
                let negated = self.unary(U::Negate, square)?;
                let slope = self.offset(negated, 1.0)?;
                self.mul(g, slope)?
            }
            U::Sin => {
                let cos = self.unary(U::Cos, x)?;
                self.mul(g, cos)?
            }
            U::Cos => {
                let sin = self.unary(U::Sin, x)?;
                let negated = self.unary(U::Negate, sin)?;
                self.mul(g, negated)?
            }
            U::Tan => {
                let square = self.mul(y, y)?;
                let slope = self.offset(square, 1.0)?;
                self.mul(g, slope)?
            }
            U::Asin | U::Acos => {
                let square = self.mul(x, x)?;
                let negated = self.unary(U::Negate, square)?;
                let complement = self.offset(negated, 1.0)?;
                let slope = self.unary(U::Rsqrt, complement)?;
                let value = self.mul(g, slope)?;
                if op == U::Acos {
                    self.unary(U::Negate, value)?
                } else {
                    value
                }
            }
            U::Atan => {
                let square = self.mul(x, x)?;
                let denominator = self.offset(square, 1.0)?;
                self.div(g, denominator)?
            }
            U::Sinh => {
                let cosh = self.unary(U::Cosh, x)?;
                self.mul(g, cosh)?
            }
            U::Cosh => {
                let sinh = self.unary(U::Sinh, x)?;
                self.mul(g, sinh)?
            }
            U::Asinh | U::Acosh => {
                let square = self.mul(x, x)?;
                let shift = if op == U::Asinh { 1.0 } else { -1.0 };
                let shifted = self.offset(square, shift)?;
                let slope = self.unary(U::Rsqrt, shifted)?;
                self.mul(g, slope)?
            }
            U::Atanh => {
                let square = self.mul(x, x)?;
                let negated = self.unary(U::Negate, square)?;
                let denominator = self.offset(negated, 1.0)?;
                self.div(g, denominator)?
            }
            U::Erf | U::Erfc => {
                let square = self.mul(x, x)?;
                let negated = self.unary(U::Negate, square)?;
                let bell = self.unary(U::Exp, negated)?;
                let sign = if op == U::Erf { 1.0 } else { -1.0 };
                let slope = self.scale(bell, sign * std::f64::consts::FRAC_2_SQRT_PI)?;
                self.mul(g, slope)?
            }
            U::ErfInv => {
                let square = self.mul(y, y)?;
                let bell = self.unary(U::Exp, square)?;
                let slope = self.scale(bell, 1.0 / std::f64::consts::FRAC_2_SQRT_PI)?;
                self.mul(g, slope)?
            }
            U::Cbrt => {
                let square = self.mul(y, y)?;
                let denominator = self.scale(square, 3.0)?;
                self.div(g, denominator)?
            }
            _ => return Err(self.no_rule(op.name(), output)),
        };
        Ok(Some(value))
    }

    /// d left and d right from `gradient` of `output = op(left, right)` (each only if wanted;
    /// `None` where the derivative is zero).
    #[allow(clippy::too_many_arguments)] // One rule per op, all reading the same five values.
    fn binary_rule(
        &mut self,
        op: BinaryOp,
        left: NodeId,
        right: NodeId,
        output: NodeId,
        gradient: NodeId,
        want_left: bool,
        want_right: bool,
    ) -> Result<(Option<NodeId>, Option<NodeId>)> {
        use BinaryOp as B;
        let g = gradient;
        let (l, r, y) = (left, right, output);
        let (to_left, to_right) = match op {
            B::Add => (Some(g), Some(g)),
            B::Subtract => (Some(g), Some(self.unary(UnaryOp::Negate, g)?)),
            B::Multiply => (
                want_left.then(|| self.mul(g, r)).transpose()?,
                want_right.then(|| self.mul(g, l)).transpose()?,
            ),
            B::Divide => {
                let to_left = self.div(g, r)?;
                let to_right = if want_right {
                    let quotient = self.div(y, r)?;
                    let product = self.mul(g, quotient)?;
                    Some(self.unary(UnaryOp::Negate, product)?)
                } else {
                    None
                };
                (Some(to_left), to_right)
            }
            B::Remainder => {
                // remainder(x, y) = x - trunc(x / y) y (the dividend's sign, as C's fmod and
                // Nx.BinaryBackend): d x = g, d y = -g trunc(x / y). (Nx's rule takes floor,
                // which differs where x / y is negative.)
                let to_right = if want_right {
                    let quotient = self.div(l, r)?;
                    let zero = self.scalar(self.ty(quotient)?.dtype, 0.0)?;
                    let negative = self.binary(B::Less, quotient, zero)?;
                    let up = self.unary(UnaryOp::Ceil, quotient)?;
                    let down = self.unary(UnaryOp::Floor, quotient)?;
                    let truncated = self.builder.select(negative, up, down)?;
                    let product = self.mul(g, truncated)?;
                    Some(self.unary(UnaryOp::Negate, product)?)
                } else {
                    None
                };
                (Some(g), to_right)
            }
            B::Pow => {
                let to_left = if want_left {
                    let exponent = self.offset(r, -1.0)?;
                    let power = self.binary(B::Pow, l, exponent)?;
                    let slope = self.mul(r, power)?;
                    Some(self.mul(g, slope)?)
                } else {
                    None
                };
                let to_right = if want_right {
                    let log = self.unary(UnaryOp::Log, l)?;
                    let slope = self.mul(y, log)?;
                    Some(self.mul(g, slope)?)
                } else {
                    None
                };
                (to_left, to_right)
            }
            B::Max | B::Min => {
                // Nx's rule: the operand equal to the result takes the gradient; a tie splits it.
                let left_hits = self.binary(B::Equal, l, y)?;
                let right_hits = self.binary(B::Equal, r, y)?;
                let half = self.scale(g, 0.5)?;
                let to_left = if want_left {
                    let share = self.builder.select(right_hits, half, g)?;
                    Some(self.mask(left_hits, share, true)?)
                } else {
                    None
                };
                let to_right = if want_right {
                    let share = self.builder.select(left_hits, half, g)?;
                    Some(self.mask(right_hits, share, true)?)
                } else {
                    None
                };
                (to_left, to_right)
            }
            B::Atan2 => {
                let left_square = self.mul(l, l)?;
                let right_square = self.mul(r, r)?;
                let denominator = self.binary(B::Add, left_square, right_square)?;
                let scaled = self.div(g, denominator)?;
                let to_left = self.mul(scaled, r)?;
                let product = self.mul(scaled, l)?;
                (Some(to_left), Some(self.unary(UnaryOp::Negate, product)?))
            }
            B::Equal
            | B::NotEqual
            | B::Greater
            | B::Less
            | B::GreaterEqual
            | B::LessEqual
            | B::LogicalAnd
            | B::LogicalOr
            | B::LogicalXor => (None, None),
            _ => return Err(self.no_rule(op.name(), output)),
        };
        Ok((
            to_left.filter(|_| want_left),
            to_right.filter(|_| want_right),
        ))
    }

    /// d input from `gradient` of `output = op(input, axes)`.
    fn reduce_rule(
        &mut self,
        op: ReduceOp,
        input: NodeId,
        output: NodeId,
        gradient: NodeId,
        axes: &[usize],
    ) -> Result<Option<NodeId>> {
        let input_type = self.ty(input)?;
        let spread = self.unreduce(gradient, &input_type, axes)?;
        let value = match op {
            ReduceOp::Sum => spread,
            ReduceOp::Product => {
                let result = self.unreduce(output, &input_type, axes)?;
                let quotient = self.div(result, input)?;
                self.mul(spread, quotient)?
            }
            ReduceOp::ReduceMax | ReduceOp::ReduceMin => {
                let extreme = self.unreduce(output, &input_type, axes)?;
                let hits = self.binary(BinaryOp::Equal, input, extreme)?;
                let hits = self.builder.as_type(hits, input_type.dtype)?;
                let count =
                    self.builder
                        .reduce(ReduceOp::Sum, hits, Some(axes), true, TieBreak::Low)?;
                let count = self.builder.broadcast_to(count, &input_type.shape)?;
                let share = self.div(hits, count)?;
                self.mul(spread, share)?
            }
            ReduceOp::All | ReduceOp::Any | ReduceOp::ArgMax | ReduceOp::ArgMin => {
                return Ok(None);
            }
        };
        Ok(Some(value))
    }

    /// d left (`is_left`) or d right of `dot(left, right)`: the output gradient contracted
    /// with the other operand over that operand's free axes, then permuted back to this
    /// operand's axis order.
    fn dot_operand_gradient(
        &mut self,
        gradient: NodeId,
        left: NodeId,
        right: NodeId,
        axes: &DotAxes,
        is_left: bool,
    ) -> Result<NodeId> {
        let (left_rank, right_rank) = (self.ty(left)?.shape.len(), self.ty(right)?.shape.len());
        let batch = axes.batch_left.len();
        let left_free = free_axes(left_rank, &axes.contract_left, &axes.batch_left);
        let right_free = free_axes(right_rank, &axes.contract_right, &axes.batch_right);
        // The gradient's axes: batch, then left's free axes, then right's free axes.
        let gradient_batch: Vec<usize> = (0..batch).collect();
        let gradient_left_free: Vec<usize> = (batch..batch + left_free.len()).collect();
        let gradient_right_free: Vec<usize> =
            (batch + left_free.len()..batch + left_free.len() + right_free.len()).collect();
        let (own_contract, own_batch, own_free, other_contract) = if is_left {
            (
                &axes.contract_left,
                &axes.batch_left,
                left_free.clone(),
                &axes.contract_right,
            )
        } else {
            (
                &axes.contract_right,
                &axes.batch_right,
                right_free.clone(),
                &axes.contract_left,
            )
        };
        // The gradient keeps the batch axes first, so it stays on the side of its operand.
        let product = if is_left {
            let dot_axes = DotAxes {
                contract_left: gradient_right_free,
                batch_left: gradient_batch,
                contract_right: right_free,
                batch_right: axes.batch_right.clone(),
            };
            self.builder.dot(gradient, right, dot_axes)?
        } else {
            let dot_axes = DotAxes {
                contract_left: left_free,
                batch_left: axes.batch_left.clone(),
                contract_right: gradient_left_free,
                batch_right: gradient_batch,
            };
            self.builder.dot(left, gradient, dot_axes)?
        };
        // The other operand's contracted axes survive in its order, each standing for its
        // partner in this operand.
        let mut partners: Vec<(usize, usize)> = other_contract
            .iter()
            .copied()
            .zip(own_contract.iter().copied())
            .collect();
        partners.sort_unstable();
        let partner_axes = partners.into_iter().map(|(_, own_axis)| own_axis);
        let batch_axes = own_batch.iter().copied();
        let source: Vec<usize> = if is_left {
            batch_axes.chain(own_free).chain(partner_axes).collect()
        } else {
            batch_axes.chain(partner_axes).chain(own_free).collect()
        };
        self.permuted_to_target_order(product, &source)
    }

    /// The contributions of `gradient` to a conv's input and kernel (each if `wanted`).
    /// Permuted operands and output are transposed to the canonical layout ([batch, channels,
    /// spatial...], [filters, channels, spatial...]) and the contributions transposed back; an
    /// input-dilated conv is a plain conv of the input padded with interior zeros,
    /// differentiated as such, with the input's positions sliced back out (pad's rule).
    fn conv_rule(
        &mut self,
        node: NodeId,
        input: NodeId,
        kernel: NodeId,
        options: &ConvOptions,
        gradient: NodeId,
        (want_input, want_kernel): (bool, bool),
    ) -> Result<Vec<(NodeId, NodeId)>> {
        let (input_type, kernel_type) = (self.ty(input)?, self.ty(kernel)?);
        let geometry = ConvGeometry::new(&input_type.shape, &kernel_type.shape, options)
            .map_err(|_| self.no_rule("conv", node))?;
        let canonical_input = self.permuted(input, &geometry.input_permutation)?;
        let canonical_kernel = self.permuted(kernel, &geometry.kernel_permutation)?;
        let canonical_gradient = self.permuted(gradient, &geometry.output_permutation)?;
        let dilation = geometry.input_dilation.clone();
        let dilated = dilation.iter().any(|&factor| factor > 1);
        let source = if dilated {
            let config: Vec<(i64, i64, usize)> = [1, 1]
                .iter()
                .chain(&dilation)
                .map(|&factor| (0, 0, factor - 1))
                .collect();
            let zero = self.scalar(input_type.dtype, 0.0)?;
            self.builder.pad(canonical_input, zero, &config)?
        } else {
            canonical_input
        };
        let (source_type, canonical_kernel_type) = (self.ty(source)?, self.ty(canonical_kernel)?);
        let plain = ConvOptions {
            strides: geometry.strides.clone(),
            padding: geometry.padding.clone(),
            kernel_dilation: geometry.kernel_dilation.clone(),
            feature_group_size: options.feature_group_size,
            batch_group_size: options.batch_group_size,
            ..ConvOptions::default()
        };
        let plain_geometry =
            ConvGeometry::new(&source_type.shape, &canonical_kernel_type.shape, &plain)
                .map_err(|_| self.no_rule("conv", node))?;
        // At most one of the two is above 1 (the conv checked it).
        let groups = (options.feature_group_size, options.batch_group_size);
        let mut contributions = Vec::new();
        if want_input {
            let mut value = self.conv_input_gradient(
                canonical_gradient,
                canonical_kernel,
                &source_type,
                &plain_geometry,
                groups.0.max(groups.1),
            )?;
            if groups.1 > 1 {
                value = self.batch_groups_to_batch(value, &source_type.shape, groups.1)?;
            }
            if dilated {
                let strides: Vec<usize> = [1, 1].iter().chain(&dilation).copied().collect();
                let starts = vec![0; strides.len()];
                value = self
                    .builder
                    .slice(value, &starts, &source_type.shape, &strides)?;
            }
            let inverse = inverse_permutation(&geometry.input_permutation);
            contributions.push((input, self.permuted(value, &inverse)?));
        }
        if want_kernel {
            let value = self.conv_kernel_gradient(
                canonical_gradient,
                source,
                &canonical_kernel_type,
                &plain_geometry,
                groups,
            )?;
            let inverse = inverse_permutation(&geometry.kernel_permutation);
            contributions.push((kernel, self.permuted(value, &inverse)?));
        }
        Ok(contributions)
    }

    /// The input gradient of a batch-grouped conv comes out as [batch / groups, groups *
    /// channels, ...] (group `j`'s channels for image `i` of each block); the images of block
    /// `j` are images `j * batch / groups + i` of the input, so the group axis moves in front
    /// of the batch axis.
    fn batch_groups_to_batch(
        &mut self,
        value: NodeId,
        input_shape: &[usize],
        groups: usize,
    ) -> Result<NodeId> {
        let (batch, channels, spatial) = (input_shape[0], input_shape[1], &input_shape[2..]);
        let mut split = vec![batch / groups, groups, channels];
        split.extend(spatial);
        let split = self.builder.reshape(value, &split)?;
        let permutation: Vec<usize> = [1, 0, 2].into_iter().chain(3..3 + spatial.len()).collect();
        let moved = self.builder.transpose(split, &permutation)?;
        self.builder.reshape(moved, input_shape)
    }

    /// `value` transposed by `permutation`, or `value` itself for the identity.
    fn permuted(&mut self, value: NodeId, permutation: &[usize]) -> Result<NodeId> {
        if permutation
            .iter()
            .enumerate()
            .all(|(axis, &from)| axis == from)
        {
            Ok(value)
        } else {
            self.builder.transpose(value, permutation)
        }
    }

    /// d input of a plain convolution: the output gradient, dilated by the strides, convolved
    /// with the kernel flipped in space and with filters and channels swapped; the padding
    /// puts output position `y` back over the input positions it read. With `groups` feature
    /// (or batch) groups the swap stays inside each group and the gradient's conv keeps the
    /// groups as feature groups.
    fn conv_input_gradient(
        &mut self,
        gradient: NodeId,
        kernel: NodeId,
        input_type: &TensorType,
        geometry: &ConvGeometry,
        groups: usize,
    ) -> Result<NodeId> {
        let rank = input_type.shape.len();
        let kernel_shape = self.ty(kernel)?.shape;
        let swapped: Vec<usize> = [1, 0].into_iter().chain(2..rank).collect();
        let transposed = if groups == 1 {
            self.builder.transpose(kernel, &swapped)?
        } else {
            // [filters, channels per group, ...] seen as [groups, filters per group, channels
            // per group, ...]: swap the inner two so each group's channels become its filters.
            let filters = kernel_shape[0];
            let mut split = vec![groups, filters / groups];
            split.extend(&kernel_shape[1..]);
            let grouped = self.builder.reshape(kernel, &split)?;
            let inner_swap: Vec<usize> = [0, 2, 1].into_iter().chain(3..rank + 1).collect();
            let regrouped = self.builder.transpose(grouped, &inner_swap)?;
            let mut merged = vec![groups * kernel_shape[1], filters / groups];
            merged.extend(&kernel_shape[2..]);
            self.builder.reshape(regrouped, &merged)?
        };
        let spatial_axes: Vec<usize> = (2..rank).collect();
        let flipped = self.builder.reverse(transposed, &spatial_axes)?;
        let padding = (0..rank - 2)
            .map(|axis| {
                let (low, _) = geometry.padding[axis];
                let reach =
                    (kernel_shape[axis + 2] as i64 - 1) * geometry.kernel_dilation[axis] as i64;
                let input_size = input_type.shape[axis + 2] as i64;
                let covered =
                    (geometry.output_spatial[axis] as i64 - 1) * geometry.strides[axis] as i64;
                (reach - low, input_size - 1 + low - covered)
            })
            .collect();
        let options = ConvOptions {
            padding,
            input_dilation: geometry.strides.clone(),
            kernel_dilation: geometry.kernel_dilation.clone(),
            feature_group_size: groups,
            ..ConvOptions::default()
        };
        self.builder.conv(gradient, flipped, options)
    }

    /// d kernel of a plain convolution (feature groups become batch groups: channel group `g`,
    /// now a block of the batch, meets filter group `g`; batch groups become feature groups): images and channels swap roles (the input seen as
    /// [channels, batch, ...], the output gradient as [filters, batch, ...]), the strides
    /// become the kernel dilation and the kernel dilation the strides; the result
    /// [channels, filters, ...] is transposed back.
    fn conv_kernel_gradient(
        &mut self,
        gradient: NodeId,
        input: NodeId,
        kernel_type: &TensorType,
        geometry: &ConvGeometry,
        (feature_groups, batch_groups): (usize, usize),
    ) -> Result<NodeId> {
        let rank = kernel_type.shape.len();
        let input_shape = self.ty(input)?.shape;
        let swapped: Vec<usize> = [1, 0].into_iter().chain(2..rank).collect();
        let input_view = self.builder.transpose(input, &swapped)?;
        let gradient_view = self.builder.transpose(gradient, &swapped)?;
        let padding = (0..rank - 2)
            .map(|axis| {
                let (low, _) = geometry.padding[axis];
                let reach = (kernel_type.shape[axis + 2] as i64 - 1)
                    * geometry.kernel_dilation[axis] as i64;
                let covered =
                    (geometry.output_spatial[axis] as i64 - 1) * geometry.strides[axis] as i64;
                (
                    low,
                    reach + covered + 1 - input_shape[axis + 2] as i64 - low,
                )
            })
            .collect();
        let options = ConvOptions {
            strides: geometry.kernel_dilation.clone(),
            padding,
            kernel_dilation: geometry.strides.clone(),
            // Feature groups: channel group g (now a block of the batch) pairs with filter
            // group g. Batch groups: image block g (now a channel group) does.
            batch_group_size: feature_groups,
            feature_group_size: batch_groups,
            ..ConvOptions::default()
        };
        let product = self.builder.conv(input_view, gradient_view, options)?;
        self.builder.transpose(product, &swapped)
    }

    /// Transposes `value`, whose axis `k` stands for target axis `source[k]`, into target order.
    fn permuted_to_target_order(&mut self, value: NodeId, source: &[usize]) -> Result<NodeId> {
        self.permuted(value, &inverse_permutation(source))
    }
}

/// The axes of a `rank`-dimensional dot operand that are neither contracted nor batched, in
/// order.
fn free_axes(rank: usize, contract: &[usize], batch: &[usize]) -> Vec<usize> {
    (0..rank)
        .filter(|axis| !contract.contains(axis) && !batch.contains(axis))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::inverse_permutation;

    #[test]
    fn inverse_permutation_undoes_its_permutation() {
        let permutation = [2, 0, 3, 1];
        let inverse = inverse_permutation(&permutation);
        let composed: Vec<usize> = inverse.iter().map(|&axis| permutation[axis]).collect();
        assert_eq!(composed, [0, 1, 2, 3]);
        assert_ne!(
            inverse.to_vec(),
            permutation.to_vec(),
            "null arm: not the identity"
        );
    }
}
