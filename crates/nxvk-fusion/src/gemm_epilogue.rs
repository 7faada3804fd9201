//! GEMM epilogues: a `dot` or `conv` whose product only one elementwise kernel reads gets
//! that kernel's expression applied in the GEMM's store (`relu(x . w + b)`, `scale * (x .
//! w)`, a sigmoid, a convolution's per-channel bias and activation), so the whole thing is
//! one dispatch and the product is never written.
//!
//! Recognise: after planning, a `dot` or `conv` stage of an f32 or f64 product that is not
//! a graph output and that exactly one stage reads, an elementwise
//! kernel with one root of the product's shape that reads the product once, element for
//! element (no view). Its other leaves (a bias of shape `[N]` or `[M, 1]`, scalars, even a
//! full-size operand) are read in the store through their strides along C's batch, row and
//! column axes (`nxvk_kernels::dot_with_epilogue`; for `conv_with_epilogue` these are the
//! group, the filter within it, and image x output position). Anything else keeps its two
//! stages.
//!
//! Plan: the epilogue is the kernel's own `nx_element` function (`codegen.rs`), called on
//! the GEMM's stored value of each element instead of a load of it, so the fused result is
//! the unfused one bit for bit: the product is rounded to its type exactly where the
//! unfused GEMM stores it, then the same code computes the same ops.
//!
//! Run: whether the GEMM takes one tiled pass is decided when it runs (the autotuner's tile
//! configuration decides split-K, the device decides cooperative matrices; a convolution
//! whose output permutation is not the identity never does): when it does not, the catalog
//! returns the plain product and the stage runs the unfused kernel on it, as the plan
//! without epilogues would.

use crate::codegen::{Expression, OPAQUE_HELPERS, OPAQUE_WORD};
use crate::graph::{Graph, NodeId, Op};
use crate::plan::{FusedKernel, Stage, native_on};
use nxvk_core::{Capabilities, Result};
use nxvk_kernels::codegen::{storage_bytes, storage_type, store};
use nxvk_kernels::{Elem, GemmEpilogue};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// A `dot` or `conv` and the elementwise kernel that reads its product, as one stage.
#[derive(Debug)]
pub struct GemmEpilogueKernel {
    /// The `dot` or `conv` node (its value exists only while the unfused kernel runs).
    pub(crate) product: NodeId,
    /// The kernel of the plan without epilogues, run on the plain product when the GEMM
    /// takes no single tiled pass; its one root is this stage's result.
    pub(crate) unfused: FusedKernel,
    /// The product's slot among `unfused.leaves`.
    pub(crate) product_slot: usize,
    /// The GLSL the GEMM's store calls.
    pub(crate) epilogue: GemmEpilogue,
}

impl GemmEpilogueKernel {
    /// The result node.
    pub(crate) fn root(&self) -> NodeId {
        self.unfused.roots[0]
    }
}

/// The element type of a `dot` or `conv` product that can take an epilogue on this device:
/// f32 and f64. f16 and bf16 products keep their two stages: on the H200 a fused f16 product
/// ([10, 1] . [1, 1], plus a scalar bias, relu) differed from the unfused plan's.
fn real_float_product(graph: &Graph, capabilities: &Capabilities, id: NodeId) -> Option<Elem> {
    if !matches!(graph.node(id).op, Op::Dot { .. } | Op::Conv { .. }) {
        return None;
    }
    native_on(capabilities, graph.tensor_type(id).dtype)
        .filter(|elem| matches!(elem, Elem::F32 | Elem::F64))
}

/// Replaces each `dot` or `conv` stage whose product only an elementwise kernel reads,
/// element for element, by one epilogue stage at the kernel's place (every other leaf of the
/// kernel is computed by then). `reads` lists what a stage reads; `materialised` is the
/// planner's.
pub(crate) fn fuse_epilogues(
    graph: &Graph,
    capabilities: &Capabilities,
    stages: Vec<Stage>,
    materialised: &[bool],
    reads: impl Fn(&Stage) -> Vec<NodeId>,
) -> Result<Vec<Stage>> {
    let mut stages: Vec<Option<Stage>> = stages.into_iter().map(Some).collect();
    for index in 0..stages.len() {
        let Some(Stage::Node(product)) = stages[index] else {
            continue;
        };
        let Some(product_elem) = real_float_product(graph, capabilities, product) else {
            continue;
        };
        if graph.outputs().contains(&product) {
            continue;
        }
        let readers: Vec<usize> = stages
            .iter()
            .enumerate()
            .filter(|(_, stage)| {
                stage
                    .as_ref()
                    .is_some_and(|stage| reads(stage).contains(&product))
            })
            .map(|(reader, _)| reader)
            .collect();
        let [reader] = readers[..] else {
            continue;
        };
        let Some(Stage::Fused(fused)) = &stages[reader] else {
            continue;
        };
        let product_leaves: Vec<usize> = (0..fused.leaves.len())
            .filter(|&slot| fused.leaves[slot].node == product)
            .collect();
        let [product_slot] = product_leaves[..] else {
            continue;
        };
        let fits = fused.reduced_length.is_none()
            && fused.roots.len() == 1
            && fused.leaves[product_slot].path.is_empty()
            && fused.loop_shape == graph.tensor_type(product).shape;
        if !fits {
            continue;
        }
        // The kernel's expression again (the planner keeps only its leaves): the same roots
        // and leaves give the same statements.
        let roots = fused.roots.clone();
        let is_leaf = |node: NodeId| materialised[node.index()] && !roots.contains(&node);
        let expression = Expression::build(graph, &roots, &is_leaf)?;
        if expression.leaves != fused.leaves {
            continue;
        }
        let Some(output) = native_on(capabilities, graph.tensor_type(roots[0]).dtype) else {
            continue;
        };
        let epilogue = GemmEpilogue {
            functions: epilogue_functions(&expression, product_slot, product_elem, output),
            output,
            word: OPAQUE_WORD,
        };
        let Some(Stage::Fused(unfused)) = stages[reader].take() else {
            continue;
        };
        stages[index] = None;
        stages[reader] = Some(Stage::GemmEpilogue(GemmEpilogueKernel {
            product,
            unfused,
            product_slot,
            epilogue,
        }));
    }
    Ok(stages.into_iter().flatten().collect())
}

/// The GLSL of `nx_gemm_epilogue` (the contract of [`GemmEpilogue::functions`]): the
/// expression's helpers and `nx_element`, called with the GEMM's stored value for the
/// product's slot and every other leaf read at its batch, row and column strides.
fn epilogue_functions(
    expression: &Expression,
    product_slot: usize,
    product: Elem,
    output: Elem,
) -> String {
    let mut text = String::new();
    let loaded: BTreeSet<Elem> = expression.leaf_elems().iter().copied().collect();
    for elem in loaded {
        let _ = writeln!(
            text,
            "layout(buffer_reference, scalar, buffer_reference_align = {}) readonly buffer In_{} {{ {} v; }};",
            storage_bytes(elem),
            elem.name(),
            storage_type(elem)
        );
    }
    text.push_str(
        "layout(buffer_reference, scalar) readonly buffer Addresses { uint64_t v[]; };
layout(buffer_reference, scalar) readonly buffer Words { uint v[]; };
",
    );
    // The fused kernels' opaque identities, reading the GEMM's epilogue word.
    text.push_str(&OPAQUE_HELPERS.replace("push.opaque", "push.epilogue_word"));
    text.push_str(&expression.helper_blocks());
    text.push_str(&expression.element_function());
    // Operands (the leaves but the product) in slot order: the parameter block's order.
    let operands: Vec<usize> = (0..expression.leaves.len())
        .filter(|&slot| slot != product_slot)
        .collect();
    let _ = writeln!(
        text,
        "{} nx_gemm_epilogue({} value, uint batch, uint row, uint column) {{
    Addresses addresses = Addresses(push.epilogue);
    Words words = Words(push.epilogue + {}ul);",
        storage_type(output),
        storage_type(product),
        8 * operands.len()
    );
    for (operand, slot) in operands.iter().enumerate() {
        let _ = writeln!(
            text,
            "    uint idx{slot} = batch * words.v[{}u] + row * words.v[{}u] + column * words.v[{}u];",
            3 * operand,
            3 * operand + 1,
            3 * operand + 2
        );
    }
    let call = expression.call(
        |slot, elem| match operands.iter().position(|&s| s == slot) {
            Some(operand) => format!(
                "In_{}(addresses.v[{operand}] + uint64_t(idx{slot}) * {}ul).v",
                elem.name(),
                storage_bytes(elem)
            ),
            None => "value".to_owned(),
        },
    );
    let _ = writeln!(
        text,
        "    {call}\n    return {};\n}}",
        store(output, "result0")
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphBuilder;
    use crate::graph::DotAxes;
    use nxvk_core::DType;
    use nxvk_kernels::BinaryOp;

    /// relu(x . w + b) for b of shape [N]: the product is the call's `value`, the bias is read
    /// at its row and column strides, and the result is stored as f32.
    #[test]
    fn the_epilogue_reads_the_product_from_the_store_and_the_bias_from_memory() {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[3, 4]).unwrap();
        let w = builder.parameter(DType::F32, &[4, 5]).unwrap();
        let bias = builder.parameter(DType::F32, &[5]).unwrap();
        let axes = DotAxes::matrix_product();
        let product = builder.dot(x, w, axes).unwrap();
        let shifted = builder.binary(BinaryOp::Add, product, bias).unwrap();
        let zero = builder.constant(DType::F32, 0.0).unwrap();
        let out = builder.binary(BinaryOp::Max, shifted, zero).unwrap();
        let graph = builder.finish(&[out]).unwrap();
        let is_leaf = |node: NodeId| node == product || node == bias;
        let expression = Expression::build(&graph, &[out], &is_leaf).unwrap();
        let slot = |node: NodeId| {
            expression
                .leaves
                .iter()
                .position(|leaf| leaf.node == node)
                .unwrap()
        };
        let (product_slot, bias_slot) = (slot(product), slot(bias));
        let text = epilogue_functions(&expression, product_slot, Elem::F32, Elem::F32);
        assert!(
            text.contains(
                "float nx_gemm_epilogue(float value, uint batch, uint row, uint column) {"
            )
        );
        assert!(text.contains(&format!(
            "uint idx{bias_slot} = batch * words.v[0u] + row * words.v[1u] + column * words.v[2u];"
        )));
        assert!(text.contains(&format!(
            "In_f32(addresses.v[0] + uint64_t(idx{bias_slot}) * 4ul).v"
        )));
        assert!(text.contains("return float(result0);"));
        assert!(text.contains("push.epilogue_word"));
        assert!(!text.contains("push.opaque"));
        // One operand's strides: the words start after one address.
        assert!(text.contains("Words(push.epilogue + 8ul)"));
        assert_eq!(text.matches("nx_element(").count(), 2);
        assert_ne!(product_slot, bias_slot);
    }
}
