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
//! ([`reduce`](mod@reduce): sum, product, reduce_max/min, all, any, argmax/argmin over any axes of any view)
//! and data movement ([`movement`]: materialised views, reverse, strided slice, pad,
//! concatenate, stack, put_slice), compiled at build time like the rest of the catalog. They
//! have no host fallback yet: a dtype without a kernel is an `Unsupported` error, never a
//! silently different path.
//!
//! Today the GPU covers s8-s64, u8-u64, f16, bf16, f32 and f64 (f64 transcendentals excepted);
//! complex and sub-byte integers take the host fallback, 8-bit floats are unsupported. See
//! `fallback_allowlist.txt` and `cargo run -p nxvk-kernels --example coverage`.

pub mod catalog;
mod codegen;
pub mod coverage;
mod dense_codegen;
mod fallback;
mod launch;
pub mod movement;
mod movement_codegen;
pub mod op_table;
pub mod ops;
pub mod reduce;
mod reduce_codegen;
pub mod reference;
pub mod types;

pub use catalog::{CatalogKernel, binary_kernel, cast_kernel, dtype_of, elem_of, unary_kernel};
pub use codegen::{cast_shader, op_shader};
pub use dense_codegen::{dense_cast_shader, dense_kernel_name, dense_op_shader};
pub use fallback::{AllowlistEntry, FALLBACK_ALLOWLIST, allowlist, is_allowlisted};
pub use launch::{runs_dense, set_output_poison};
pub use movement_codegen::{
    copy_kernel_name, copy_shader, transpose_kernel_name, transpose_shader,
};
pub use op_table::{Accepts, BinaryOp, Elem, OpSpec, ResultRule, UnaryOp};
pub use ops::{Path, as_type, binary, unary};
pub use reduce::{Accumulation, ReduceOp, ReduceOptions, TieBreak, reduce};
pub use reduce_codegen::{reduce_kernel_name, reduce_shader};
