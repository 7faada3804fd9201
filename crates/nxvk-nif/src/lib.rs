//! nxvk-nif: the Erlang NIF behind `Nx.Vulkan.NIF`.
//!
//! It decodes arguments, wraps [`nxvk_core::Tensor`] in a BEAM resource (freed when the BEAM
//! garbage-collects the last reference), maps every error to `{:error, message}` with nxvk's
//! readable text, catches panics, and puts every call that may wait on the GPU, compile a
//! kernel or run a host fallback on a dirty scheduler.
//!
//! It is not an op library: the ops, their types and their fallbacks live in `nxvk-kernels`,
//! graphs, plans and fused kernels in `nxvk-fusion`, devices, tensors and counters in
//! `nxvk-core`. Only this crate knows rustler.
//!
//! **Invariant:** no NIF unwinds into the VM and none blocks a normal scheduler on the GPU:
//! each body runs inside [`reply::guarded`], and each call that can wait is `Dirty*`.

mod creation;
mod device;
mod dot;
mod fallback;
mod fft;
mod index;
mod linalg;
mod movement;
mod ops;
mod plan;
mod reduce;
mod reply;
mod scan;
mod select;
mod sort;
mod strict;
mod tensor;
mod terms;
mod window;

pub use tensor::TensorResource;

rustler::init!("Elixir.Nx.Vulkan.NIF");
