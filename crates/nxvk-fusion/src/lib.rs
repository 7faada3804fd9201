//! nxvk-fusion: the graph compiler of nxvk.
//!
//! It takes a graph mirroring `Nx.Defn.Expr` ([`Graph`], built with [`GraphBuilder`] or
//! decoded from the versioned binary encoding the NIF receives, [`decode`]), plans it into
//! stages ([`Plan`]), generates the fused kernels' GLSL from the op table's expressions,
//! caches plans by graph hash and input types ([`PlanCache`]) and runs them with buffers freed
//! by liveness. Maximal elementwise regions (with broadcasts, reshapes, transposes, slices,
//! `as_type`, `select`, `clip` and constants inside) become one kernel; reductions over
//! trailing axes take their elementwise producers as a prologue; chains of reductions over
//! the last axis and the elementwise outputs that read them become one *row program* kernel
//! where the row fits on chip (`row_program.rs`: softmax, log_softmax and layer norm are one
//! dispatch; longer rows keep three); views never copy; `cond` and `while` run from the
//! executor; `reduce` and
//! `window_reduce` with a reducer function get generated kernels of their own
//! (`reducer.rs`); with `NXVK_KNOB_GEMM_EPILOGUE=on` (off by default: slower on the H200
//! for large GEMMs), a `dot` or `conv` whose f32 or f64 product only one elementwise kernel
//! reads (`relu(x . w + b)`, a scale, a sigmoid, a per-channel bias) is one GEMM dispatch
//! whose store applies that kernel's expression, a *GEMM epilogue* (`gemm_epilogue.rs`;
//! split-K and cooperative-matrix GEMMs and permuted conv outputs keep the two stages);
//! `fft`, `triangular_solve` and Nx's
//! linear-algebra blocks are native nodes running the catalog's GPU kernels
//! (`builder_linalg.rs`). Everything else runs through `nxvk-kernels`' eager API, one node
//! at a time.
//!
//! It is not a kernel library (the op semantics live in nxvk-kernels' op table and helpers,
//! which fused kernels include verbatim) and knows nothing about Elixir or the BEAM.
//!
//! **Invariant:** a fused plan computes what the eager API computes op by op, bit for bit
//! for elementwise ops (each value is rounded where the eager path stores it, and no op sees
//! through another: see `codegen.rs`); only fused reductions may fold in another order.
//!
//! Not yet: epilogues of GEMMs whose product other stages read too (the product is then
//! written, and could be stored beside the epilogue's result), native kernels for the `block`s other than linear
//! algebra's, replay on by default (`replay.rs` replays a cached plan's recorded commands from
//! its third run with `NXVK_KNOB_PLAN_REPLAY=on`; it still costs the MLP step GPU time), and
//! `cond`/`while` predicates kept on the device (they are read back).

mod autodiff;
mod builder;
mod builder_linalg;
mod builder_movement;
mod codegen;
mod encoding;
mod executor;
mod gemm_epilogue;
mod graph;
mod linalg_stage;
mod plan;
mod plan_cache;
mod reducer;
mod replay;
mod row_program;
mod view;

pub use autodiff::{STOP_GRAD, gradients};
pub use builder::GraphBuilder;
pub use codegen::LeafAccess;
pub use encoding::{MAGIC, MAX_DEPTH, VERSION, decode, encode};
pub use gemm_epilogue::GemmEpilogueKernel;
pub use graph::{
    CondClause, DotAxes, Graph, IndexedUpdate, LinAlgKind, Node, NodeId, NodeType, Op, SliceStart,
    TensorType,
};
pub use plan::{FusedKernel, Plan, PlanOptions, Stage};
pub use plan_cache::{FusionCounters, PlanCache};
pub use reducer::ReducerKernel;
pub use replay::{CAPTURE_ATTEMPTS, MAX_INTERMEDIATE_BYTES, REPLAY_BY_DEFAULT, ReplayStatus};
pub use row_program::RowProgramKernel;
pub use view::{ViewPath, ViewStep};
