//! Fourier transforms: Nx's `fft`, `ifft`, `fft2`/`ifft2`, `rfft` and `irfft` (nxvk-kernels'
//! `fft` kernels).
//!
//! Lengths pad with zeros or truncate as Nx does; result types are nxvk-kernels'. Dirty: they
//! may compile kernels and record GPU work.

use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::{decode_name, decode_optional_index};
use nxvk_kernels::fft::{self, Transform};
use rustler::Term;

fn decode_transform(term: Term<'_>) -> Reply<Transform> {
    match decode_name(term)?.as_str() {
        "fft" => Ok(Transform::Forward),
        "ifft" => Ok(Transform::Inverse),
        other => Err(format!("fft: expected :fft or :ifft, got `{other}`")),
    }
}

/// `fft(kind, tensor, length, axis)`: `kind` is `:fft` or `:ifft`; `length` may be `nil`
/// (the axis's own length).
#[rustler::nif(schedule = "DirtyCpu")]
fn fft<'a>(kind: Term<'a>, tensor: TensorArc, length: Term<'a>, axis: usize) -> Reply<TensorArc> {
    guarded("fft", || {
        let transform = decode_transform(kind)?;
        let length = decode_optional_index("fft", length)?;
        fft::fft(&tensor.tensor, transform, length, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// `fft2(kind, tensor, lengths, axes)`: two axes, `lengths` a pair or `nil`.
#[rustler::nif(schedule = "DirtyCpu")]
fn fft2<'a>(
    kind: Term<'a>,
    tensor: TensorArc,
    lengths: Option<(usize, usize)>,
    axes: (usize, usize),
) -> Reply<TensorArc> {
    guarded("fft2", || {
        let transform = decode_transform(kind)?;
        let lengths = lengths.map(|(first, second)| [first, second]);
        fft::fft2(&tensor.tensor, transform, lengths, [axes.0, axes.1])
            .map(wrap)
            .map_err(message)
    })
}

/// `rfft(tensor, length, axis)`: the non-negative frequencies of a real signal.
#[rustler::nif(schedule = "DirtyCpu")]
fn rfft<'a>(tensor: TensorArc, length: Term<'a>, axis: usize) -> Reply<TensorArc> {
    guarded("rfft", || {
        let length = decode_optional_index("rfft", length)?;
        fft::rfft(&tensor.tensor, length, axis)
            .map(wrap)
            .map_err(message)
    })
}

/// `irfft(tensor, length, axis)`: the real signal of a half spectrum.
#[rustler::nif(schedule = "DirtyCpu")]
fn irfft<'a>(tensor: TensorArc, length: Term<'a>, axis: usize) -> Reply<TensorArc> {
    guarded("irfft", || {
        let length = decode_optional_index("irfft", length)?;
        fft::irfft(&tensor.tensor, length, axis)
            .map(wrap)
            .map_err(message)
    })
}
