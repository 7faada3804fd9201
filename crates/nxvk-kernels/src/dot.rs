//! `dot` (Nx's dot/6 with any contraction and batch axes) as one batched GEMM on the device.
//!
//! Lowering: the operands are cast to the result type (Nx's `Nx.Type.merge` of the two), then
//! each is seen as a three-axis strided matrix stack: A as `[batch][M][K]` (batch axes, A's free
//! axes, A's contraction axes) and B as `[batch][K][N]`. Each group of axes must collapse to one
//! stride; when the view cannot express that (say a transposed pair of free axes), the operand
//! is first copied into that axis order (`movement::contiguous`), otherwise nothing moves. The
//! result is dense: batch axes (in `batch_a`'s order), A's free axes, then B's free axes.
//!
//! The GEMM template (`dot_codegen.rs`) tiles C over workgroups and registers; the tile
//! configuration comes from the autotuner (`dot_autotune.rs`). Split-K: when the output has
//! too few tiles to fill the device ([`SPLIT_K_TARGET_WORKGROUPS`]) and K is deep, or when one
//! invocation would loop over K longer than [`MAX_K_STEPS`] tile steps (lavapipe stops loops at
//! 65,535 iterations), K is cut into ranges whose partial products (in the accumulator type:
//! f32 for f16/bf16/f32, the result type for integers, whose wrapping sums commute with the
//! final wrap) are summed by the catalog's reduction and cast to the result type.
//!
//! f16 and bf16 problems whose sizes and layouts fit take the cooperative-matrix kernel
//! (`dot_cooperative.rs`) on devices that offer it, instead of the tiled template.
//!
//! [`dot_with_epilogue`] applies an elementwise function to each element in the tiled
//! template's store ([`GemmEpilogue`], which nxvk-fusion generates from a consumer of the
//! product) when the problem is one tiled pass of floats; otherwise (split-K, cooperative
//! matrices, integers, complex, empty) it returns the plain product and says so.
//!
//! Numerics: f16 and bf16 products accumulate in f32 and round once; f32 in f32 with fused
//! multiply-add; f64 in f64; integers wrap in the result width, as Nx's do. K = 0 gives zeros.
//! Complex results run as one real GEMM over the operands' parts (`dot_complex.rs`). Sub-byte
//! and 8-bit float dtypes, and dtypes the device lacks shader features for, are
//! `Error::Unsupported` (there is no host fallback for dot yet).

use crate::catalog::{
    device_supports, device_supports_value, dtype_of, elem_of, kernel_for_device, value_of,
};
use crate::codegen::storage_bytes;
use crate::conv_gather::ConvolutionGather;
use crate::dot_autotune::{TuneKey, candidates, choose, default_config};
use crate::dot_codegen::{
    GEMM_EPILOGUE_PUSH_CONSTANT_BYTES, GemmEpilogue, OperandOrder, TileConfig, gemm_accumulator,
    gemm_kernel_name, gemm_shader, has_vector_loads,
};
use crate::dot_cooperative::{CooperativeInput, CooperativeKernel, has_cooperative_matrices};
use crate::dot_cooperative2::{WorkgroupMatrixKernel, has_workgroup_matrices, tile_of};
use crate::dot_split::split_operand;
use crate::kernel_knob::KernelKnob;
use crate::launch::{MAX_ELEMENTS, poison_output};
use crate::op_table::Elem;
use crate::reduce::{ReduceOp, ReduceOptions, reduce};
use crate::{movement, ops, types};
use nxvk_core::{BufferAccess, Capabilities, DType, Error, Result, Tensor};

const OP: &str = "dot";

/// Split K when the output has fewer tiles than this many workgroups...
pub const SPLIT_K_TARGET_WORKGROUPS: usize = 256;
/// ...and each split keeps at least this many K elements.
pub const SPLIT_K_MIN_DEPTH: usize = 512;
/// Most tile steps over K one invocation takes (well under lavapipe's loop cap).
pub const MAX_K_STEPS: usize = 8192;

/// Nx's result type of `dot` on operands of types `a` and `b`.
pub fn result_dtype(a: DType, b: DType) -> DType {
    types::merge(a, b)
}

/// True when `dot` with result type `dtype` runs on a device with `capabilities` (complex
/// types as real GEMMs of their component type, after complex kernels expand B).
pub fn runs_on_gpu(dtype: DType, capabilities: &Capabilities) -> bool {
    match crate::complex_view::component_dtype(dtype) {
        Some(component) => {
            runs_on_gpu(component, capabilities)
                && value_of(dtype).is_some_and(|value| device_supports_value(capabilities, value))
        }
        None => elem_of(dtype).is_some_and(|elem| device_supports(capabilities, elem)),
    }
}

fn bad(a: &Tensor, b: &Tensor, detail: String) -> Error {
    Error::BadOperands {
        op: OP,
        shapes: vec![a.shape().to_vec(), b.shape().to_vec()],
        dtypes: vec![a.dtype(), b.dtype()],
        detail,
    }
}

/// A's or B's axes in GEMM order: batch, then rows (A's free axes) or K, then K or columns.
struct Groups {
    batch: Vec<usize>,
    first: Vec<usize>,
    second: Vec<usize>,
}

impl Groups {
    fn permutation(&self) -> Vec<usize> {
        [&self.batch[..], &self.first, &self.second].concat()
    }
}

/// One operand as a strided [batch][rows][columns] stack.
pub(crate) struct Matrices {
    pub(crate) tensor: Tensor,
    pub(crate) batch_stride: usize,
    pub(crate) first_stride: usize,
    pub(crate) second_stride: usize,
}

/// (size, stride) of `axes` of a view collapsed into one axis, if its strides allow.
pub(crate) fn collapse(
    shape: &[usize],
    strides: &[usize],
    axes: &[usize],
) -> Option<(usize, usize)> {
    let mut collapsed: Option<(usize, usize)> = None;
    for &axis in axes.iter().filter(|&&axis| shape[axis] != 1) {
        collapsed = Some(match collapsed {
            None => (shape[axis], strides[axis]),
            Some((size, stride)) if stride == strides[axis] * shape[axis] => {
                (size * shape[axis], strides[axis])
            }
            Some(_) => return None,
        });
    }
    Some(collapsed.unwrap_or((1, 0)))
}

/// The three strides of `tensor`'s axis groups, when each group collapses to one axis.
fn group_strides(tensor: &Tensor, groups: &Groups) -> Option<[usize; 3]> {
    let (shape, strides) = (tensor.shape(), tensor.layout().strides());
    Some([
        collapse(shape, strides, &groups.batch)?.1,
        collapse(shape, strides, &groups.first)?.1,
        collapse(shape, strides, &groups.second)?.1,
    ])
}

fn matrices(tensor: &Tensor, groups: &Groups) -> Result<Matrices> {
    let (tensor, strides) = match group_strides(tensor, groups) {
        Some(strides) => (tensor.clone(), strides),
        None => {
            // The view cannot express the grouping: copy the operand into GEMM axis order,
            // where every group is a run of dense axes.
            let copied = movement::contiguous(&tensor.transpose(&groups.permutation())?)?;
            let (batch, first) = (groups.batch.len(), groups.first.len());
            let ordered = Groups {
                batch: (0..batch).collect(),
                first: (batch..batch + first).collect(),
                second: (batch + first..copied.shape().len()).collect(),
            };
            let strides = group_strides(&copied, &ordered).unwrap_or([0, 0, 0]);
            (copied, strides)
        }
    };
    let [batch_stride, first_stride, second_stride] = strides;
    Ok(Matrices {
        tensor,
        batch_stride,
        first_stride,
        second_stride,
    })
}

/// The product of `sizes`, saturating (an empty tensor may have huge other axes).
pub(crate) fn saturating_product(sizes: &[usize]) -> usize {
    sizes
        .iter()
        .fold(1, |product, &size| product.saturating_mul(size))
}

/// Checks the axis lists against `rank`: in range, no repeats, contraction and batch disjoint.
fn check_axes(a: &Tensor, b: &Tensor, rank: usize, lists: [&[usize]; 2]) -> Result<()> {
    let mut seen = vec![false; rank];
    for &axis in lists.iter().flat_map(|list| list.iter()) {
        if axis >= rank {
            return Err(bad(
                a,
                b,
                format!("axis {axis} out of range for rank {rank}"),
            ));
        }
        if std::mem::replace(&mut seen[axis], true) {
            return Err(bad(a, b, format!("axis {axis} is named twice")));
        }
    }
    Ok(())
}

/// Nx's `dot(a, contract_a, batch_a, b, contract_b, batch_b)`: contracts `a`'s axes
/// `contract_a` with `b`'s axes `contract_b` (pairwise, equal sizes), batching `batch_a` with
/// `batch_b` (pairwise, equal sizes). The result has the batch axes, then `a`'s remaining axes,
/// then `b`'s remaining axes, in their order, and type `result_dtype(a, b)`.
pub fn dot(
    a: &Tensor,
    contract_a: &[usize],
    batch_a: &[usize],
    b: &Tensor,
    contract_b: &[usize],
    batch_b: &[usize],
) -> Result<Tensor> {
    dot_with_config(a, contract_a, batch_a, b, contract_b, batch_b, None)
}

/// [`dot`] with the tile configuration forced (`None`: the autotuner's choice), for tests that
/// must cover every configuration and for benchmarks that compare them. A configuration the
/// device cannot run (workgroup size, shared memory) is an error.
pub fn dot_with_config(
    a: &Tensor,
    contract_a: &[usize],
    batch_a: &[usize],
    b: &Tensor,
    contract_b: &[usize],
    batch_b: &[usize],
    config: Option<TileConfig>,
) -> Result<Tensor> {
    let (problem, output_shape) =
        match lower(a, [contract_a, batch_a, contract_b, batch_b], b, config)? {
            Lowering::Finished(result) => return Ok(result),
            Lowering::Gemm {
                problem,
                output_shape,
                ..
            } => (problem, output_shape),
        };
    if let Some(config) = config
        && !candidates(problem.elem, a.device().capabilities()).contains(&config)
    {
        return Err(Error::BadOperands {
            op: OP,
            shapes: vec![output_shape],
            dtypes: vec![dtype_of(problem.elem)],
            detail: format!(
                "tile configuration {} is not one this device can run for {}",
                config.label(),
                dtype_of(problem.elem)
            ),
        });
    }
    let output = problem.run(config)?;
    output.reshape(&output_shape)
}

/// What [`dot_with_epilogue`] computed.
#[derive(Debug)]
pub enum EpilogueOutcome {
    /// The epilogue's result: one GEMM dispatch whose store applied it.
    Applied(Tensor),
    /// The plain product, because this problem runs no single tiled GEMM pass (split-K,
    /// cooperative matrices, integers, complex types, an empty product or K = 0): the caller
    /// applies the epilogue itself.
    Plain(Tensor),
}

/// [`dot`] with `epilogue` applied to each element of the product before it is stored
/// ([`GemmEpilogue`]). `operands` are the epilogue's extra operands, in the order its
/// parameter block lists them, each of the product's shape (broadcast views are free: a
/// bias of shape `[N]` is a view with stride 0 over the rows). An operand whose strides do
/// not collapse onto the product's batch, row and column axis groups is copied dense first.
pub fn dot_with_epilogue(
    a: &Tensor,
    axes: [&[usize]; 4],
    b: &Tensor,
    epilogue: &GemmEpilogue,
    operands: &[&Tensor],
) -> Result<EpilogueOutcome> {
    let (problem, output_shape, column_axes) = match lower(a, axes, b, None)? {
        Lowering::Finished(result) => return Ok(EpilogueOutcome::Plain(result)),
        Lowering::Gemm {
            problem,
            output_shape,
            column_axes,
        } => (problem, output_shape, column_axes),
    };
    let [_, batch_a, _, _] = axes;
    let rows_end = output_shape.len() - column_axes;
    let groups = Groups {
        batch: (0..batch_a.len()).collect(),
        first: (batch_a.len()..rows_end).collect(),
        second: (rows_end..output_shape.len()).collect(),
    };
    check_epilogue_operands(&output_shape, problem.elem, operands)?;
    let Some(variant) = problem.epilogue_variant() else {
        return Ok(EpilogueOutcome::Plain(
            problem.run(None)?.reshape(&output_shape)?,
        ));
    };
    let epilogue_operands = operands
        .iter()
        .map(|operand| {
            strided_or_copied(
                operand,
                |tensor| group_strides(tensor, &groups),
                movement::contiguous,
            )
        })
        .collect::<Result<_>>()?;
    let arguments = EpilogueArguments {
        epilogue,
        operands: epilogue_operands,
    };
    let output = problem.run_with(variant, problem.order(), Some(&arguments))?;
    Ok(EpilogueOutcome::Applied(output.reshape(&output_shape)?))
}

/// An epilogue operand with its strides along C's batch, row and column axes (`strides`), or,
/// where its view has none, its `copy` in a layout that has them.
pub(crate) fn strided_or_copied(
    operand: &Tensor,
    strides: impl Fn(&Tensor) -> Option<[usize; 3]>,
    copy: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<(Tensor, [usize; 3])> {
    if let Some(strides) = strides(operand) {
        return Ok((operand.clone(), strides));
    }
    let copied = copy(operand)?;
    match strides(&copied) {
        Some(strides) => Ok((copied, strides)),
        None => Err(Error::BadOperands {
            op: "gemm epilogue",
            shapes: vec![operand.shape().to_vec()],
            dtypes: vec![operand.dtype()],
            detail: "the copied operand's axes do not collapse onto C's (planner bug)".into(),
        }),
    }
}

/// Each epilogue operand must be an addressable view of the result's shape.
pub(crate) fn check_epilogue_operands(
    output_shape: &[usize],
    elem: Elem,
    operands: &[&Tensor],
) -> Result<()> {
    match operands
        .iter()
        .find(|operand| operand.shape() != output_shape || operand.device_address().is_none())
    {
        Some(operand) => Err(Error::BadOperands {
            op: "gemm epilogue",
            shapes: vec![output_shape.to_vec(), operand.shape().to_vec()],
            dtypes: vec![dtype_of(elem), operand.dtype()],
            detail: "an epilogue operand must be an addressable view of the result's shape".into(),
        }),
        None => Ok(()),
    }
}

/// A `dot` after validation: its result already (complex, empty, K = 0), or one GEMM.
enum Lowering {
    Finished(Tensor),
    Gemm {
        problem: Box<Problem>,
        output_shape: Vec<usize>,
        /// How many trailing axes of the result are B's free axes (C's columns).
        column_axes: usize,
    },
}

/// Validates the operands and axes of `dot` and lowers it to a GEMM over [batch][M][K] and
/// [batch][K][N] views (`config` is passed to the complex path, which runs real GEMMs).
fn lower(
    a: &Tensor,
    [contract_a, batch_a, contract_b, batch_b]: [&[usize]; 4],
    b: &Tensor,
    config: Option<TileConfig>,
) -> Result<Lowering> {
    if !std::sync::Arc::ptr_eq(a.device(), b.device()) {
        return Err(Error::ForeignTensor { op: OP });
    }
    check_axes(a, b, a.shape().len(), [contract_a, batch_a])?;
    check_axes(a, b, b.shape().len(), [contract_b, batch_b])?;
    if contract_a.len() != contract_b.len() || batch_a.len() != batch_b.len() {
        return Err(bad(
            a,
            b,
            format!(
                "contraction axes {contract_a:?} / {contract_b:?} and batch axes {batch_a:?} / {batch_b:?} must pair up"
            ),
        ));
    }
    for (pairs, what) in [
        (contract_a.iter().zip(contract_b), "contraction"),
        (batch_a.iter().zip(batch_b), "batch"),
    ] {
        for (&axis_a, &axis_b) in pairs {
            if a.shape()[axis_a] != b.shape()[axis_b] {
                return Err(bad(
                    a,
                    b,
                    format!(
                        "{what} axis {axis_a} of a (size {}) and {axis_b} of b (size {}) differ",
                        a.shape()[axis_a],
                        b.shape()[axis_b]
                    ),
                ));
            }
        }
    }
    let result = result_dtype(a.dtype(), b.dtype());
    let device = a.device();
    if result.is_complex() && runs_on_gpu(result, device.capabilities()) {
        let axes = [contract_a, batch_a, contract_b, batch_b];
        return crate::dot_complex::dot(a, b, axes, config).map(Lowering::Finished);
    }
    let Some(elem) = elem_of(result).filter(|&elem| device_supports(device.capabilities(), elem))
    else {
        return Err(Error::Unsupported {
            op: OP,
            dtype: result,
            detail: "dot runs on the GPU for 8- to 64-bit integers, f16, bf16, f32, f64, c64 and c128 (on devices with their shader features); there is no host path".into(),
        });
    };
    let free = |rank: usize, contract: &[usize], batch: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|axis| !contract.contains(axis) && !batch.contains(axis))
            .collect()
    };
    let free_a = free(a.shape().len(), contract_a, batch_a);
    let free_b = free(b.shape().len(), contract_b, batch_b);
    let sizes = |tensor: &Tensor, axes: &[usize]| -> Vec<usize> {
        axes.iter().map(|&axis| tensor.shape()[axis]).collect()
    };
    let output_shape = [sizes(a, batch_a), sizes(a, &free_a), sizes(b, &free_b)].concat();
    let product =
        |tensor: &Tensor, axes: &[usize]| -> usize { saturating_product(&sizes(tensor, axes)) };
    let (batches, m, n, k) = (
        product(a, batch_a),
        product(a, &free_a),
        product(b, &free_b),
        product(a, contract_a),
    );
    if batches.saturating_mul(m).saturating_mul(n) == 0 {
        return Tensor::empty(device, result, &output_shape).map(Lowering::Finished);
    }
    if k == 0 {
        return Tensor::zeros(device, result, &output_shape).map(Lowering::Finished);
    }
    for count in [
        batches.saturating_mul(m).saturating_mul(n),
        batches.saturating_mul(m).saturating_mul(k),
        batches.saturating_mul(k).saturating_mul(n),
    ] {
        if count > MAX_ELEMENTS {
            return Err(bad(
                a,
                b,
                format!("{count} elements exceed the GEMM's 32-bit index arithmetic"),
            ));
        }
    }
    let a = ops::as_type(a, result)?;
    let b = ops::as_type(b, result)?;
    let a = matrices(
        &a,
        &Groups {
            batch: batch_a.to_vec(),
            first: free_a,
            second: contract_a.to_vec(),
        },
    )?;
    let column_axes = free_b.len();
    let b = matrices(
        &b,
        &Groups {
            batch: batch_b.to_vec(),
            first: contract_b.to_vec(),
            second: free_b,
        },
    )?;
    Ok(Lowering::Gemm {
        problem: Box::new(Problem {
            elem,
            batches,
            m,
            n,
            k,
            a,
            b,
            convolution: None,
        }),
        output_shape,
        column_axes,
    })
}

/// An epilogue with its operands, each with its element strides along C's batch, row and
/// column axes.
pub(crate) struct EpilogueArguments<'a> {
    pub(crate) epilogue: &'a GemmEpilogue,
    pub(crate) operands: Vec<(Tensor, [usize; 3])>,
}

/// How f32 products are computed, for the whole device: `NXVK_KNOB_F32_DOT=highest` (the
/// default) or `bf16x3`. Not a raced variant: the two compute different results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotPrecision {
    /// f32 products with f32 accumulation (the tiled template).
    Highest,
    /// Opt-in, for devices with bf16 cooperative matrices: each f32 operand is split into a
    /// bf16 head and tail, and the tensor cores accumulate three of the four partial products
    /// in f32 (`dot_cooperative.rs`), for problems the cooperative kernel takes (M and N
    /// multiples of 128, K of 32, dense aligned operands). Each product carries a relative
    /// error of about 2^-16 instead of f32's 2^-24 (docs/CAPABILITIES.md states the measured
    /// bound); other problems, and devices without bf16 matrices, compute at `Highest`.
    /// On an H100, 67.7 TFLOP/s at 8192 against 38.2 at `Highest` (docs/BENCHMARKS.md).
    Bf16x3,
}

impl DotPrecision {
    /// The device's f32 precision: its `f32_dot` knob, `Highest` when unset (an unknown value
    /// is reported once and ignored).
    pub fn of(device: &nxvk_core::Device) -> DotPrecision {
        match device.knobs().variant("f32_dot") {
            None | Some("highest") => DotPrecision::Highest,
            Some("bf16x3") => DotPrecision::Bf16x3,
            Some(other) => {
                static REPORTED: std::sync::Once = std::sync::Once::new();
                REPORTED.call_once(|| {
                    eprintln!(
                        "nxvk: ignoring NXVK_KNOB_F32_DOT={other:?}: expected highest or bf16x3"
                    );
                });
                DotPrecision::Highest
            }
        }
    }
}

/// Which kernel runs a GEMM.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Variant {
    /// The tiled template with this configuration.
    Tiled(TileConfig),
    /// A cooperative-matrix kernel (f16 or bf16 inputs, or split f32).
    Cooperative(CooperativeKernel),
    /// A workgroup-scope cooperative-matrix kernel (VK_NV_cooperative_matrix2; f16 or bf16).
    Workgroup(WorkgroupMatrixKernel),
}

impl Variant {
    /// Rows and columns of C per workgroup, and K per step.
    fn tile(self) -> (usize, usize, usize) {
        match self {
            Variant::Tiled(config) => (
                config.tile_m as usize,
                config.tile_n as usize,
                config.tile_k as usize,
            ),
            Variant::Cooperative(kernel) => {
                let (tile_m, tile_n, tile_k) = kernel.tile();
                (tile_m as usize, tile_n as usize, tile_k as usize)
            }
            Variant::Workgroup(kernel) => {
                let (tile_m, tile_n, tile_k) = kernel.tile;
                (tile_m as usize, tile_n as usize, tile_k as usize)
            }
        }
    }
}

/// One batched GEMM: `a` is [batch][M][K] (first = M, second = K), `b` is [batch][K][N]
/// (first = K, second = N), or, with `convolution`, a convolution input read through that
/// gather (`conv_gather.rs`; B's strides are then unused).
pub(crate) struct Problem {
    pub(crate) elem: Elem,
    pub(crate) batches: usize,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) a: Matrices,
    pub(crate) b: Matrices,
    pub(crate) convolution: Option<ConvolutionGather>,
}

impl Problem {
    pub(crate) fn order(&self) -> OperandOrder {
        if self.convolution.is_some() {
            return OperandOrder {
                a_k_contiguous: self.a.second_stride == 1,
                b_n_contiguous: true,
                vector_loads: false,
            };
        }
        let a_k_contiguous = self.a.second_stride == 1 || self.k == 1;
        let b_n_contiguous = self.b.second_stride == 1 || self.n == 1;
        // Four-wide staging along each operand's dense axis: that axis has stride 1 and a
        // length that is a multiple of four, every other stride is a multiple of four, and
        // the base address is aligned to four elements.
        let bytes = u64::from(storage_bytes(self.elem));
        let aligned =
            |matrices: &Matrices, dense_length: usize, dense_stride: usize, other: usize| {
                dense_stride == 1
                    && dense_length.is_multiple_of(4)
                    && other.is_multiple_of(4)
                    && matrices.batch_stride.is_multiple_of(4)
                    && matrices
                        .tensor
                        .device_address()
                        .is_some_and(|address| address % (4 * bytes) == 0)
            };
        let a_vector = if a_k_contiguous {
            aligned(&self.a, self.k, self.a.second_stride, self.a.first_stride)
        } else {
            aligned(&self.a, self.m, self.a.first_stride, self.a.second_stride)
        };
        let b_vector = if b_n_contiguous {
            aligned(&self.b, self.n, self.b.second_stride, self.b.first_stride)
        } else {
            aligned(&self.b, self.k, self.b.first_stride, self.b.second_stride)
        };
        OperandOrder {
            a_k_contiguous,
            b_n_contiguous,
            vector_loads: has_vector_loads(self.elem) && a_vector && b_vector,
        }
    }

    /// The cooperative-matrix kernels this problem can take, best first: f16 or bf16 (or f32 at
    /// [`DotPrecision::Bf16x3`]) with each operand dense along one axis, the other strides and
    /// the base address 16-byte aligned. The subgroup kernel (`dot_cooperative.rs`, split f32
    /// too) needs M, N and K multiples of its tile and the device's 16x16x16 shape; the
    /// workgroup-scope kernel (`dot_cooperative2.rs`, opt-in, slower where both apply) takes
    /// any M, N and K of at least one tile of C where the device offers its tile.
    fn cooperative_variants(&self) -> Vec<Variant> {
        let capabilities = self.a.tensor.device().capabilities();
        let aligned = |matrices: &Matrices| {
            let (dense, other) = if matrices.second_stride == 1 {
                (matrices.second_stride, matrices.first_stride)
            } else {
                (matrices.first_stride, matrices.second_stride)
            };
            dense == 1
                && other.is_multiple_of(8)
                && matrices.batch_stride.is_multiple_of(8)
                && matrices
                    .tensor
                    .device_address()
                    .is_some_and(|address| address.is_multiple_of(16))
        };
        let device = self.a.tensor.device();
        let input = match self.elem {
            Elem::F16 => CooperativeInput::F16,
            Elem::BF16 => CooperativeInput::Bf16,
            Elem::F32 if DotPrecision::of(device) == DotPrecision::Bf16x3 => {
                CooperativeInput::F32SplitBf16
            }
            _ => return Vec::new(),
        };
        if self.convolution.is_some() || !aligned(&self.a) || !aligned(&self.b) {
            return Vec::new();
        }
        let a_k_contiguous = self.a.second_stride == 1;
        let b_n_contiguous = self.b.second_stride == 1;
        let mut variants = Vec::new();
        let kernel = CooperativeKernel {
            input,
            subgroup_size: capabilities.subgroup_size,
            // Split operands are converted on their way into shared memory.
            staged: input == CooperativeInput::F32SplitBf16
                || KernelKnob::CoopmatStaged.is_on(device),
            a_k_contiguous,
            b_n_contiguous,
        };
        let (tile_m, tile_n, tile_k) = kernel.tile();
        if has_cooperative_matrices(capabilities, input.fragment())
            && self.m.is_multiple_of(tile_m as usize)
            && self.n.is_multiple_of(tile_n as usize)
            && self.k.is_multiple_of(tile_k as usize)
        {
            variants.push(Variant::Cooperative(kernel));
        }
        if let Some(tile) = tile_of(device)
            && input != CooperativeInput::F32SplitBf16
            && self.m * self.n >= (tile.0 * tile.1) as usize
            && has_workgroup_matrices(capabilities, self.elem, tile)
        {
            variants.push(Variant::Workgroup(WorkgroupMatrixKernel {
                input: self.elem,
                tile,
                a_k_contiguous,
                b_n_contiguous,
            }));
        }
        variants
    }

    /// K splits for `variant`: enough to bound each invocation's loop, more when the output
    /// alone cannot fill the device.
    fn splits(&self, variant: Variant) -> usize {
        let (tile_m, tile_n, tile_k) = variant.tile();
        let tiles = self.batches * self.m.div_ceil(tile_m) * self.n.div_ceil(tile_n);
        let required = self.k.div_ceil(MAX_K_STEPS * tile_k);
        let wanted = if tiles < SPLIT_K_TARGET_WORKGROUPS {
            (SPLIT_K_TARGET_WORKGROUPS / tiles).min(self.k / SPLIT_K_MIN_DEPTH)
        } else {
            1
        };
        let splits = required.max(wanted).max(1);
        // Round each split's depth up to whole tile steps, then recount.
        let depth = self.k.div_ceil(splits).div_ceil(tile_k) * tile_k;
        self.k.div_ceil(depth)
    }

    /// Runs the GEMM (with `forced` tiles, or the autotuner's) and returns C as a dense
    /// [batch][M][N] tensor of the result type; a convolution's C comes in its output layout,
    /// [image][batch][M][position] (N is images x positions).
    pub(crate) fn run(&self, forced: Option<TileConfig>) -> Result<Tensor> {
        let order = self.order();
        if let Some(config) = forced {
            return self.run_with(Variant::Tiled(config), order, None);
        }
        for cooperative in self.cooperative_variants() {
            // A driver that lists the shape but cannot build the kernel keeps the next path
            // (said once per process); any other error is the caller's.
            match self.run_with(cooperative, order, None) {
                Err(error @ (Error::Shader(_) | Error::Vulkan { .. })) => {
                    static WARNED: std::sync::Once = std::sync::Once::new();
                    WARNED.call_once(|| {
                        eprintln!("nxvk: cooperative-matrix GEMM unavailable ({error}); using the next kernel");
                    });
                }
                other => return other,
            }
        }
        let config = self.tuned_config();
        self.run_with(Variant::Tiled(config), order, None)
    }

    /// The autotuner's tile configuration for this problem (racing it on first sight of its
    /// key, when the policy says so: `dot_autotune.rs`).
    fn tuned_config(&self) -> TileConfig {
        let device = self.a.tensor.device();
        let order = self.order();
        let default = default_config(self.batches, self.m, self.n);
        let multiply_adds =
            (self.batches as u64) * (self.m as u64) * (self.n as u64) * (self.k as u64);
        let key = TuneKey::of(self.elem, self.batches, self.m, self.n, self.k)
            .for_convolution(self.convolution.is_some());
        choose(device, key, multiply_adds, default, |config| {
            device.gpu_time(|| self.run_with(Variant::Tiled(config), order, None).map(drop))
        })
    }

    /// The variant [`Problem::run`] would choose when it is one tiled pass of floats (no
    /// split-K, no cooperative matrices), which can take an epilogue in its store (a
    /// convolution's too: its C is stored in the output layout either way).
    pub(crate) fn epilogue_variant(&self) -> Option<Variant> {
        if !self.elem.is_float() || !self.cooperative_variants().is_empty() {
            return None;
        }
        let variant = Variant::Tiled(self.tuned_config());
        (self.splits(variant) == 1).then_some(variant)
    }

    /// Runs `variant` (with `epilogue` in its store: tiled, one split only).
    pub(crate) fn run_with(
        &self,
        variant: Variant,
        order: OperandOrder,
        epilogue: Option<&EpilogueArguments<'_>>,
    ) -> Result<Tensor> {
        let device = self.a.tensor.device();
        let result = dtype_of(self.elem);
        let splits = self.splits(variant);
        let (tile_m, tile_n, tile_k) = variant.tile();
        let depth = self.k.div_ceil(splits).div_ceil(tile_k) * tile_k;
        // Partial sums stay in the accumulator type (integers wrap in the result type).
        let partial_elem = if self.elem.is_float() {
            gemm_accumulator(self.elem)
        } else {
            self.elem
        };
        let output_elem = if splits == 1 { self.elem } else { partial_elem };
        let stored_elem = epilogue.map_or(output_elem, |epilogue| epilogue.epilogue.output);
        let output = Tensor::empty(
            device,
            dtype_of(stored_elem),
            &[self.batches, splits, self.m, self.n],
        )?;
        let (name, shader) = match variant {
            Variant::Tiled(config) => (
                gemm_kernel_name(
                    self.elem,
                    stored_elem,
                    config,
                    order,
                    self.convolution.is_some(),
                ) + if epilogue.is_some() { "_epilogue" } else { "" },
                gemm_shader(
                    self.elem,
                    output_elem,
                    config,
                    order,
                    self.convolution.as_ref(),
                    epilogue.map(|epilogue| epilogue.epilogue),
                ),
            ),
            Variant::Cooperative(kernel) => (kernel.name(output_elem), kernel.shader(output_elem)),
            Variant::Workgroup(kernel) => (kernel.name(output_elem), kernel.shader(output_elem)),
        };
        let kernel = kernel_for_device(device, &name, &shader)?;
        // The bf16x3 kernel reads each f32 operand as three bf16 planes, split first.
        let split;
        let (a, b) = match variant {
            Variant::Cooperative(kernel) if kernel.input == CooperativeInput::F32SplitBf16 => {
                split = (
                    split_operand(&self.a, self.batches, self.m, self.k)?,
                    split_operand(&self.b, self.batches, self.k, self.n)?,
                );
                (&split.0, &split.1)
            }
            _ => (&self.a, &self.b),
        };
        let address = |tensor: &Tensor| {
            tensor.device_address().ok_or_else(|| Error::BadOperands {
                op: OP,
                shapes: vec![tensor.shape().to_vec()],
                dtypes: vec![tensor.dtype()],
                detail: "sub-byte tensors have no element addresses".into(),
            })
        };
        let word = |value: usize| -> Result<u32> {
            u32::try_from(value).map_err(|_| Error::BadOperands {
                op: OP,
                shapes: vec![
                    self.a.tensor.shape().to_vec(),
                    self.b.tensor.shape().to_vec(),
                ],
                dtypes: vec![result],
                detail: format!("{value} does not fit the GEMM's 32-bit index arithmetic"),
            })
        };
        let mut push = Vec::with_capacity(GEMM_EPILOGUE_PUSH_CONSTANT_BYTES);
        for value in [address(&a.tensor)?, address(&b.tensor)?, address(&output)?] {
            push.extend_from_slice(&value.to_le_bytes());
        }
        for value in [
            self.m,
            self.n,
            self.k,
            self.batches,
            a.batch_stride,
            a.first_stride,
            a.second_stride,
            b.batch_stride,
            b.first_stride,
            b.second_stride,
            depth,
            splits,
        ] {
            push.extend_from_slice(&word(value)?.to_le_bytes());
        }
        let limits = device.capabilities().max_workgroup_count;
        let groups = [
            self.n.div_ceil(tile_n),
            self.m.div_ceil(tile_m),
            (self.batches * splits).min(limits[2] as usize),
        ];
        if groups[0] > limits[0] as usize || groups[1] > limits[1] as usize {
            return Err(Error::BadOperands {
                op: OP,
                shapes: vec![vec![self.batches, self.m, self.n]],
                dtypes: vec![result],
                detail: format!("{groups:?} workgroups exceed the device's limit of {limits:?}"),
            });
        }
        poison_output(output.buffer())?;
        let group_counts = [groups[0] as u32, groups[1] as u32, groups[2] as u32];
        let mut accesses = vec![
            BufferAccess::Read(a.tensor.buffer()),
            BufferAccess::Read(b.tensor.buffer()),
            BufferAccess::Write(output.buffer()),
        ];
        match epilogue {
            None => device.dispatch(&kernel, group_counts, &push, &accesses)?,
            Some(epilogue) => {
                // The parameter block: each operand's address, then its three strides.
                let mut params = Vec::new();
                for (operand, _) in &epilogue.operands {
                    params.extend_from_slice(&address(operand)?.to_le_bytes());
                    accesses.push(BufferAccess::Read(operand.buffer()));
                }
                for (_, strides) in &epilogue.operands {
                    for &stride in strides {
                        params.extend_from_slice(&word(stride)?.to_le_bytes());
                    }
                }
                // An epilogue without operands still gets a (never read) block.
                params.resize(params.len().max(8), 0);
                let address_offset = push.len();
                push.extend_from_slice(&[0u8; 8]);
                push.extend_from_slice(&epilogue.epilogue.word.to_le_bytes());
                device.dispatch_with_params(
                    &kernel,
                    group_counts,
                    &push,
                    &params,
                    address_offset,
                    &accesses,
                )?;
            }
        }
        let convolution_layout = self.convolution.as_ref().map(|gather| {
            let positions = gather.output_positions as usize;
            [self.n / positions, self.batches, self.m, positions]
        });
        if splits == 1 {
            // The kernel stored a convolution's C in its output layout already.
            return match convolution_layout {
                Some(layout) => output.reshape(&layout),
                None => output.reshape(&[self.batches, self.m, self.n]),
            };
        }
        let summed = reduce(
            ReduceOp::Sum,
            &output,
            &ReduceOptions {
                axes: Some(&[1]),
                ..ReduceOptions::default()
            },
        )?;
        let summed = ops::as_type(&summed, result)?;
        match convolution_layout {
            Some([images, batches, m, positions]) => movement::contiguous(
                &summed
                    .reshape(&[batches, m, images, positions])?
                    .transpose(&[2, 0, 1, 3])?,
            ),
            None => Ok(summed),
        }
    }
}
