//! GLSL for fused kernels, built from the op table's expressions.
//!
//! A fused kernel evaluates an elementwise expression DAG per element of its *loop shape*. Each
//! node becomes one SSA temporary (a subexpression is computed once per element, however many
//! users it has in the kernel); the temporaries are `precise`, so the compiler cannot contract
//! a multiply of one op into the add of the next, which the eager path (one op per kernel,
//! stored in between) never does. Each value is rounded through its storage type exactly where
//! the eager path stores it (f16, bf16, 8- and 16-bit integers), and operands are cast to each
//! op's compute type with the catalog's own cast functions: this is what makes fused results
//! equal eager ones bit for bit.
//!
//! The op table's helpers are written against per-type macros (`T`, `BITS`, ...), so a kernel
//! mixing types includes them once per compute type, each copy renamed with the type's name
//! (`nx_exp` becomes `nxf32_exp`); rejected alternative: one kernel per type combination
//! from the catalog, which would cost a dispatch per type change.
//!
//! Leaves (tensors the kernel reads) are addressed like the catalog's kernels: 64-bit device
//! addresses from a parameter block, 32-bit element indices from either a linear stride (when
//! the loop and every leaf simplify to one axis) or shape and per-leaf strides (any rank).

use crate::graph::{Graph, NodeId, Op};
use crate::view::{ViewPath, ViewStep};
use nxvk_core::{DType, Error, Result};
use nxvk_kernels::ReduceOp;
use nxvk_kernels::catalog::elem_of;
use nxvk_kernels::codegen::{
    BF16_HELPERS, F64_MATH, F64_MATH_PRELUDE, FLOAT_CONTROLS, HELPERS, WORKGROUP_SIZE,
    cast_function, compute_type, load, needs_f64_math, output_elem, storage_bytes, storage_type,
    store, type_defines,
};
use nxvk_kernels::op_table::expression;
use nxvk_kernels::reduce::{Accumulation, accumulator_elem, fold};
use nxvk_kernels::types::{binary_types, unary_types};
use nxvk_kernels::{BinaryOp, Elem, UnaryOp};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// A function a kernel needs inside the helper block of one compute type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// A cast from the block's type to this one.
    Cast(Elem),
}

/// What a fused expression reads: one leaf tensor seen through a view path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeafAccess {
    pub node: NodeId,
    pub path: ViewPath,
}

/// The elementwise part of a fused kernel: SSA statements computing the roots per element.
#[derive(Debug, Default)]
pub(crate) struct Expression {
    pub leaves: Vec<LeafAccess>,
    /// Statements, in order, reading `idx<k>` (the element index of leaf `k`).
    pub statements: String,
    /// The temporary holding each root's value (in the root's compute type).
    pub root_values: Vec<String>,
    needs: BTreeMap<Elem, BTreeSet<Need>>,
    /// Storage types read through buffer references.
    loaded: BTreeSet<Elem>,
    /// For a function body: the GLSL argument each parameter node reads (not a memory load).
    arguments: Vec<String>,
}

fn native(op: &'static str, dtype: DType) -> Result<Elem> {
    elem_of(dtype).ok_or_else(|| Error::Unsupported {
        op,
        dtype,
        detail: "fused kernels take native dtypes only".into(),
    })
}

/// Where a value goes from its own shape to its user's: a right-aligned broadcast when the
/// shapes differ.
fn lift(path: &ViewPath, from: &[usize], to: &[usize]) -> ViewPath {
    if from == to {
        return path.clone();
    }
    let mut lifted = vec![ViewStep::broadcast_to(from.len(), to)];
    lifted.extend(path.iter().cloned());
    lifted
}

fn missing(node: NodeId) -> Error {
    Error::BadOperands {
        op: "fused kernel",
        shapes: Vec::new(),
        dtypes: Vec::new(),
        detail: format!(
            "node {} was not emitted before its user (codegen bug)",
            node.index()
        ),
    }
}

/// The (operand, path) pairs the value of `node` seen through `path` is computed from: none
/// for leaves and constants; elementwise operands lifted to the node's shape; a view's input
/// seen through the view, then `path`.
fn operand_keys(
    graph: &Graph,
    is_leaf: &dyn Fn(NodeId) -> bool,
    node: &NodeId,
    path: &ViewPath,
) -> Vec<(NodeId, ViewPath)> {
    if is_leaf(*node) {
        return Vec::new();
    }
    let op = &graph.node(*node).op;
    let shape = &graph.tensor_type(*node).shape;
    match op {
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::AsType { .. }
        | Op::Select { .. }
        | Op::Clip { .. }
        | Op::Metadata { .. } => op
            .operands()
            .into_iter()
            .map(|id| (id, lift(path, &graph.tensor_type(id).shape, shape)))
            .collect(),
        _ => match ViewStep::of(op, shape) {
            Some(step) => {
                let mut inner = vec![step];
                inner.extend(path.iter().cloned());
                vec![(op.operands()[0], inner)]
            }
            None => Vec::new(),
        },
    }
}

/// The GLSL literal of one element (`bytes`, little-endian) in the compute type of `elem`.
fn literal(elem: Elem, bytes: &[u8]) -> String {
    let mut word = [0u8; 8];
    word[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
    let bits = u64::from_le_bytes(word);
    let signed = |width: u32| {
        let shift = 64 - width;
        ((bits << shift) as i64) >> shift
    };
    match elem {
        Elem::F32 => format!("uintBitsToFloat(0x{bits:08x}u)"),
        Elem::F64 => format!(
            "packDouble2x32(uvec2(0x{:08x}u, 0x{:08x}u))",
            bits as u32,
            bits >> 32
        ),
        Elem::F16 => format!("unpackHalf2x16(0x{bits:04x}u).x"),
        Elem::BF16 => format!("nx_bf16_to_f32(uint16_t(0x{bits:04x}u))"),
        Elem::S8 | Elem::S16 | Elem::S32 => {
            format!("int(0x{:08x}u)", signed(elem.bits()) as u32)
        }
        Elem::U8 | Elem::U16 | Elem::U32 => format!("{bits}u"),
        Elem::S64 => format!("int64_t(0x{bits:016x}ul)"),
        Elem::U64 => format!("0x{bits:016x}ul"),
    }
}

/// `value` (compute type of `elem`) rounded through the storage type, where that changes it.
fn rounded(elem: Elem, value: &str) -> String {
    match elem {
        Elem::F16 | Elem::BF16 | Elem::S8 | Elem::S16 | Elem::U8 | Elem::U16 => {
            load(elem, &store(elem, value))
        }
        _ => value.to_owned(),
    }
}

fn unary_function(op: UnaryOp, elem: Elem) -> String {
    format!("nxop_{}_{}", op.name(), elem.name())
}

fn binary_function(op: BinaryOp, elem: Elem) -> String {
    format!("nxop_{}_{}", op.name(), elem.name())
}

fn cast_name(from: Elem, to: Elem) -> String {
    format!("nxcast_{}_{}", from.name(), to.name())
}

/// Helper text renamed for the block of `elem` (`nx_exp` -> `nxf32_exp`, `NX_PI` -> `NXF32_PI`).
fn renamed(text: &str, elem: Elem) -> String {
    let lower = elem.name();
    let upper = lower.to_uppercase();
    text.replace("nx_", &format!("nx{lower}_"))
        .replace("NX_", &format!("NX{upper}_"))
}

impl Expression {
    /// The SSA variable of `node` seen through `path`, emitting what it needs. Iterative (a
    /// 1000-op chain is 1000 levels deep): operands are emitted before their users.
    fn value(
        &mut self,
        graph: &Graph,
        is_leaf: &dyn Fn(NodeId) -> bool,
        memo: &mut HashMap<(NodeId, ViewPath), String>,
        node: NodeId,
        path: ViewPath,
    ) -> Result<String> {
        let root = (node, path);
        let mut stack = vec![(root.clone(), false)];
        while let Some((key, operands_done)) = stack.pop() {
            if memo.contains_key(&key) {
                continue;
            }
            let operands = operand_keys(graph, is_leaf, &key.0, &key.1);
            if operands_done || operands.iter().all(|operand| memo.contains_key(operand)) {
                self.emit(graph, is_leaf, memo, key)?;
            } else {
                stack.push((key, true));
                stack.extend(operands.into_iter().map(|operand| (operand, false)));
            }
        }
        memo.get(&root).cloned().ok_or_else(|| missing(root.0))
    }

    /// Emits the SSA variable of `key`, whose operands are already in `memo`.
    fn emit(
        &mut self,
        graph: &Graph,
        is_leaf: &dyn Fn(NodeId) -> bool,
        memo: &mut HashMap<(NodeId, ViewPath), String>,
        key: (NodeId, ViewPath),
    ) -> Result<()> {
        let (node, path) = key.clone();
        let entry = graph.node(node);
        let tensor = graph.tensor_type(node);
        let name_of_op = entry.op.name();
        let elem = native(name_of_op, tensor.dtype)?;
        let shape = &tensor.shape;
        let operand = |_: &mut Self, memo: &mut HashMap<(NodeId, ViewPath), String>, id: NodeId| {
            let operand_shape = &graph.tensor_type(id).shape;
            let lifted = lift(&path, operand_shape, shape);
            let value = memo
                .get(&(id, lifted))
                .cloned()
                .ok_or_else(|| missing(id))?;
            let elem = native(name_of_op, graph.tensor_type(id).dtype)?;
            Ok::<_, Error>((value, elem))
        };
        let argument = match entry.op {
            Op::Parameter { index } => self.arguments.get(index).cloned(),
            _ => None,
        };
        let expression = if let Some(argument) = argument {
            argument
        } else if is_leaf(node) {
            let slot = self.leaves.len();
            self.leaves.push(LeafAccess {
                node,
                path: path.clone(),
            });
            self.loaded.insert(elem);
            load(
                elem,
                &format!(
                    "In_{name}(in{slot} + uint64_t(idx{slot}) * {bytes}ul).v",
                    name = elem.name(),
                    bytes = storage_bytes(elem)
                ),
            )
        } else {
            match &entry.op {
                Op::Constant { element } => literal(elem, element),
                Op::Unary { op, input } => {
                    let (value, from) = operand(self, memo, *input)?;
                    let types = unary_types(*op, dtype_of_elem(from), shape)?;
                    let compute = native(name_of_op, types.compute)?;
                    let argument = self.cast(value, from, compute);
                    self.need(compute, Need::Unary(*op));
                    rounded(
                        elem,
                        &format!("{}({argument})", unary_function(*op, compute)),
                    )
                }
                Op::Binary { op, left, right } => {
                    let (a, a_elem) = operand(self, memo, *left)?;
                    let (b, b_elem) = operand(self, memo, *right)?;
                    let types =
                        binary_types(*op, dtype_of_elem(a_elem), dtype_of_elem(b_elem), &[])?;
                    let compute = native(name_of_op, types.compute)?;
                    let a = self.cast(a, a_elem, compute);
                    let b = self.cast(b, b_elem, compute);
                    self.need(compute, Need::Binary(*op));
                    rounded(
                        elem,
                        &format!("{}({a}, {b})", binary_function(*op, compute)),
                    )
                }
                Op::AsType { input } => {
                    let (value, from) = operand(self, memo, *input)?;
                    rounded(elem, &self.cast(value, from, elem))
                }
                Op::Select {
                    predicate,
                    on_true,
                    on_false,
                } => {
                    let (p, p_elem) = operand(self, memo, *predicate)?;
                    let (t, t_elem) = operand(self, memo, *on_true)?;
                    let (f, f_elem) = operand(self, memo, *on_false)?;
                    let t = self.cast(t, t_elem, elem);
                    let f = self.cast(f, f_elem, elem);
                    format!("({p} != {}(0)) ? {t} : {f}", compute_type(p_elem))
                }
                Op::Clip { input, min, max } => {
                    let (x, x_elem) = operand(self, memo, *input)?;
                    let (low, low_elem) = operand(self, memo, *min)?;
                    let (high, high_elem) = operand(self, memo, *max)?;
                    let x = self.cast(x, x_elem, elem);
                    let low = self.cast(low, low_elem, elem);
                    let high = self.cast(high, high_elem, elem);
                    self.need(elem, Need::Binary(BinaryOp::Max));
                    self.need(elem, Need::Binary(BinaryOp::Min));
                    format!(
                        "{}({}({x}, {low}), {high})",
                        binary_function(BinaryOp::Min, elem),
                        binary_function(BinaryOp::Max, elem)
                    )
                }
                Op::Metadata { input, .. } => operand(self, memo, *input)?.0,
                op => {
                    let step = ViewStep::of(op, shape).ok_or_else(|| Error::Unsupported {
                        op: name_of_op,
                        dtype: tensor.dtype,
                        detail: "not an elementwise or view op (planner bug)".into(),
                    })?;
                    let input = op.operands()[0];
                    let mut inner = vec![step];
                    inner.extend(path.iter().cloned());
                    let value = memo
                        .get(&(input, inner))
                        .cloned()
                        .ok_or_else(|| missing(input))?;
                    memo.insert(key, value);
                    return Ok(());
                }
            }
        };
        let name = format!("v{}", memo.len());
        // Computed values pass through `nx_opaque`, as eager ones pass through memory.
        let expression = if is_leaf(node) {
            expression
        } else {
            format!("nx_opaque({expression})")
        };
        let _ = writeln!(
            self.statements,
            "        precise {} {name} = {expression};",
            compute_type(elem)
        );
        memo.insert(key, name);
        Ok(())
    }

    fn need(&mut self, elem: Elem, need: Need) {
        self.needs.entry(elem).or_default().insert(need);
    }

    /// `value` of compute type `from` cast to `to` with Nx's rules.
    fn cast(&mut self, value: String, from: Elem, to: Elem) -> String {
        if from == to {
            return value;
        }
        self.need(from, Need::Cast(to));
        // The eager path stores the cast operand in its type before the op reads it.
        rounded(to, &format!("{}({value})", cast_name(from, to)))
    }

    /// Builds the expression of `roots` (all of one loop shape); `is_leaf` says which nodes are
    /// read from memory rather than computed.
    pub(crate) fn build(
        graph: &Graph,
        roots: &[NodeId],
        is_leaf: &dyn Fn(NodeId) -> bool,
    ) -> Result<Expression> {
        Expression::default().with_roots(graph, roots, is_leaf)
    }

    /// Builds the body of a function of `graph`'s parameters: parameter `i` is the GLSL
    /// value `arguments[i]` (of its compute type), and the roots are the graph's outputs.
    pub(crate) fn build_function(graph: &Graph, arguments: &[String]) -> Result<Expression> {
        let expression = Expression {
            arguments: arguments.to_vec(),
            ..Expression::default()
        };
        let is_parameter = |node: NodeId| matches!(graph.node(node).op, Op::Parameter { .. });
        expression.with_roots(graph, graph.outputs(), &is_parameter)
    }

    fn with_roots(
        mut self,
        graph: &Graph,
        roots: &[NodeId],
        is_leaf: &dyn Fn(NodeId) -> bool,
    ) -> Result<Expression> {
        let mut memo = HashMap::new();
        for &root in roots {
            let value = self.value(graph, is_leaf, &mut memo, root, Vec::new())?;
            self.root_values.push(value);
        }
        Ok(self)
    }

    /// Helper blocks (one per compute type used), buffer types and the address/index
    /// preamble shared by every template.
    pub(crate) fn declarations(&self, stored: &BTreeSet<Elem>) -> String {
        let mut text = String::from(FLOAT_CONTROLS);
        text.push_str(BF16_HELPERS);
        for elem in &self.loaded {
            let _ = writeln!(
                text,
                "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer In_{name} {{ {storage} v; }};",
                bytes = storage_bytes(*elem),
                name = elem.name(),
                storage = storage_type(*elem)
            );
        }
        for elem in stored {
            let _ = writeln!(
                text,
                "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Out_{name} {{ {storage} v; }};",
                bytes = storage_bytes(*elem),
                name = elem.name(),
                storage = storage_type(*elem)
            );
        }
        text.push_str(
            "layout(buffer_reference, scalar) readonly buffer Addresses { uint64_t v[]; };
layout(buffer_reference, scalar) readonly buffer Words { uint v[]; };
",
        );
        text.push_str(&self.helper_blocks());
        text
    }

    /// The op functions and casts the statements call, one renamed helper block per compute
    /// type (no extensions or buffer types: a host shader that has its own includes these).
    pub(crate) fn helper_blocks(&self) -> String {
        let mut text = String::new();
        for (elem, needs) in &self.needs {
            text.push_str(&type_defines(*elem));
            // Casts' extra helpers, then each op's function, all before they are included.
            let mut extras = BTreeSet::new();
            let mut functions = String::new();
            for need in needs {
                let function = match need {
                    Need::Unary(op) => {
                        op_function(&op.spec(), 1, *elem, &unary_function(*op, *elem))
                    }
                    Need::Binary(op) => {
                        op_function(&op.spec(), 2, *elem, &binary_function(*op, *elem))
                    }
                    Need::Cast(to) => {
                        let (function, extra) = cast_function(*elem, *to);
                        extras.insert(extra);
                        function.replace("nx_apply", &cast_name(*elem, *to))
                    }
                };
                functions.push_str(&function);
                functions.push('\n');
            }
            // The f64 library only where a function calls it, as the catalog does (its tables
            // would put the Float64 capability into every kernel).
            if needs_f64_math(&functions) {
                text.push_str(&renamed(F64_MATH_PRELUDE, *elem));
                text.push_str(&renamed(F64_MATH, *elem));
            }
            text.push_str(&renamed(HELPERS, *elem));
            for extra in extras {
                text.push_str(&renamed(extra, *elem));
            }
            text.push_str(&renamed(&functions, *elem));
            text.push_str(
                "#undef T\n#undef BITS\n#undef MASK32\n#undef SIGNED\n#undef IS_FLOAT\n#undef IS_F64\n",
            );
        }
        text
    }

    /// Statements computing `idx<k>` for every leaf from the element index `index`: linear
    /// strides when `push.rank` is 0, else shape and strides from the words.
    fn indices(&self) -> String {
        let n = self.leaves.len();
        let mut text = String::new();
        for slot in 0..n {
            let _ = writeln!(text, "        uint idx{slot} = index * lin{slot};");
        }
        if n > 0 {
            text.push_str("        if (push.rank != 0u) {\n            uint rest = index;\n");
            for slot in 0..n {
                let _ = writeln!(text, "            idx{slot} = 0u;");
            }
            let _ = writeln!(
                text,
                "            for (uint axis = push.rank; axis > 0u; axis--) {{
                uint size = words.v[{n}u + axis - 1u];
                uint coordinate = rest % size;
                rest /= size;"
            );
            for slot in 0..n {
                let _ = writeln!(
                    text,
                    "                idx{slot} += coordinate * words.v[{n}u + {}u * push.rank + axis - 1u];",
                    slot + 1
                );
            }
            text.push_str("            }\n        }\n");
        }
        text
    }

    /// Loads of leaf addresses and linear strides, before the element loop.
    fn preamble(&self, n_outputs: usize) -> String {
        let n = self.leaves.len();
        let mut text = format!(
            "    Addresses addresses = Addresses(push.params);\n    Words words = Words(push.params + {}ul);\n",
            8 * (n + n_outputs)
        );
        for slot in 0..n {
            let _ = writeln!(text, "    uint64_t in{slot} = addresses.v[{slot}];");
            let _ = writeln!(text, "    uint lin{slot} = words.v[{slot}];");
        }
        for output in 0..n_outputs {
            let _ = writeln!(
                text,
                "    uint64_t out{output} = addresses.v[{}];",
                n + output
            );
        }
        text
    }
}

/// The op table's expression for `spec` on `elem` as a function named `name`.
fn op_function(spec: &nxvk_kernels::OpSpec, arity: usize, elem: Elem, name: &str) -> String {
    // The planner only fuses ops whose expression exists; the fallback keeps this total.
    let body = expression(spec, elem).unwrap_or("T(0)");
    let output = compute_type(output_elem(spec, elem).unwrap_or(elem));
    let parameters = if arity == 2 { "T a, T b" } else { "T a" };
    // `precise` marks the op's own arithmetic exact once inlined: `a - b` of one value with
    // itself must stay NaN for NaN and infinity, as it is in the eager kernel, which cannot
    // see that its two loads are equal (lavapipe folded it to 0 without this).
    format!(
        "{output} {name}({parameters}) {{ precise {output} result = {output}({body}); return result; }}"
    )
}

fn dtype_of_elem(elem: Elem) -> DType {
    nxvk_kernels::dtype_of(elem)
}

/// Push constants of every fused kernel: the parameter block's address, the element (or row)
/// count, the rank (0: linear strides), for reductions the elements reduced per row, and
/// [`OPAQUE_WORD`].
pub(crate) const FUSED_PUSH_CONSTANT_BYTES: usize = 24;

/// The run-time word behind `nx_opaque`: shifted left by one it is zero, which the compiler
/// cannot know.
pub(crate) const OPAQUE_WORD: u32 = 0x8000_0000;

pub(crate) const PUSH_BLOCK: &str = "layout(push_constant, scalar) uniform Push { uint64_t params; uint count; uint rank; uint reduced; uint opaque; } push;\n";

/// Identity functions the compiler cannot see through, applied to every computed value. The
/// eager path runs each op in its own kernel, so no op ever sees what another op computed;
/// inside one kernel the compiler would fold constants and known results (`is_nan` of an
/// integer is 0) into the next op, which is not always exact, and lavapipe (Mesa 22.3) even
/// drops the output store of a kernel whose float division by a zero it could prove (`x / 0.0`
/// wrote nothing). Bitwise (an XOR with a run-time zero, one integer instruction), so
/// denormals and NaN payloads pass unchanged.
pub(crate) const OPAQUE_HELPERS: &str = "uint nx_opaque_zero() { return push.opaque << 1u; }
float nx_opaque(float x) { return uintBitsToFloat(floatBitsToUint(x) ^ nx_opaque_zero()); }
double nx_opaque(double x) { return packDouble2x32(unpackDouble2x32(x) ^ uvec2(nx_opaque_zero())); }
int nx_opaque(int x) { return x ^ int(nx_opaque_zero()); }
uint nx_opaque(uint x) { return x ^ nx_opaque_zero(); }
int64_t nx_opaque(int64_t x) { return x ^ int64_t(nx_opaque_zero()); }
uint64_t nx_opaque(uint64_t x) { return x ^ uint64_t(nx_opaque_zero()); }
";

/// The whole shader of an elementwise kernel writing `roots` (their elems `outputs`)
/// contiguously over the loop.
pub(crate) fn elementwise_shader(expression: &Expression, outputs: &[Elem]) -> String {
    let stored: BTreeSet<Elem> = outputs.iter().copied().collect();
    let mut shader = expression.declarations(&stored);
    shader.push_str(PUSH_BLOCK);
    shader.push_str(OPAQUE_HELPERS);
    let _ = write!(
        shader,
        "layout(local_size_x = {WORKGROUP_SIZE}) in;
void main() {{
{preamble}    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
{indices}{statements}",
        preamble = expression.preamble(outputs.len()),
        indices = expression.indices(),
        statements = expression.statements,
    );
    for (output, (elem, value)) in outputs.iter().zip(&expression.root_values).enumerate() {
        let _ = writeln!(
            shader,
            "        Out_{name}(out{output} + uint64_t(index) * {bytes}ul).v = {stored};",
            name = elem.name(),
            bytes = storage_bytes(*elem),
            stored = store(*elem, value)
        );
    }
    shader.push_str("    }\n}\n");
    shader
}

/// The shader of `op` over the trailing `push.reduced` elements of each row of the loop, with
/// `expression` (one root, of type `input`) as its prologue: one workgroup folds one row
/// (a grid-stride loop over rows), each invocation a strided part of it, then a shared-memory
/// tree. Rows are contiguous in the loop's row-major order, so `index = row * reduced + j`.
pub(crate) fn reduce_shader(expression: &Expression, op: ReduceOp, input: Elem) -> String {
    let accumulator = accumulator_elem(op, input, Accumulation::Native);
    let value_type = compute_type(accumulator);
    let (identity, combine) = fold(op, value_type, input.is_float());
    let root = &expression.root_values[0];
    let element = match op {
        ReduceOp::All | ReduceOp::Any => {
            format!("(({root}) != {}(0)) ? 1u : 0u", compute_type(input))
        }
        _ => format!("V({root})"),
    };
    let stored: BTreeSet<Elem> = [accumulator].into_iter().collect();
    let mut shader = expression.declarations(&stored);
    shader.push_str(PUSH_BLOCK);
    shader.push_str(OPAQUE_HELPERS);
    let half = WORKGROUP_SIZE / 2;
    let _ = write!(
        shader,
        "#define V {value_type}
layout(local_size_x = {WORKGROUP_SIZE}) in;
shared V partial[{WORKGROUP_SIZE}];
V nx_fold(V a, V b) {{ return {combine}; }}
void main() {{
{preamble}    uint local = gl_LocalInvocationID.x;
    for (uint row = gl_WorkGroupID.x; row < push.count; row += gl_NumWorkGroups.x) {{
        V value = {identity};
        for (uint part = local; part < push.reduced; part += {WORKGROUP_SIZE}u) {{
        uint index = row * push.reduced + part;
{indices}{statements}        value = nx_fold(value, {element});
        }}
        partial[local] = value;
        barrier();
        for (uint half_size = {half}u; half_size > 0u; half_size >>= 1u) {{
            if (local < half_size) partial[local] = nx_fold(partial[local], partial[local + half_size]);
            barrier();
        }}
        if (local == 0u) Out_{name}(out0 + uint64_t(row) * {bytes}ul).v = {store};
        barrier();
    }}
}}
",
        preamble = expression.preamble(1),
        indices = expression.indices(),
        statements = expression.statements,
        name = accumulator.name(),
        bytes = storage_bytes(accumulator),
        store = store(accumulator, "partial[0]"),
    );
    shader
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphBuilder;
    use nxvk_core::DType;

    /// exp(x) used three times: `e * e + e`, and (`twice`) a second, separate exp node.
    fn shader(twice: bool) -> String {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[8]).unwrap();
        let e = builder.unary(UnaryOp::Exp, x).unwrap();
        let other = if twice {
            builder.unary(UnaryOp::Exp, x).unwrap()
        } else {
            e
        };
        let square = builder.binary(BinaryOp::Multiply, e, other).unwrap();
        let out = builder.binary(BinaryOp::Add, square, e).unwrap();
        let graph = builder.finish(&[out]).unwrap();
        let is_leaf = |node: NodeId| node == x;
        let expression = Expression::build(&graph, &[out], &is_leaf).unwrap();
        assert_eq!(expression.leaves.len(), 1);
        elementwise_shader(&expression, &[Elem::F32])
    }

    fn main_body(shader: &str) -> &str {
        &shader[shader.find("void main()").unwrap()..]
    }

    #[test]
    fn a_shared_subexpression_is_computed_once() {
        let shader = shader(false);
        let body = main_body(&shader);
        assert_eq!(body.matches("nxop_exp_f32(").count(), 1);
        assert_eq!(body.matches("Out_f32(").count(), 1);
        // Data is addressed with 64-bit byte offsets, never 32-bit array indices.
        assert!(body.contains("In_f32(in0 + uint64_t(idx0) * 4ul)"));
        assert!(!body.contains("v[index]"));
        // Null arm: two exp nodes are two computations.
        assert_eq!(
            main_body(&shader_twice()).matches("nxop_exp_f32(").count(),
            2
        );
    }

    fn shader_twice() -> String {
        shader(true)
    }

    #[test]
    fn helpers_are_renamed_per_type() {
        let renamed = renamed("T nx_min(T a) { return NX_PI; }", Elem::S8);
        assert_eq!(renamed, "T nxs8_min(T a) { return NXS8_PI; }");
    }

    #[test]
    fn literals_keep_every_bit() {
        assert_eq!(
            literal(Elem::F32, &1.5f32.to_le_bytes()),
            "uintBitsToFloat(0x3fc00000u)"
        );
        assert_eq!(literal(Elem::S8, &[0xFF]), "int(0xffffffffu)");
        assert_eq!(
            literal(Elem::S32, &i32::MIN.to_le_bytes()),
            "int(0x80000000u)"
        );
        assert_eq!(
            literal(Elem::F64, &(-0.0f64).to_le_bytes()),
            "packDouble2x32(uvec2(0x00000000u, 0x80000000u))"
        );
        assert_eq!(
            literal(Elem::U64, &u64::MAX.to_le_bytes()),
            "0xfffffffffffffffful"
        );
    }
}
