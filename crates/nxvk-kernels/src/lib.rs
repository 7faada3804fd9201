//! nxvk-kernels: the kernel catalog of nxvk.
//!
//! One op table (`op_table.rs`) defines every Nx elementwise op once: name, arity, accepted
//! dtype classes, result-type rule and GLSL expression per dtype class. The build script turns
//! it into SPIR-V kernels named `<op>_<dtype>` (plus `as_type_<from>_<to>` casts), exposed as
//! constants in [`catalog`]. The eager API ([`ops`]) runs one op on whole tensors with Nx's
//! broadcasting and type promotion; host references (`reference.rs`) define the semantics the
//! kernels must match (Nx.BinaryBackend's) and back the single counted host fallback.
//!
//! It is not a graph compiler (that is `nxvk-fusion`) and knows nothing about Elixir, NIFs or
//! the BEAM; it builds on `nxvk-core` for devices, tensors and dispatch.
//!
//! **Invariant:** an op either runs a catalog kernel generated from the op table, or runs its
//! host reference through [`ops`]' one fallback path, which is counted and obeys strict mode;
//! f64 is never computed in f32.
//!
//! Beside the generated elementwise catalog, hand-written templates cover reductions
//! ([`reduce`](mod@reduce): sum, product, reduce_max/min, all, any, argmax/argmin over any
//! axes of any view), data movement ([`movement`]: materialised views, reverse, strided
//! slice, pad, concatenate, stack, put_slice), scans ([`scan`]: the cumulative ops over any
//! axis, either direction, as block scans with carry passes), creation ([`creation`]: iota,
//! eye, full, bitcast) and [`select`](mod@select) (select, clip), compiled at build time like
//! the rest of the catalog; complex sums, products, all and any, complex scans and select run
//! there too (`reduce_complex.rs`, `complex_view.rs`). Sub-byte types take the counted
//! fallback; a dtype without a kernel is an `Unsupported` error, never a silently different
//! path.
//!
//! Indexing ([`index`]: gather, take, take_along_axis, indexed_put/add), sorting ([`sort`]:
//! sort, argsort, top_k), Fourier transforms ([`fft`]) and random numbers ([`random`]:
//! Nx.Random's threefry, uniform, normal) compile their kernels at run time
//! (`Device::kernel_from_glsl`, cached by content); each module's doc states its policies.
//!
//! GEMM-based ops are compiled at run time from templates: [`dot`](mod@dot) (any contraction
//! and batch axes, a tiled GEMM with split-K, per-device autotuned tiles, cooperative matrices
//! for f16; complex as one real GEMM over the parts), [`conv`](mod@conv) (implicit GEMM;
//! complex likewise), [`window`] reductions and scatters, and
//! [`linalg`] (triangular_solve, cholesky, lu, determinant, solve, qr, eigh; real and complex). They have no host path: a dtype
//! without a kernel is `Unsupported`.
//!
//! Today the GPU covers s8-s64, u8-u64, f16, bf16, f32 and f64, f64 transcendentals included
//! (`glsl_f64_math.glsl`: range reduction, polynomials and double-double arithmetic, held to
//! the ulp bounds of [`accuracy`]; `cargo run -p nxvk-kernels --example ulp` measures them);
//! c64/c128 run on the GPU too (component-type arithmetic, Elixir's Complex library's
//! formulas). `as_type` to and from the 8-bit floats and the sub-byte integers and their data
//! movement run on the GPU as well (`narrow_types.rs`, `f8.rs`), their other ops on the
//! counted host fallback (8-bit float reductions are unsupported). See
//! `fallback_allowlist.txt` and `cargo run -p nxvk-kernels --example coverage`.

pub mod accuracy;
mod argmax_two_pass;
pub mod catalog;
pub mod codegen;
mod complex_view;
pub mod conv;
mod conv_complex;
mod conv_gather;
pub mod coverage;
pub mod creation;
mod dense_codegen;
pub mod dot;
pub mod dot_autotune;
pub mod dot_codegen;
mod dot_complex;
pub mod dot_cooperative;
pub mod dot_cooperative2;
mod dot_registers;
pub mod dot_split;
pub mod f8;
mod fallback;
pub mod fft;
mod fft_codegen;
mod fft_mixed;
mod fft_mixed_codegen;
mod fft_row;
mod fft_row_codegen;
mod fft_tables;
mod grid;
pub mod index;
mod index_codegen;
mod kernel_knob;
pub mod launch;
pub mod linalg;
mod linalg_codegen;
pub mod movement;
mod movement_codegen;
mod narrow_types;
pub mod op_table;
mod operand_errors;
pub mod ops;
pub mod random;
pub mod reduce;
mod reduce_codegen;
mod reduce_complex;
pub mod reference;
pub mod scan;
mod scan_codegen;
pub mod select;
mod slice_starts;
pub mod sort;
mod sort_codegen;
mod sort_path;
mod sort_radix;
mod sort_radix_codegen;
pub mod types;
pub mod window;
mod window_complex;

pub use catalog::{
    CatalogKernel, F32Math, binary_kernel, binary_value_kernel, cast_kernel, dtype_of, elem_of,
    f32_math, unary_kernel, unary_value_kernel, value_cast_kernel, value_of,
};
pub use codegen::{
    cast_shader, complex_cast_shader, complex_op_shader, iota_kernel_name, iota_shader, op_shader,
    select_kernel_name, select_shader,
};
pub use conv::{ConvGeometry, ConvOptions, conv, conv_with_epilogue};
pub use creation::{bitcast, eye, full, iota};
pub use dense_codegen::{
    PACKET_ELEMENTS, PACKETS_PER_ITERATION, dense_cast_shader, dense_kernel_name, dense_op_shader,
    packet_bytes, packet_type,
};
pub use dot::{EpilogueOutcome, dot, dot_with_config, dot_with_epilogue};
pub use dot_codegen::{GemmEpilogue, OperandOrder, TileConfig, gemm_shader};
pub use fallback::{AllowlistEntry, FALLBACK_ALLOWLIST, allowlist, is_allowlisted};
pub use launch::{runs_dense, set_output_poison};
pub use linalg::{
    TriangularSolveOptions, cholesky, determinant, eigh, lu, qr, solve, triangular_solve,
};
pub use movement_codegen::{
    copy_kernel_name, copy_shader, transpose_kernel_name, transpose_shader,
};
pub use op_table::{Accepts, BinaryOp, ComplexElem, Elem, OpSpec, ResultRule, UnaryOp, ValueType};
pub use ops::{Path, as_type, binary, unary};
pub use reduce::{Accumulation, ReduceOp, ReduceOptions, TieBreak, reduce};
pub use reduce_codegen::{
    complex_product_kernel_name, complex_product_shader, reduce_kernel_name, reduce_shader,
};
pub use scan::{
    ScanOp, cumulative, cumulative_max, cumulative_min, cumulative_product, cumulative_sum,
};
pub use scan_codegen::{ScanPass, scan_kernel_name, scan_shader};
pub use select::{clip, select};
pub use window::{
    ScatterSelect, WindowOp, WindowOptions, window_fold, window_fold_shader, window_output_shape,
    window_reduce, window_scatter,
};
