//! Window ops: window_sum, window_product, window_max, window_min (Nx's window reductions)
//! and window_scatter_max / window_scatter_min, with padding, strides and window dilations,
//! on any rank and any input view.
//!
//! Semantics (Nx.BinaryBackend's): the input is padded (`padding` low/high per axis, negative
//! crops) with the reduction's identity (0 for sums, 1 for products, -inf / the type's minimum
//! for max, +inf / the maximum for min); windows of `window_dimensions` with
//! `window_dilations` - 1 gaps start every `strides`; an output axis is
//! `(padded - dilated window) / stride + 1` long, and a window that does not fit is an error as
//! in Nx. Results keep the input type (integer sums and products wrap; f16 and bf16 compute in
//! f32 and round once); max and min propagate NaN, as the catalog's reductions do.
//!
//! window_scatter_max/min (select-and-scatter): the input is padded with `init_value` (as
//! Nx.BinaryBackend pads it), every window selects the last position (in row-major window
//! order) holding its maximum (minimum; Nx selects with greater_equal / less_equal), and the
//! source value of that window is added there; positions start at `init_value`, and a
//! selection that falls in the padding is dropped. Overlapping windows are handled without atomics: each output element gathers,
//! over the windows that contain it, the sources of those that select it. That costs
//! (window size)^2 per element, so windows of more than [`MAX_SCATTER_WINDOW`] positions are
//! refused (lavapipe stops loops at 65,535 iterations).
//!
//! Kernels are generated here per (op, dtype) and compiled at run time
//! (`Device::kernel_from_glsl`, cached on disk); one invocation computes one output element.
//! Complex window_sum and window_product are composed from other GPU ops
//! (`window_complex.rs`).

use crate::catalog::{device_supports, elem_of};
use crate::codegen::{
    BF16_HELPERS, FLOAT_CONTROLS, compute_type, load, storage_bytes, storage_type, store,
};
use crate::dot::saturating_product;
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::op_table::Elem;
use crate::operand_errors::bad_operands;
use crate::{movement, ops};
use nxvk_core::{BufferAccess, Error, Kernel, Result, Tensor};

/// Most positions a window may have in window_scatter_max/min.
pub const MAX_SCATTER_WINDOW: usize = 255;

const WORKGROUP_SIZE: u32 = 256;
const HEADER_WORDS: usize = 2;
const AXIS_WORDS: usize = 7;

/// The window reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowOp {
    Sum,
    Product,
    Max,
    Min,
}

impl WindowOp {
    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            WindowOp::Sum => "window_sum",
            WindowOp::Product => "window_product",
            WindowOp::Max => "window_max",
            WindowOp::Min => "window_min",
        }
    }
}

/// Which extreme window_scatter selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScatterSelect {
    Max,
    Min,
}

impl ScatterSelect {
    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            ScatterSelect::Max => "window_scatter_max",
            ScatterSelect::Min => "window_scatter_min",
        }
    }

    const fn extreme(self) -> WindowOp {
        match self {
            ScatterSelect::Max => WindowOp::Max,
            ScatterSelect::Min => WindowOp::Min,
        }
    }
}

/// Window options; empty vectors mean 1 on every axis (strides, dilations) or no padding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowOptions {
    pub strides: Vec<usize>,
    /// (low, high) per axis; negative values crop.
    pub padding: Vec<(i64, i64)>,
    pub window_dilations: Vec<usize>,
}

/// The identity (and padding value) of `op` in GLSL compute type `glsl_type`.
fn identity(op: WindowOp, glsl_type: &str) -> &'static str {
    match (op, glsl_type) {
        (WindowOp::Sum, _) => "V(0)",
        (WindowOp::Product, _) => "V(1)",
        (WindowOp::Max, "float") => "uintBitsToFloat(0xFF800000u)",
        (WindowOp::Min, "float") => "uintBitsToFloat(0x7F800000u)",
        (WindowOp::Max, "double") => "packDouble2x32(uvec2(0u, 0xFFF00000u))",
        (WindowOp::Min, "double") => "packDouble2x32(uvec2(0u, 0x7FF00000u))",
        (WindowOp::Max, "int") => "V(-2147483647 - 1)",
        (WindowOp::Min, "int") => "V(2147483647)",
        (WindowOp::Max, "uint") => "V(0u)",
        (WindowOp::Min, "uint") => "V(4294967295u)",
        (WindowOp::Max, "int64_t") => "V(-9223372036854775807l - 1l)",
        (WindowOp::Min, "int64_t") => "V(9223372036854775807l)",
        (WindowOp::Max, _) => "V(0ul)",
        (WindowOp::Min, _) => "V(18446744073709551615ul)",
    }
}

/// The identity of max/min for narrow integers is the narrow type's limit, not the widened
/// compute type's (the result is stored in the narrow type).
fn narrow_identity(op: WindowOp, elem: Elem) -> Option<String> {
    let bits = elem.bits();
    if elem.is_float() || bits >= 32 || !matches!(op, WindowOp::Max | WindowOp::Min) {
        return None;
    }
    let (min, max): (i64, i64) = if elem.is_signed() {
        (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    } else {
        (0, (1 << bits) - 1)
    };
    let suffix = if elem.is_signed() { "" } else { "u" };
    let value = if op == WindowOp::Max { min } else { max };
    Some(format!("V({value}{suffix})"))
}

fn combine(op: WindowOp, is_float: bool) -> &'static str {
    match (op, is_float) {
        (WindowOp::Sum, _) => "a + b",
        (WindowOp::Product, _) => "a * b",
        (WindowOp::Max, true) => "(isnan(a) || isnan(b)) ? a + b : ((a > b) ? a : b)",
        (WindowOp::Min, true) => "(isnan(a) || isnan(b)) ? a + b : ((a < b) ? a : b)",
        (WindowOp::Max, false) => "(a > b) ? a : b",
        (WindowOp::Min, false) => "(a < b) ? a : b",
    }
}

/// What a window shader computes.
#[derive(Debug, Clone, Copy)]
enum ShaderKind<'a> {
    /// A window reduction padded with its identity.
    Reduce(WindowOp),
    /// Select-and-scatter with the extreme of this reduction.
    Scatter(WindowOp),
    /// Nx's window_reduce with a caller's reducer: `declarations` define
    /// `V nx_window_fold(V element, V acc)`; padding and the start value are `init`.
    Fold { declarations: &'a str },
}

/// The shader of `kind` on `elem`.
fn window_shader(kind: ShaderKind<'_>, elem: Elem) -> String {
    let value_type = compute_type(elem);
    // Reductions pad with their identity; select-and-scatter and custom folds pad with
    // `init_value`, as Nx does.
    let (op, scatter, declarations) = match kind {
        ShaderKind::Reduce(op) => (op, false, ""),
        ShaderKind::Scatter(op) => (op, true, ""),
        ShaderKind::Fold { declarations } => (WindowOp::Sum, false, declarations),
    };
    let (pad, combine) = match kind {
        ShaderKind::Reduce(op) => (
            narrow_identity(op, elem).unwrap_or_else(|| identity(op, value_type).to_owned()),
            combine(op, elem.is_float()),
        ),
        ShaderKind::Scatter(_) => ("load_at(push.init)".to_owned(), ""),
        // Nx calls the reducer as fun(element, acc).
        ShaderKind::Fold { .. } => ("load_at(push.init)".to_owned(), "nx_window_fold(b, a)"),
    };
    // A custom fold's helpers may convert to or from bf16 whatever the window's type.
    let bf16 = if elem == Elem::BF16 || !declarations.is_empty() {
        BF16_HELPERS
    } else {
        ""
    };
    let loaded = load(elem, "Element(address).v");
    let stored = store(elem, "result");
    // Ties go to the later position, as Nx's greater_equal / less_equal selection does.
    let better = if op == WindowOp::Max { ">=" } else { "<=" };
    let body = if scatter {
        format!(
            "    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        V result = load_at(push.init);
        for (uint position = 0u; position < positions; position++) {{
            // The window that holds this element at window offset `position`, if any.
            uint rest = index;
            uint rest_window = position;
            uint window = 0u;
            uint scale = 1u;
            bool exists = true;
            for (int axis = rank - 1; axis >= 0; axis--) {{
                int base = {HEADER_WORDS} + axis * {AXIS_WORDS};
                uint coordinate = rest % uint(push.params.v[base + 5]);
                rest /= uint(push.params.v[base + 5]);
                uint offset = rest_window % uint(push.params.v[base + 1]);
                rest_window /= uint(push.params.v[base + 1]);
                int start = int(coordinate) + push.params.v[base + 4] - int(offset) * push.params.v[base + 3];
                int stride = push.params.v[base + 2];
                if (start < 0 || start % stride != 0 || start / stride >= push.params.v[base]) {{
                    exists = false;
                }} else {{
                    window += uint(start / stride) * scale;
                }}
                scale *= uint(push.params.v[base]);
            }}
            if (!exists) continue;
            // The window's last extreme position.
            uint chosen = 0u;
            V best = V(0);
            for (uint candidate = 0u; candidate < positions; candidate++) {{
                V value = window_value(window, candidate);
                if (candidate == 0u || value {better} best) {{
                    best = value;
                    chosen = candidate;
                }}
            }}
            if (chosen == position) {{
                result += load_at(push.source + uint64_t(window) * BYTES);
            }}
        }}
        Output(push.output_data + uint64_t(index) * BYTES).v = {stored};
    }}"
        )
    } else {
        format!(
            "    for (uint index = gl_GlobalInvocationID.x; index < push.count; index += threads) {{
        V result = PAD;
        for (uint position = 0u; position < positions; position++) {{
            V a = result;
            V b = window_value(index, position);
            result = {combine};
        }}
        Output(push.output_data + uint64_t(index) * BYTES).v = {stored};
    }}"
        )
    };
    format!(
        "{FLOAT_CONTROLS}
#define V {value_type}
#define BYTES {bytes}ul
#define PAD {pad}
layout(local_size_x = {WORKGROUP_SIZE}) in;
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer Element {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Output {{ {storage} v; }};
layout(buffer_reference, scalar) readonly buffer Params {{ int v[]; }};
layout(push_constant, scalar) uniform Push {{
    uint64_t input_data;
    uint64_t output_data;
    Params params;
    uint64_t source;
    uint64_t init;
    uint count;
    // Zero, unknown to the compiler: custom folds' `nx_opaque` helpers read it.
    uint opaque;
}} push;
{bf16}
V load_at(uint64_t address) {{ return {loaded}; }}
{declarations}

// Element `position` (row-major in the window) of window `window` (row-major over the
// output), or PAD where it falls in the padding. Parameter block: rank, window positions,
// then per axis: output size, window size, stride, dilation, low padding, input size, input
// element stride.
V window_value(uint window, uint position) {{
    int rank = push.params.v[0];
    uint rest = window;
    uint rest_window = position;
    uint64_t offset = 0ul;
    bool inside = true;
    for (int axis = rank - 1; axis >= 0; axis--) {{
        int base = {HEADER_WORDS} + axis * {AXIS_WORDS};
        uint output_coordinate = rest % uint(push.params.v[base]);
        rest /= uint(push.params.v[base]);
        uint window_coordinate = rest_window % uint(push.params.v[base + 1]);
        rest_window /= uint(push.params.v[base + 1]);
        int coordinate = int(output_coordinate) * push.params.v[base + 2]
            + int(window_coordinate) * push.params.v[base + 3] - push.params.v[base + 4];
        if (coordinate < 0 || coordinate >= push.params.v[base + 5]) {{
            inside = false;
        }} else {{
            offset += uint64_t(coordinate) * uint64_t(uint(push.params.v[base + 6]));
        }}
    }}
    return inside ? load_at(push.input_data + offset * BYTES) : PAD;
}}

void main() {{
    uint threads = gl_NumWorkGroups.x * {WORKGROUP_SIZE}u;
    int rank = push.params.v[0];
    uint positions = uint(push.params.v[1]);
{body}
}}
",
        bytes = storage_bytes(elem),
        storage = storage_type(elem),
    )
}

/// The checked geometry of a window op: output shape and the parameter block.
struct Geometry {
    output_shape: Vec<usize>,
    positions: usize,
    params: Vec<u8>,
}

/// Nx's pooled output shape of windows of `window_dimensions` over `input_shape` (the
/// checks every window op makes), or why the options do not fit.
pub fn window_output_shape(
    input_shape: &[usize],
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> std::result::Result<Vec<usize>, String> {
    let rank = input_shape.len();
    let per_axis = |name: &str, length: usize| {
        if length == 0 || length == rank {
            Ok(())
        } else {
            Err(format!("{name} has {length} entries for rank {rank}"))
        }
    };
    if window_dimensions.len() != rank {
        return Err(format!(
            "window_dimensions {window_dimensions:?} must have one entry per axis"
        ));
    }
    per_axis("strides", options.strides.len())?;
    per_axis("padding", options.padding.len())?;
    per_axis("window_dilations", options.window_dilations.len())?;
    let mut output_shape = Vec::with_capacity(rank);
    for (axis, &window) in window_dimensions.iter().enumerate() {
        let stride = options.strides.get(axis).copied().unwrap_or(1);
        let dilation = options.window_dilations.get(axis).copied().unwrap_or(1);
        let (low, high) = options.padding.get(axis).copied().unwrap_or((0, 0));
        if window == 0 || stride == 0 || dilation == 0 {
            return Err("window dimensions, strides and dilations must be at least 1".into());
        }
        // 128-bit arithmetic: the options are caller input and may be anything.
        let padded = input_shape[axis] as i128 + i128::from(low) + i128::from(high);
        let dilated = (window as i128 - 1) * dilation as i128 + 1;
        if padded < dilated {
            return Err(format!(
                "the window does not fit axis {axis} (padded size {padded}, dilated window {dilated})"
            ));
        }
        let size = usize::try_from((padded - dilated) / stride as i128 + 1)
            .map_err(|_| format!("axis {axis} of the output is too long"))?;
        output_shape.push(size);
    }
    Ok(output_shape)
}

fn geometry(
    op: &'static str,
    input: &Tensor,
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> Result<Geometry> {
    let fail = |detail: String| bad_operands(op, &[input], detail);
    let output_shape =
        window_output_shape(input.shape(), window_dimensions, options).map_err(fail)?;
    let rank = input.shape().len();
    let positions = saturating_product(window_dimensions);
    let mut words: Vec<i128> = vec![rank as i128, positions as i128];
    for (axis, &window) in window_dimensions.iter().enumerate() {
        words.extend([
            output_shape[axis] as i128,
            window as i128,
            options.strides.get(axis).copied().unwrap_or(1) as i128,
            options.window_dilations.get(axis).copied().unwrap_or(1) as i128,
            i128::from(options.padding.get(axis).map_or(0, |&(low, _)| low)),
            input.shape()[axis] as i128,
            input.layout().strides()[axis] as i128,
        ]);
    }
    debug_assert_eq!(words.len(), HEADER_WORDS + rank * AXIS_WORDS);
    let params = words
        .iter()
        .map(|&word| i32::try_from(word).map_err(|_| fail(format!("{word} exceeds 32 bits"))))
        .collect::<Result<Vec<i32>>>()?
        .into_iter()
        .flat_map(i32::to_le_bytes)
        .collect();
    Ok(Geometry {
        output_shape,
        positions,
        params,
    })
}

/// The shader of Nx's window_reduce with a caller's reducer on `elem`: `declarations` (GLSL
/// placed after the push constants, which end with a zero `uint opaque`) define
/// `V nx_window_fold(V element, V acc)` in `elem`'s compute type `V`. Each window starts at
/// the init value and the padding holds it, as Nx.BinaryBackend pads with the accumulator.
pub fn window_fold_shader(elem: Elem, declarations: &str) -> String {
    window_shader(ShaderKind::Fold { declarations }, elem)
}

/// Runs a [`window_fold_shader`] kernel: windows of `input` folded from `init` (a scalar of
/// the input's dtype); the result has the input's dtype and the pooled shape.
pub fn window_fold(
    kernel: &Kernel,
    input: &Tensor,
    init: &Tensor,
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> Result<Tensor> {
    const NAME: &str = "window_reduce";
    element_type(NAME, input)?;
    if init.dtype() != input.dtype() || !init.shape().is_empty() {
        return Err(bad_operands(
            NAME,
            &[input, init],
            "the init value must be a scalar of the input's dtype".into(),
        ));
    }
    let geometry = geometry(NAME, input, window_dimensions, options)?;
    let output = Tensor::empty(input.device(), input.dtype(), &geometry.output_shape)?;
    launch(
        NAME,
        kernel,
        input,
        None,
        Some(init),
        &output,
        &geometry.params,
    )?;
    Ok(output)
}

/// Every window op's name (for the coverage report).
pub const WINDOW_OPS: [&str; 6] = [
    "window_sum",
    "window_product",
    "window_max",
    "window_min",
    "window_scatter_max",
    "window_scatter_min",
];

/// True when window ops on `dtype` run on a device with `capabilities` (else they are
/// unsupported: there is no host path).
pub fn runs_on_gpu(dtype: nxvk_core::DType, capabilities: &nxvk_core::Capabilities) -> bool {
    elem_of(dtype).is_some_and(|elem| device_supports(capabilities, elem))
}

/// Whether window_sum and window_product of `dtype` run on the GPU of `capabilities`: the
/// real dtypes [`runs_on_gpu`] covers, and c64/c128 where their part type does (composed in
/// `window_complex.rs`).
pub fn sum_and_product_run_on_gpu(
    dtype: nxvk_core::DType,
    capabilities: &nxvk_core::Capabilities,
) -> bool {
    let part = match dtype {
        nxvk_core::DType::C64 => nxvk_core::DType::F32,
        nxvk_core::DType::C128 => nxvk_core::DType::F64,
        real => real,
    };
    runs_on_gpu(part, capabilities)
}

fn element_type(op: &'static str, input: &Tensor) -> Result<Elem> {
    elem_of(input.dtype())
        .filter(|_| runs_on_gpu(input.dtype(), input.device().capabilities()))
        .ok_or_else(|| Error::Unsupported {
            op,
            dtype: input.dtype(),
            detail: "window ops run on the GPU for 8- to 64-bit integers, f16, bf16, f32 and f64 (with the device's shader features); there is no host path".into(),
        })
}

fn launch(
    op: &'static str,
    kernel: &Kernel,
    input: &Tensor,
    source: Option<&Tensor>,
    init: Option<&Tensor>,
    output: &Tensor,
    params: &[u8],
) -> Result<()> {
    let count = output.n_elements();
    if count == 0 {
        return Ok(());
    }
    if count > MAX_ELEMENTS {
        return Err(bad_operands(
            op,
            &[input],
            format!("{count} elements exceed 32-bit indexing"),
        ));
    }
    let device = output.device();
    let address = |tensor: Option<&Tensor>| match tensor {
        Some(tensor) => tensor.device_address().ok_or_else(|| {
            bad_operands(op, &[tensor], "sub-byte tensors have no addresses".into())
        }),
        None => Ok(0),
    };
    let mut push = Vec::with_capacity(48);
    for word in [
        address(Some(input))?,
        address(Some(output))?,
        0,
        address(source)?,
        address(init)?,
    ] {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push.extend_from_slice(&(count as u32).to_le_bytes());
    push.extend_from_slice(&0u32.to_le_bytes());
    let mut accesses = vec![BufferAccess::Read(input.buffer())];
    for tensor in [source, init].into_iter().flatten() {
        accesses.push(BufferAccess::Read(tensor.buffer()));
    }
    accesses.push(BufferAccess::Write(output.buffer()));
    poison_output(output.buffer())?;
    let max_groups = device.capabilities().max_workgroup_count[0] as usize;
    let groups = count
        .div_ceil(WORKGROUP_SIZE as usize)
        .min(max_groups)
        .min(65_535) as u32;
    device.dispatch_with_params(kernel, [groups, 1, 1], &push, params, 16, &accesses)
}

/// Nx's window_sum / window_product / window_max / window_min of `input` over windows of
/// `window_dimensions`; the result keeps the input type.
pub fn window_reduce(
    op: WindowOp,
    input: &Tensor,
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> Result<Tensor> {
    let name = op.name();
    if input.dtype().is_complex() {
        return crate::window_complex::complex_window_reduce(op, input, window_dimensions, options);
    }
    let elem = element_type(name, input)?;
    let geometry = geometry(name, input, window_dimensions, options)?;
    let output = Tensor::empty(input.device(), input.dtype(), &geometry.output_shape)?;
    let kernel = input.device().kernel_from_glsl(
        &format!("{name}_{}", elem.name()),
        &window_shader(ShaderKind::Reduce(op), elem),
        &[],
    )?;
    launch(name, &kernel, input, None, None, &output, &geometry.params)?;
    Ok(output)
}

/// Nx's window_scatter_max / window_scatter_min: `source` (the shape of the pooled output)
/// scattered onto the positions each window of `input` selects, starting from `init_value`
/// (rank 0). `source` and `init_value` are cast to the input type, which the result has.
pub fn window_scatter(
    select: ScatterSelect,
    input: &Tensor,
    source: &Tensor,
    init_value: &Tensor,
    window_dimensions: &[usize],
    options: &WindowOptions,
) -> Result<Tensor> {
    let name = select.name();
    let elem = element_type(name, input)?;
    let geometry = geometry(name, input, window_dimensions, options)?;
    if source.shape() != geometry.output_shape || !init_value.shape().is_empty() {
        return Err(bad_operands(
            name,
            &[input, source, init_value],
            format!(
                "source must have the pooled shape {:?} and init_value must be a scalar",
                geometry.output_shape
            ),
        ));
    }
    if geometry.positions > MAX_SCATTER_WINDOW {
        return Err(Error::Unsupported {
            op: name,
            dtype: input.dtype(),
            detail: format!(
                "windows of {} positions (at most {MAX_SCATTER_WINDOW}: the gather costs the square per element)",
                geometry.positions
            ),
        });
    }
    let source = movement::contiguous(&ops::as_type(source, input.dtype())?)?;
    let init_value = ops::as_type(init_value, input.dtype())?;
    let output = Tensor::empty(input.device(), input.dtype(), input.shape())?;
    let kernel = input.device().kernel_from_glsl(
        &format!("{name}_{}", elem.name()),
        &window_shader(ShaderKind::Scatter(select.extreme()), elem),
        &[],
    )?;
    launch(
        name,
        &kernel,
        input,
        Some(&source),
        Some(&init_value),
        &output,
        &geometry.params,
    )?;
    Ok(output)
}
