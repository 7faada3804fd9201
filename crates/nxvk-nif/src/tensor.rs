//! The tensor resource, host data in and out, and views.
//!
//! A [`TensorResource`] owns one [`Tensor`] (a view: buffer, layout, dtype). The BEAM frees it
//! when the last term referring to it is garbage-collected; dropping the tensor hands its
//! buffer back to nxvk-core, which keeps it alive until the GPU is done with it.

use crate::device::default_device;
use crate::reply::{Reply, guarded, message};
use crate::terms::{decode_indices, encode_shape};
use nxvk_core::{DType, Tensor};
use rustler::{Binary, Env, OwnedBinary, ResourceArc, Term};

/// A tensor owned by the BEAM.
#[derive(Debug)]
pub struct TensorResource {
    pub tensor: Tensor,
}

#[rustler::resource_impl]
impl rustler::Resource for TensorResource {}

// rustler encodes a NIF's return value inside `catch_unwind`, which wants it `RefUnwindSafe`.
// A tensor is never mutated after creation (views make new tensors), and the device state its
// buffer points at sits behind locks that a panic cannot leave half-updated for a reader.
impl std::panic::RefUnwindSafe for TensorResource {}
impl std::panic::UnwindSafe for TensorResource {}

pub type TensorArc = ResourceArc<TensorResource>;

pub fn wrap(tensor: Tensor) -> TensorArc {
    ResourceArc::new(TensorResource { tensor })
}

/// A dtype from its Nx name; the error names the NIF that was given it.
pub fn decode_dtype(nif: &str, name: &str) -> Reply<DType> {
    name.parse::<DType>()
        .map_err(|error| format!("{nif}: {error}"))
}

// --- Host data ---

/// `from_binary(binary, dtype, shape)`: a tensor on the default device from Nx's binary
/// layout. Dirty: it allocates device memory and uploads.
#[rustler::nif(schedule = "DirtyCpu")]
fn from_binary<'a>(data: Binary<'a>, dtype: String, shape: Term<'a>) -> Reply<TensorArc> {
    guarded("from_binary", || {
        let dtype = decode_dtype("from_binary", &dtype)?;
        let shape = decode_indices("from_binary", shape)?;
        let device = default_device()?;
        Tensor::from_bytes(&device, dtype, &shape, data.as_slice())
            .map(wrap)
            .map_err(message)
    })
}

/// `to_binary(tensor)`: the elements in Nx's binary layout. Dirty: it waits for the GPU.
#[rustler::nif(schedule = "DirtyIo")]
fn to_binary<'a>(env: Env<'a>, tensor: TensorArc) -> Reply<Binary<'a>> {
    guarded("to_binary", || {
        let bytes = tensor.tensor.to_bytes().map_err(message)?;
        Ok(OwnedBinary::from_slice(&bytes).release(env))
    })
}

// --- Metadata (trivial getters, normal scheduler) ---

#[rustler::nif]
fn shape<'a>(env: Env<'a>, tensor: TensorArc) -> Reply<Term<'a>> {
    guarded("shape", || Ok(encode_shape(env, tensor.tensor.shape())))
}

#[rustler::nif]
fn dtype(tensor: TensorArc) -> Reply<String> {
    guarded("dtype", || Ok(tensor.tensor.dtype().name().to_owned()))
}

// --- Views ---
//
// Views are pure layout computations on the host (no allocation, no GPU work), so they run on
// the normal scheduler: a dirty-scheduler hop would cost more than the view itself.

#[rustler::nif]
fn reshape<'a>(tensor: TensorArc, shape: Term<'a>) -> Reply<TensorArc> {
    guarded("reshape", || {
        let shape = decode_indices("reshape", shape)?;
        tensor.tensor.reshape(&shape).map(wrap).map_err(message)
    })
}

#[rustler::nif]
fn transpose<'a>(tensor: TensorArc, permutation: Term<'a>) -> Reply<TensorArc> {
    guarded("transpose", || {
        let permutation = decode_indices("transpose", permutation)?;
        tensor
            .tensor
            .transpose(&permutation)
            .map(wrap)
            .map_err(message)
    })
}

#[rustler::nif]
fn squeeze<'a>(tensor: TensorArc, axes: Term<'a>) -> Reply<TensorArc> {
    guarded("squeeze", || {
        let axes = decode_indices("squeeze", axes)?;
        tensor.tensor.squeeze(&axes).map(wrap).map_err(message)
    })
}

/// Nx's `broadcast(tensor, shape, axes)`: `axes[i]` is the output axis of input axis `i`.
#[rustler::nif]
fn broadcast<'a>(tensor: TensorArc, shape: Term<'a>, axes: Term<'a>) -> Reply<TensorArc> {
    guarded("broadcast", || {
        let shape = decode_indices("broadcast", shape)?;
        let axes = decode_indices("broadcast", axes)?;
        tensor
            .tensor
            .broadcast(&shape, &axes)
            .map(wrap)
            .map_err(message)
    })
}

/// A unit-step slice: `lengths[i]` elements from `starts[i]` on each axis.
#[rustler::nif]
fn slice<'a>(tensor: TensorArc, starts: Term<'a>, lengths: Term<'a>) -> Reply<TensorArc> {
    guarded("slice", || {
        let starts = decode_indices("slice", starts)?;
        let lengths = decode_indices("slice", lengths)?;
        tensor
            .tensor
            .slice(&starts, &lengths)
            .map(wrap)
            .map_err(message)
    })
}
