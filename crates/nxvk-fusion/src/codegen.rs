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
//!
//! The expression is one GLSL function, `nx_element`, taking each leaf's stored value and
//! returning each root's value; the templates only decide where the leaves come from. Besides
//! that generic element loop, every kernel has a *packet* path (`push.rank` =
//! [`PACKET_RANK`]), taken when the executor finds the loop made of rows in which every leaf
//! is either contiguous from a packet-aligned address or constant (a scalar, or a per-row
//! value such as softmax's row maximum): each invocation loads four elements with one vector
//! access per leaf (as the catalog's dense kernels do: `dense_codegen.rs`) and evaluates
//! `nx_element` per lane, so both paths compute every element with the same code and agree
//! bit for bit. Leaf element `column` of row `row` sits at `row * kept + column * streamed`
//! elements from the leaf's address (`kept` and `streamed` being per-leaf words).

use crate::graph::{Graph, NodeId, Op};
use crate::view::{ViewPath, ViewStep};
use nxvk_core::{DType, Error, Result};
use nxvk_kernels::ReduceOp;
use nxvk_kernels::catalog::elem_of;
use nxvk_kernels::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, HELPERS, WORKGROUP_SIZE, cast_function, compute_type, f64_math,
    f64_math_include, load, output_elem, storage_bytes, storage_type, store, type_defines,
};
use nxvk_kernels::op_table::expression;
use nxvk_kernels::reduce::{Accumulation, accumulator_elem, fold};
use nxvk_kernels::types::{binary_types, unary_types};
use nxvk_kernels::{
    BinaryOp, Elem, PACKET_ELEMENTS, PACKETS_PER_ITERATION, UnaryOp, packet_bytes, packet_type,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// A function a kernel needs inside the helper block of one compute type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// A cast from the block's type to this one.
    Cast(Elem),
    /// f32 division by a divisor the whole row shares through its reciprocal
    /// (`nx_shared_reciprocal`, `nx_div_by_shared`).
    SharedDivide,
}

/// A row program's reduction result, which a GLSL variable holds once the program's first
/// `reductions_done` reductions are folded.
#[derive(Debug, Clone)]
pub(crate) struct Register {
    pub name: String,
    pub reductions_done: usize,
}

/// A row program's statement whose value every element of a row shares, computed once per
/// row into a module variable as soon as the reductions it reads are folded.
#[derive(Debug)]
struct UniformStatement {
    reductions_done: usize,
    declaration: String,
    assignment: String,
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
    /// The element type of each leaf and of each root.
    leaf_elems: Vec<Elem>,
    root_elems: Vec<Elem>,
    needs: BTreeMap<Elem, BTreeSet<Need>>,
    /// Storage types read through buffer references.
    loaded: BTreeSet<Elem>,
    /// For a function body: the GLSL argument each parameter node reads (not a memory load).
    arguments: Vec<String>,
    /// For a row program: nodes whose stored value a GLSL variable holds (a row's reduction
    /// result), read instead of memory.
    registers: HashMap<NodeId, Register>,
    /// Each (node, path) read from `registers`, for the planner to check the path.
    pub register_reads: Vec<(NodeId, ViewPath)>,
    /// For a row program: nodes (read along the loop, no view) whose value a caller may pass
    /// in instead, slot by slot (`nx_have_held<slot>`, `nx_held<slot>`): an earlier phase
    /// computed it and kept it in registers.
    held: Vec<NodeId>,
    held_elems: Vec<Elem>,
    /// For a row program: compute each value every element of a row shares (registers,
    /// constants and what is computed from them alone) once per row, in `uniform_statements`,
    /// rather than in `nx_element` (NVIDIA's compiler does not hoist them out of the element
    /// loop: layer norm's square root and divisions, log_softmax's logarithm).
    hoists_row_uniform: bool,
    /// Divide f32 values by a divisor every element of a row shares through its f64
    /// reciprocal (one per row, a uniform statement): set for row programs on devices with f64.
    shared_divisors: bool,
    /// The SSA variables whose value is the same for every element of a row, with the number
    /// of reductions they wait for.
    row_uniform: HashMap<String, usize>,
    uniform_statements: Vec<UniformStatement>,
    /// The reciprocal variable of each shared divisor (by its GLSL value).
    reciprocals: HashMap<String, String>,
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
        // Integer arithmetic, which no compiler may fold away (see `nx_round_f16`).
        Elem::F16 => format!("nx_round_f16({value})"),
        Elem::BF16 | Elem::S8 | Elem::S16 | Elem::U8 | Elem::U16 => load(elem, &store(elem, value)),
        _ => value.to_owned(),
    }
}

fn unary_function(op: UnaryOp, elem: Elem) -> String {
    format!("nxop_{}_{}", op.name(), elem.name())
}

fn binary_function(op: BinaryOp, elem: Elem) -> String {
    format!("nxop_{}_{}", op.name(), elem.name())
}

fn shared_divide_function(elem: Elem) -> String {
    format!("nxop_divide_shared_{}", elem.name())
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
        let register = self.registers.get(&node).cloned();
        let held_slot = self.held.iter().position(|&held| held == node);
        // The reductions a row-uniform value waits for. Decided before the operands are read;
        // view ops return early below and inherit their input's name, so only elementwise
        // operands are lifted here.
        let uniform = match (&entry.op, &register) {
            _ if !self.hoists_row_uniform || argument.is_some() || held_slot.is_some() => None,
            (_, Some(register)) => Some(register.reductions_done),
            _ if is_leaf(node) => None,
            (Op::Constant { .. }, _) => Some(0),
            (
                op @ (Op::Unary { .. }
                | Op::Binary { .. }
                | Op::AsType { .. }
                | Op::Select { .. }
                | Op::Clip { .. }
                | Op::Metadata { .. }),
                _,
            ) => op.operands().iter().try_fold(0, |done, &id| {
                let lifted = lift(&path, &graph.tensor_type(id).shape, shape);
                let name = memo.get(&(id, lifted))?;
                Some(done.max(*self.row_uniform.get(name)?))
            }),
            _ => None,
        };
        let expression = if let Some(argument) = argument {
            argument
        } else if let Some(register) = register {
            self.register_reads.push((node, path.clone()));
            load(elem, &register.name)
        } else if is_leaf(node) {
            let slot = self.leaves.len();
            self.leaves.push(LeafAccess {
                node,
                path: path.clone(),
            });
            self.loaded.insert(elem);
            self.leaf_elems.push(elem);
            load(elem, &format!("leaf{slot}"))
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
                    let shared_divisor = self.row_uniform.get(&b).copied();
                    let types =
                        binary_types(*op, dtype_of_elem(a_elem), dtype_of_elem(b_elem), &[])?;
                    let compute = native(name_of_op, types.compute)?;
                    let a = self.cast(a, a_elem, compute);
                    let b = self.cast(b, b_elem, compute);
                    // A uniform quotient is computed once per row anyway: nx_div.
                    match shared_divisor {
                        Some(reductions_done)
                            if self.shared_divisors
                                && uniform.is_none()
                                && *op == BinaryOp::Divide
                                && compute == Elem::F32 =>
                        {
                            let reciprocal = self.shared_reciprocal(&b, reductions_done);
                            let function = shared_divide_function(compute);
                            rounded(elem, &format!("{function}({a}, {b}, {reciprocal})"))
                        }
                        _ => {
                            self.need(compute, Need::Binary(*op));
                            let function = binary_function(*op, compute);
                            rounded(elem, &format!("{function}({a}, {b})"))
                        }
                    }
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
        let expression = if is_leaf(node) || self.registers.contains_key(&node) {
            expression
        } else {
            format!("nx_opaque({expression})")
        };
        let expression = match held_slot {
            Some(slot) if path.is_empty() => {
                format!("nx_have_held{slot} ? nx_held{slot} : {expression}")
            }
            _ => expression,
        };
        match uniform {
            Some(reductions_done) => {
                // Not `precise`: lavapipe fails to build a pipeline with a `precise` module
                // variable, and the statement has nothing to contract (its arithmetic is in
                // the op functions, whose own temporaries are `precise`).
                self.uniform_statements.push(UniformStatement {
                    reductions_done,
                    declaration: format!("{} {name};", compute_type(elem)),
                    assignment: format!("{name} = {expression};"),
                });
                self.row_uniform.insert(name.clone(), reductions_done);
            }
            None => {
                let _ = writeln!(
                    self.statements,
                    "        precise {} {name} = {expression};",
                    compute_type(elem)
                );
            }
        }
        memo.insert(key, name);
        Ok(())
    }

    /// The variable holding the f64 reciprocal of the row-uniform f32 `divisor`, computed
    /// once per row with the divisor.
    fn shared_reciprocal(&mut self, divisor: &str, reductions_done: usize) -> String {
        self.need(Elem::F32, Need::SharedDivide);
        if let Some(reciprocal) = self.reciprocals.get(divisor) {
            return reciprocal.clone();
        }
        let name = format!("row_reciprocal{}", self.reciprocals.len());
        self.uniform_statements.push(UniformStatement {
            reductions_done,
            declaration: format!("double {name};"),
            assignment: format!(
                "{name} = {}({divisor});",
                renamed("nx_shared_reciprocal", Elem::F32)
            ),
        });
        self.reciprocals.insert(divisor.to_owned(), name.clone());
        name
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

    /// Builds the expression of a row program's `roots`: each node of `registers` is read
    /// from its GLSL variable (holding its stored value) rather than computed or loaded, each
    /// node of `held` (computed, read without a view) may instead come from the caller
    /// ([`Expression::call_holding`]), and values every element of a row shares are
    /// [`Expression::uniform_statements`]; with `shared_divisors`, f32 divisions by a
    /// row-uniform value (a register's, a constant's) use `nx_div_by_shared`, which needs f64.
    pub(crate) fn build_holding(
        graph: &Graph,
        roots: &[NodeId],
        is_leaf: &dyn Fn(NodeId) -> bool,
        registers: HashMap<NodeId, Register>,
        held: Vec<NodeId>,
        shared_divisors: bool,
    ) -> Result<Expression> {
        let held_elems = held
            .iter()
            .map(|&node| native("fused kernel", graph.tensor_type(node).dtype))
            .collect::<Result<_>>()?;
        let expression = Expression {
            registers,
            held,
            held_elems,
            hoists_row_uniform: true,
            shared_divisors,
            ..Expression::default()
        };
        expression.with_roots(graph, roots, is_leaf)
    }

    /// The element type of each leaf, by slot.
    pub(crate) fn leaf_elems(&self) -> &[Elem] {
        &self.leaf_elems
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
            let elem = native("fused kernel", graph.tensor_type(root).dtype)?;
            self.root_elems.push(elem);
        }
        Ok(self)
    }

    /// Helper blocks (one per compute type used), buffer types (element and packet) and the
    /// packet loads shared by every template.
    pub(crate) fn declarations(&self, stored: &BTreeSet<Elem>) -> String {
        let mut text = String::from(FLOAT_CONTROLS);
        text.push_str(BF16_HELPERS);
        let buffer = |text: &mut String, access: &str, name: &str, bytes: u64, storage: &str| {
            let _ = writeln!(
                text,
                "layout(buffer_reference, scalar, buffer_reference_align = {bytes}) {access} buffer {name} {{ {storage} v; }};"
            );
        };
        for elem in &self.loaded {
            let name = elem.name();
            let packet = packet_type(*elem);
            buffer(
                &mut text,
                "readonly",
                &format!("In_{name}"),
                u64::from(storage_bytes(*elem)),
                storage_type(*elem),
            );
            buffer(
                &mut text,
                "readonly",
                &format!("InPacket_{name}"),
                packet_bytes(*elem),
                packet,
            );
            // A leaf that is constant along the row repeats its one element over the packet.
            let _ = writeln!(
                text,
                "{packet} nx_packet_{name}(uint64_t address, bool streamed) {{ if (streamed) return InPacket_{name}(address).v; return {packet}(In_{name}(address).v); }}"
            );
        }
        for elem in stored {
            let name = elem.name();
            buffer(
                &mut text,
                "writeonly",
                &format!("Out_{name}"),
                u64::from(storage_bytes(*elem)),
                storage_type(*elem),
            );
            buffer(
                &mut text,
                "writeonly",
                &format!("OutPacket_{name}"),
                packet_bytes(*elem),
                packet_type(*elem),
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
                    Need::SharedDivide => format!(
                        "float {}(T a, T b, double reciprocal) {{ return nx_div_by_shared(a, b, reciprocal); }}",
                        shared_divide_function(*elem)
                    ),
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
            text.push_str(&renamed(
                &f64_math_include(f64_math(&functions, *elem)),
                *elem,
            ));
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
    pub(crate) fn indices(&self) -> String {
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
    pub(crate) fn preamble(&self, n_outputs: usize) -> String {
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

    /// How many SSA statements compute the roots (row-uniform ones included).
    pub(crate) fn statement_count(&self) -> usize {
        self.statements.lines().count() + self.uniform_statements.len()
    }

    /// The module variables of the row-uniform statements, which `nx_element` reads.
    pub(crate) fn uniform_declarations(&self) -> String {
        let mut text = String::new();
        for statement in &self.uniform_statements {
            let _ = writeln!(text, "{}", statement.declaration);
        }
        text
    }

    /// The row-uniform statements that can run once the first `reductions_done` reductions
    /// are folded and not before, in dependency order.
    pub(crate) fn uniform_statements(&self, reductions_done: usize) -> String {
        let mut text = String::new();
        for statement in &self.uniform_statements {
            if statement.reductions_done == reductions_done {
                let _ = writeln!(text, "        {}", statement.assignment);
            }
        }
        text
    }

    /// `nx_element`: the statements as one function from the leaves' stored values to the
    /// roots' values, so every template evaluates elements with the same code.
    pub(crate) fn element_function(&self) -> String {
        let mut parameters: Vec<String> = self
            .leaf_elems
            .iter()
            .enumerate()
            .map(|(slot, elem)| format!("{} leaf{slot}", storage_type(*elem)))
            .collect();
        for (slot, elem) in self.held_elems.iter().enumerate() {
            parameters.push(format!("bool nx_have_held{slot}"));
            parameters.push(format!("{} nx_held{slot}", compute_type(*elem)));
        }
        parameters.extend(
            self.root_elems
                .iter()
                .enumerate()
                .map(|(root, elem)| format!("out {} root{root}", compute_type(*elem))),
        );
        let mut text = format!("void nx_element({}) {{\n", parameters.join(", "));
        text.push_str(&self.statements);
        for (root, value) in self.root_values.iter().enumerate() {
            let _ = writeln!(text, "        root{root} = {value};");
        }
        text.push_str("}\n");
        text
    }

    /// Declares `result<k>` for each root and calls `nx_element` on the leaf values
    /// `argument(slot, elem)`.
    pub(crate) fn call(&self, argument: impl Fn(usize, Elem) -> String) -> String {
        self.call_holding(argument, |_| None)
    }

    /// [`Expression::call`], passing held node `slot`'s value `held(slot)` where it is
    /// `Some` (the node is then not computed).
    pub(crate) fn call_holding(
        &self,
        argument: impl Fn(usize, Elem) -> String,
        held: impl Fn(usize) -> Option<String>,
    ) -> String {
        let mut text = String::new();
        let mut arguments: Vec<String> = Vec::new();
        for (slot, elem) in self.leaf_elems.iter().enumerate() {
            arguments.push(argument(slot, *elem));
        }
        for (slot, elem) in self.held_elems.iter().enumerate() {
            match held(slot) {
                Some(value) => arguments.extend(["true".to_owned(), value]),
                None => {
                    arguments.extend(["false".to_owned(), format!("{}(0)", compute_type(*elem))])
                }
            }
        }
        for (root, elem) in self.root_elems.iter().enumerate() {
            let _ = write!(text, "{} result{root}; ", compute_type(*elem));
            arguments.push(format!("result{root}"));
        }
        let _ = write!(text, "nx_element({});", arguments.join(", "));
        text
    }

    /// The call of the generic path: leaf `k` at element index `idx<k>`.
    fn generic_call(&self) -> String {
        self.call(|slot, elem| {
            format!(
                "In_{name}(in{slot} + uint64_t(idx{slot}) * {bytes}ul).v",
                name = elem.name(),
                bytes = storage_bytes(elem)
            )
        })
    }

    /// The address of element `column` of row `row` of leaf `slot` on the packet path.
    pub(crate) fn packet_address(slot: usize, elem: Elem, row: &str, column: &str) -> String {
        format!(
            "in{slot} + nx_packet_offset({row}, {column}, lin{slot}, streamed{slot}) * {bytes}ul",
            bytes = storage_bytes(elem)
        )
    }

    /// The call of the packet path for one element: leaf `k`'s packet variable, lane `lane`.
    fn packet_call(&self, packet: &str, lane: &str) -> String {
        self.call(|slot, _| format!("packet{slot}{packet}[{lane}]"))
    }

    /// The call of the packet path's scalar tail: element `column` of row `row`.
    fn packet_tail_call(&self, row: &str, column: &str) -> String {
        self.call(|slot, elem| {
            format!(
                "In_{}({}).v",
                elem.name(),
                Self::packet_address(slot, elem, row, column)
            )
        })
    }

    /// `P<k> packet<k>[PACKETS_PER_ITERATION];`: the packets of every leaf one invocation
    /// loads before computing any.
    fn packet_arrays(&self) -> String {
        let mut text = String::new();
        for (slot, elem) in self.leaf_elems.iter().enumerate() {
            let _ = writeln!(
                text,
                "            {} packet{slot}[{PACKETS_PER_ITERATION}];",
                packet_type(*elem)
            );
        }
        text
    }

    /// `packet<k>{target} = <packet at row, column>;` for every leaf.
    pub(crate) fn packet_loads(&self, target: &str, row: &str, column: &str) -> String {
        let mut text = String::new();
        for (slot, elem) in self.leaf_elems.iter().enumerate() {
            let _ = writeln!(
                text,
                "            packet{slot}{target} = nx_packet_{}({}, streamed{slot});",
                elem.name(),
                Self::packet_address(slot, *elem, row, column)
            );
        }
        text
    }

    /// On the packet path, which leaves stream along the row (words after the kept strides);
    /// read only there, where the parameter block holds them.
    pub(crate) fn packet_preamble(&self) -> String {
        let n = self.leaves.len();
        let mut text = String::new();
        for slot in 0..n {
            let _ = writeln!(
                text,
                "    bool streamed{slot} = false;\n    if (push.rank == PACKET_RANK) streamed{slot} = words.v[{}u] != 0u;",
                n + slot
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

/// The `push.rank` of a packet-path dispatch (no tensor has this rank).
pub(crate) const PACKET_RANK: u32 = u32::MAX;

/// Text every template shares after the push constants: the opaque identities, the packet
/// path's addressing, and `nx_element`. Without `packet_path` the templates leave the packet
/// path out (`NX_PACKET_PATH` 0).
pub(crate) fn common_functions(expression: &Expression, packet_path: bool) -> String {
    let mut text = String::from(PUSH_BLOCK);
    text.push_str(OPAQUE_HELPERS);
    let _ = writeln!(
        text,
        "#define NX_PACKET_PATH {}
#define PACKET_RANK {PACKET_RANK}u
// Element `column` of row `row` of a leaf on the packet path, in elements from its address.
uint64_t nx_packet_offset(uint row, uint column, uint kept, bool streamed) {{ return uint64_t(row) * uint64_t(kept) + (streamed ? uint64_t(column) : 0ul); }}",
        u8::from(packet_path)
    );
    text.push_str(&expression.element_function());
    text
}

/// The whole shader of an elementwise kernel writing `roots` (their elems `outputs`)
/// contiguously over the loop.
///
/// Packet path (`push.reduced` the row length, a multiple of four unless the loop is one
/// row): invocations take packets in a grid-stride loop, [`PACKETS_PER_ITERATION`] at a time,
/// every load issued before the first store (as the catalog's dense kernels do; out-of-range
/// packets of the last iteration reread the last packet and store nothing), then the last
/// `count % 4` elements one per invocation.
pub(crate) fn elementwise_shader(
    expression: &Expression,
    outputs: &[Elem],
    packet_path: bool,
) -> String {
    let stored: BTreeSet<Elem> = outputs.iter().copied().collect();
    let mut shader = expression.declarations(&stored);
    shader.push_str(&common_functions(expression, packet_path));
    let unroll = PACKETS_PER_ITERATION;
    let mut result_arrays = String::new();
    let mut packet_results = String::new();
    let mut packet_stores = String::new();
    let mut tail_stores = String::new();
    let mut generic_stores = String::new();
    for (output, elem) in outputs.iter().enumerate() {
        let name = elem.name();
        let bytes = storage_bytes(*elem);
        let packet_bytes = packet_bytes(*elem);
        let stored = store(*elem, &format!("result{output}"));
        let _ = writeln!(
            result_arrays,
            "            {} stored{output}[{unroll}];",
            packet_type(*elem)
        );
        let _ = writeln!(
            packet_results,
            "                    stored{output}[unroll][lane] = {stored};"
        );
        let _ = writeln!(
            packet_stores,
            "                if (packet < packets) OutPacket_{name}(out{output} + uint64_t(packet) * {packet_bytes}ul).v = stored{output}[unroll];"
        );
        let _ = writeln!(
            tail_stores,
            "            Out_{name}(out{output} + uint64_t(element) * {bytes}ul).v = {stored};"
        );
        let _ = writeln!(
            generic_stores,
            "        Out_{name}(out{output} + uint64_t(index) * {bytes}ul).v = {stored};"
        );
    }
    let _ = write!(
        shader,
        "layout(local_size_x = {WORKGROUP_SIZE}) in;
void main() {{
{preamble}{packet_preamble}    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
#if NX_PACKET_PATH
    if (push.rank == PACKET_RANK) {{
        uint packets = push.count / {PACKET_ELEMENTS}u;
        for (uint first = gl_GlobalInvocationID.x; first < packets; first += {unroll}u * threads) {{
{packet_arrays}            for (uint unroll = 0u; unroll < {unroll}u; unroll++) {{
            uint element = min(first + unroll * threads, packets - 1u) * {PACKET_ELEMENTS}u;
            uint row = element / push.reduced;
            uint column = element - row * push.reduced;
{loads}            }}
{result_arrays}            for (uint unroll = 0u; unroll < {unroll}u; unroll++) {{
                for (uint lane = 0u; lane < {PACKET_ELEMENTS}u; lane++) {{
                    {packet_call}
{packet_results}                }}
            }}
            for (uint unroll = 0u; unroll < {unroll}u; unroll++) {{
                uint packet = first + unroll * threads;
{packet_stores}            }}
        }}
        uint element = packets * {PACKET_ELEMENTS}u + gl_GlobalInvocationID.x;
        if (element < push.count) {{
            {tail_call}
{tail_stores}        }}
        return;
    }}
#endif
    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
{indices}        {generic_call}
{generic_stores}    }}
}}
",
        preamble = expression.preamble(outputs.len()),
        packet_preamble = expression.packet_preamble(),
        packet_arrays = expression.packet_arrays(),
        loads = expression.packet_loads("[unroll]", "row", "column"),
        packet_call = expression.packet_call("[unroll]", "lane"),
        tail_call = expression.packet_tail_call("0u", "element"),
        indices = expression.indices(),
        generic_call = expression.generic_call(),
    );
    shader
}

/// Who folds one row of a fused reduction, chosen by the planner from the row length and the
/// device's subgroup operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowTeam {
    /// One subgroup per row (short rows): a shuffle butterfly, no barrier.
    Subgroup,
    /// One workgroup per row: a butterfly per subgroup, then one over the subgroups' results.
    Workgroup,
    /// One workgroup per row through a shared-memory tree (devices without subgroup shuffles).
    WorkgroupTree,
}

/// `nx_shuffle_xor` for the GLSL value type `value_type`: 64-bit values move as two words,
/// since shuffles of 64-bit types need shaderSubgroupExtendedTypes.
pub(crate) fn shuffle_function(value_type: &str) -> String {
    let body = match value_type {
        "double" => "packDouble2x32(subgroupShuffleXor(unpackDouble2x32(value), mask))".to_owned(),
        "int64_t" | "uint64_t" => format!(
            "{value_type}(nx_join_words(subgroupShuffleXor(uvec2(uint(uint64_t(value)), uint(uint64_t(value) >> 32)), mask)))"
        ),
        _ => "subgroupShuffleXor(value, mask)".to_owned(),
    };
    format!(
        "uint64_t nx_join_words(uvec2 words) {{ return uint64_t(words.x) | (uint64_t(words.y) << 32); }}
V nx_shuffle_xor(V value, uint mask) {{ return {body}; }}
V nx_subgroup_fold(V value) {{
    for (uint mask = gl_SubgroupSize >> 1u; mask > 0u; mask >>= 1u) value = nx_fold(value, nx_shuffle_xor(value, mask));
    return value;
}}
"
    )
}

/// A workgroup team's first row, row step, invocation in the team and size.
const WORKGROUP_TEAM: [&str; 4] = [
    "gl_WorkGroupID.x",
    "gl_NumWorkGroups.x",
    "gl_LocalInvocationID.x",
    "WORKGROUP_SIZE",
];

/// `nx_team_fold`, the fold of `value` over the team (valid in its first invocation), and the
/// team's variables.
fn team_functions(team: RowTeam, value_type: &str) -> String {
    let (fold, variables) = team_fold(team, value_type);
    let [first_team, teams, lane, team_size] = variables;
    format!(
        "{fold}#define NX_FIRST_TEAM ({first_team})\n#define NX_TEAMS ({teams})\n#define NX_LANE ({lane})\n#define NX_TEAM_SIZE ({team_size})\n"
    )
}

/// `nx_team_fold` of `team` (over `nx_fold`, `IDENTITY` and the shared array `partial`), and
/// the GLSL of the team's first row, row step, invocation in the team and size.
pub(crate) fn team_fold(team: RowTeam, value_type: &str) -> (String, [&'static str; 4]) {
    let half = WORKGROUP_SIZE / 2;
    match team {
        RowTeam::Subgroup => (
            format!(
                "{}V nx_team_fold(V value) {{ return nx_subgroup_fold(value); }}\n",
                shuffle_function(value_type)
            ),
            [
                "gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID",
                "gl_NumWorkGroups.x * gl_NumSubgroups",
                "gl_SubgroupInvocationID",
                "gl_SubgroupSize",
            ],
        ),
        RowTeam::Workgroup => (
            format!(
                "{}V nx_team_fold(V value) {{
    value = nx_subgroup_fold(value);
    if (gl_SubgroupInvocationID == 0u) partial[gl_SubgroupID] = value;
    barrier();
    value = IDENTITY;
    for (uint subgroup = gl_SubgroupInvocationID; subgroup < gl_NumSubgroups; subgroup += gl_SubgroupSize) value = nx_fold(value, partial[subgroup]);
    value = nx_subgroup_fold(value);
    barrier();
    return value;
}}
",
                shuffle_function(value_type)
            ),
            WORKGROUP_TEAM,
        ),
        RowTeam::WorkgroupTree => (
            format!(
                "V nx_team_fold(V value) {{
    uint local = gl_LocalInvocationID.x;
    partial[local] = value;
    barrier();
    for (uint half_size = {half}u; half_size > 0u; half_size >>= 1u) {{
        if (local < half_size) partial[local] = nx_fold(partial[local], partial[local + half_size]);
        barrier();
    }}
    V result = partial[0];
    barrier();
    return result;
}}
"
            ),
            WORKGROUP_TEAM,
        ),
    }
}

/// The value one element adds to a fold of `op` over input `input`, from its value `result`
/// (All and Any fold truth values).
pub(crate) fn fold_element(op: ReduceOp, input: Elem, result: &str) -> String {
    match op {
        ReduceOp::All | ReduceOp::Any => {
            format!("(({result}) != {}(0)) ? 1u : 0u", compute_type(input))
        }
        _ => format!("V({result})"),
    }
}

/// The shader of `op` over the trailing `push.reduced` elements of each row of the loop, with
/// `expression` (one root, of type `input`) as its prologue: `team` folds one row (a
/// grid-stride loop over rows), each invocation a strided part of it; on the packet path
/// [`PACKETS_PER_ITERATION`] packets in flight and four lane accumulators per invocation (each invocation reads whole packets of the row, the row
/// length being a multiple of four unless the loop is one row). Rows are contiguous in the
/// loop's row-major order, so `index = row * reduced + j` on the generic path.
pub(crate) fn reduce_shader(
    expression: &Expression,
    op: ReduceOp,
    input: Elem,
    team: RowTeam,
    packet_path: bool,
) -> String {
    let accumulator = accumulator_elem(op, input, Accumulation::Native);
    let value_type = compute_type(accumulator);
    let (identity, combine) = fold(op, value_type, input.is_float());
    let element = fold_element(op, input, "result0");
    let stored: BTreeSet<Elem> = [accumulator].into_iter().collect();
    let mut shader = expression.declarations(&stored);
    shader.push_str(&common_functions(expression, packet_path));
    let _ = write!(
        shader,
        "#define V {value_type}
#define IDENTITY {identity}
#define WORKGROUP_SIZE {WORKGROUP_SIZE}u
layout(local_size_x = {WORKGROUP_SIZE}) in;
shared V partial[{WORKGROUP_SIZE}];
V nx_fold(V a, V b) {{ return {combine}; }}
{team_functions}void main() {{
{preamble}{packet_preamble}    uint lane = NX_LANE;
    for (uint row = NX_FIRST_TEAM; row < push.count; row += NX_TEAMS) {{
        V value = IDENTITY;
#if NX_PACKET_PATH
        if (push.rank == PACKET_RANK) {{
            V lanes[{PACKET_ELEMENTS}] = V[{PACKET_ELEMENTS}](IDENTITY, IDENTITY, IDENTITY, IDENTITY);
            uint packets = push.reduced / {PACKET_ELEMENTS}u;
            // {unroll} packets in flight per invocation; past the row's end the last one is
            // reread and not folded.
            for (uint first = lane; first < packets; first += {unroll}u * NX_TEAM_SIZE) {{
{packet_arrays}            for (uint unroll = 0u; unroll < {unroll}u; unroll++) {{
            uint column = min(first + unroll * NX_TEAM_SIZE, packets - 1u) * {PACKET_ELEMENTS}u;
{loads}            }}
            for (uint unroll = 0u; unroll < {unroll}u; unroll++) {{
                if (first + unroll * NX_TEAM_SIZE >= packets) break;
                for (uint lane_of_packet = 0u; lane_of_packet < {PACKET_ELEMENTS}u; lane_of_packet++) {{
                    {packet_call}
                    lanes[lane_of_packet] = nx_fold(lanes[lane_of_packet], {element});
                }}
            }}
            }}
            uint column = packets * {PACKET_ELEMENTS}u + lane;
            if (column < push.reduced) {{
                {tail_call}
                lanes[0] = nx_fold(lanes[0], {element});
            }}
            value = nx_fold(nx_fold(lanes[0], lanes[1]), nx_fold(lanes[2], lanes[3]));
        }} else
#endif
        {{
            for (uint part = lane; part < push.reduced; part += NX_TEAM_SIZE) {{
        uint index = row * push.reduced + part;
{indices}                {generic_call}
                value = nx_fold(value, {element});
            }}
        }}
        value = nx_team_fold(value);
        if (lane == 0u) Out_{name}(out0 + uint64_t(row) * {bytes}ul).v = {store};
    }}
}}
",
        team_functions = team_functions(team, value_type),
        preamble = expression.preamble(1),
        packet_preamble = expression.packet_preamble(),
        unroll = PACKETS_PER_ITERATION,
        packet_arrays = expression.packet_arrays(),
        loads = expression.packet_loads("[unroll]", "row", "column"),
        packet_call = expression.packet_call("[unroll]", "lane_of_packet"),
        tail_call = expression.packet_tail_call("row", "column"),
        indices = expression.indices(),
        generic_call = expression.generic_call(),
        name = accumulator.name(),
        bytes = storage_bytes(accumulator),
        store = store(accumulator, "value"),
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
        elementwise_shader(&expression, &[Elem::F32], true)
    }

    /// The element function and the templates after it.
    fn main_body(shader: &str) -> &str {
        &shader[shader.find("void nx_element(").unwrap()..]
    }

    #[test]
    fn a_shared_subexpression_is_computed_once() {
        let shader = shader(false);
        let body = main_body(&shader);
        assert_eq!(body.matches("nxop_exp_f32(").count(), 1);
        // The generic loop, the packet loop and the packet path's tail each evaluate it.
        assert_eq!(body.matches("nx_element(").count(), 4);
        // Data is addressed with 64-bit byte offsets, never 32-bit array indices.
        assert!(body.contains("In_f32(in0 + uint64_t(idx0) * 4ul)"));
        assert!(body.contains("OutPacket_f32(out0 + uint64_t(packet) * 16ul)"));
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
    fn a_view_to_a_lower_rank_inside_a_kernel_builds() {
        // exp(x) reshaped from [2, 3] to [6], then doubled: the reshape's operand has the
        // higher rank, which must not be lifted like an elementwise operand.
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[2, 3]).unwrap();
        let e = builder.unary(UnaryOp::Exp, x).unwrap();
        let flat = builder.reshape(e, &[6]).unwrap();
        let out = builder.binary(BinaryOp::Add, flat, flat).unwrap();
        let graph = builder.finish(&[out]).unwrap();
        let expression = Expression::build(&graph, &[out], &|node| node == x).unwrap();
        let shader = elementwise_shader(&expression, &[Elem::F32], true);
        assert_eq!(main_body(&shader).matches("nxop_exp_f32(").count(), 1);
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
