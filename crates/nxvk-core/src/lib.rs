//! nxvk-core: the Vulkan device layer of nxvk.
//!
//! It owns devices and their capabilities, memory (device-local buffers, staging, a size-class
//! pool), tensors as views over buffers, the command stream (batched dispatches, barriers from
//! declared accesses, completion with a timeout), capture and replay of recorded commands,
//! kernels and their caches (in memory, and the driver's pipeline cache on disk), counters,
//! strict mode and the error type.
//!
//! It is not an op library: it knows nothing about Nx ops, only how to run a kernel someone
//! else wrote. `nxvk-kernels` holds the catalog.
//!
//! **Invariant:** all compute data lives in device-local memory, and nothing the GPU may still
//! use is freed: a batch keeps its buffers alive until its timeline value is reached.

mod adapter;
mod cache_dir;
mod capabilities;
mod capture;
mod context;
mod cooperative_matrix;
mod counters;
mod device;
mod dispatch_profile;
mod dtype;
mod error;
mod fma_probe;
mod hazard;
mod kernel;
mod knob;
mod layout;
mod memory;
mod newer_features;
mod pipeline;
mod pipeline_cache_file;
mod resident;
mod shader_store;
mod stream;
mod strict;
mod tensor;
mod transfer;

pub use adapter::{Adapter, DEVICE_SELECTOR_ENV, list_adapters, select_adapter};
pub use cache_dir::default_cache_dir;
pub use capabilities::{Capabilities, DeviceKind, FloatControlsIndependence, SubgroupOperations};
pub use capture::{Capture, Replay, RunBuffers, Spoiled};
pub use context::{Context, ContextOptions};
pub use cooperative_matrix::{CooperativeMatrix2, CooperativeMatrixShape, FlexibleMatrixShape};
pub use counters::CounterSnapshot;
pub use device::{BufferAccess, Device, DeviceBuffer};
pub use dispatch_profile::{DispatchProfile, DispatchTime, PROFILED_DISPATCHES};
pub use dtype::{DType, DTypeClass, Element, UnknownDType};
pub use error::{Error, Result};
pub use fma_probe::{FUSED_FMA_CONSTANT_ID, FUSED_FMA_F64_CONSTANT_ID};
pub use kernel::{Kernel, PORTABLE_PUSH_CONSTANT_BYTES, SpecValue};
pub use knob::Knobs;
pub use layout::{Layout, contiguous_strides};
pub use memory::size_class;
pub use pipeline_cache_file::PipelineCacheLoad;
pub use resident::RESIDENT_TABLE_BYTES;
pub use strict::{Strict, set_strict, strict};
pub use tensor::Tensor;

/// Re-exported so kernels can name their element types.
pub use half::{bf16, f16};
pub use num_complex::{Complex32, Complex64};
