//! Mixed-radix transforms: lengths `2^a 3^b 5^c 7^d` that are not powers of two (`fft.rs`
//! sends them here instead of through Bluestein; GLSL in `fft_mixed_codegen.rs`).
//!
//! Paths, by transform length `n` (tile capacity `T`, as for powers of two: 2048 for c64, 1,024
//! for c128):
//! - **up to `T`**: one block dispatch of whole rows (several per workgroup when short);
//! - **up to `T^2`**, when `n` splits as `n1 n2` with both at most `T` (`n1` the largest such
//!   divisor up to `sqrt(n)`): the four-step algorithm in two block dispatches, as for powers of
//!   two: the row seen as `n1` rows of `n2`, the columns transformed and twiddled by
//!   `W_n^(column k)` on the way out, then the rows transformed and written transposed;
//! - otherwise (longer, or no such split, as for `7^7`): Bluestein, as before.
//!
//! Both block passes read and write strided rows: the first pass reads the input rows as they
//! are (padding with zeros, truncating, widening real input, and mirroring irfft's Hermitian
//! half on the way in), the last writes the packed output rows. An inverse conjugates the
//! first pass's input and the last pass's output, with the scale `1 / n` in the last.

use crate::fft::{Transform, push_of};
use crate::fft_codegen::{LoadInput, Precision, Walk, tile_capacity};
use crate::fft_mixed_codegen::{MixedShape, mixed_block_shader};
use crate::fft_tables::two_level_twiddles;
use nxvk_core::{BufferAccess, Device, DeviceBuffer, Result};
use std::sync::Arc;

/// How a mixed-radix transform runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MixedPlan {
    /// One block pass of whole rows.
    Single,
    /// Two block passes over the row as `n1` rows of `n2`.
    FourStep { n1: u32, n2: u32 },
}

/// Whether `length` has no prime factor above 7.
fn is_smooth(length: usize) -> bool {
    let mut rest = length;
    for radix in [2, 3, 5, 7] {
        while rest > 1 && rest.is_multiple_of(radix) {
            rest /= radix;
        }
    }
    rest == 1
}

/// The plan of a transform of `length` in `precision`, or `None` when it is a power of two (the
/// power-of-two paths) or has to go through Bluestein.
pub(crate) fn mixed_plan(precision: Precision, length: usize) -> Option<MixedPlan> {
    if length < 2 || length.is_power_of_two() || !is_smooth(length) {
        return None;
    }
    let capacity = tile_capacity(precision) as usize;
    if length <= capacity {
        return Some(MixedPlan::Single);
    }
    if length > capacity * capacity {
        return None;
    }
    let root = length.isqrt();
    (length.div_ceil(capacity)..=root)
        .rev()
        .find(|&n1| length.is_multiple_of(n1))
        .map(|n1| MixedPlan::FourStep {
            n1: n1 as u32,
            n2: (length / n1) as u32,
        })
}

/// The rows a mixed-radix transform reads: `row_stride` elements apart in `buffer` from byte
/// `offset`, positions from `limit` on read as zeros; `hermitian` rows hold the first half of a
/// Hermitian spectrum (irfft).
#[derive(Clone, Copy)]
pub(crate) struct MixedSource<'a> {
    pub buffer: &'a DeviceBuffer,
    pub offset: u64,
    pub row_stride: u32,
    pub limit: u32,
    pub input: LoadInput,
    pub hermitian: bool,
}

/// One block pass: `transforms` transforms of `length` (`columns` per row) with the strides,
/// limits and flags of `mixed_block_shader`.
struct MixedPass<'a> {
    shape: MixedShape,
    transforms: usize,
    source: (&'a DeviceBuffer, u64),
    destination: &'a DeviceBuffer,
    /// input_limit, output_limit, in_outer, in_column, in_element, out_outer, out_column,
    /// out_element, twiddle_step.
    geometry: [u32; 9],
    conjugate_input: bool,
    conjugate_output: bool,
    hermitian_length: u32,
    scale: f64,
}

/// Transforms `rows` rows of `length` (a mixed-radix length planned as `plan`) from `source`
/// into the packed rows of `output`, in `transform`'s direction, scaled by `1 / length` for
/// an inverse.
#[allow(clippy::too_many_arguments)] // Each is one fact about the transform.
pub(crate) fn transform_mixed(
    device: &Arc<Device>,
    op: &'static str,
    plan: MixedPlan,
    precision: Precision,
    transform: Transform,
    rows: usize,
    length: usize,
    source: MixedSource<'_>,
    output: &DeviceBuffer,
) -> Result<()> {
    let (table, log2_fine) = two_level_twiddles(device, precision, length)?;
    let inverse = transform == Transform::Inverse;
    let scale = if inverse { 1.0 / length as f64 } else { 1.0 };
    let capacity = tile_capacity(precision);
    let n = length as u32;
    let hermitian_length = if source.hermitian { n } else { 0 };
    let walk = |element_stride: u32, shape_length: u32, columns: u32| {
        let probe = MixedShape {
            precision,
            length: shape_length,
            columns,
            load: Walk::AlongElements,
            store: Walk::AlongElements,
            post_twiddle: false,
            input: LoadInput::Complex,
        };
        Walk::for_stride(element_stride, probe.group(capacity))
    };
    let run = |pass: MixedPass<'_>| -> Result<()> {
        let kernel = device.kernel_from_glsl(
            &pass.shape.kernel_name(capacity),
            &mixed_block_shader(pass.shape, capacity),
            &[],
        )?;
        let mut words = vec![pass.transforms as u32];
        words.extend_from_slice(&pass.geometry);
        words.extend_from_slice(&[
            log2_fine,
            u32::from(pass.conjugate_input),
            u32::from(pass.conjugate_output),
            pass.hermitian_length,
        ]);
        let push = push_of(
            &[
                pass.source.0.device_address() + pass.source.1,
                pass.destination.device_address(),
                table.device_address(),
            ],
            &words,
            Some((precision, pass.scale)),
        );
        let max_groups = device.capabilities().max_workgroup_count[0];
        let workgroups = (pass.transforms as u64)
            .div_ceil(u64::from(pass.shape.group(capacity)))
            .clamp(1, u64::from(max_groups)) as u32;
        device.dispatch(
            &kernel,
            [workgroups, 1, 1],
            &push,
            &[
                BufferAccess::Read(pass.source.0),
                BufferAccess::Read(&table),
                BufferAccess::Write(pass.destination),
            ],
        )
    };
    match plan {
        MixedPlan::Single => run(MixedPass {
            shape: MixedShape {
                precision,
                length: n,
                columns: 1,
                load: Walk::AlongElements,
                store: Walk::AlongElements,
                post_twiddle: false,
                input: source.input,
            },
            transforms: rows,
            source: (source.buffer, source.offset),
            destination: output,
            geometry: [source.limit, n, source.row_stride, 0, 1, n, 0, 1, 1],
            conjugate_input: inverse,
            conjugate_output: inverse,
            hermitian_length,
            scale,
        }),
        MixedPlan::FourStep { n1, n2 } => {
            // The row as a matrix of n1 rows of n2: element n1_index * n2 + n2_index.
            let scratch = device.alloc(op, (rows * length) as u64 * precision.complex_bytes())?;
            let column_walk = walk(n2, n1, n2);
            run(MixedPass {
                shape: MixedShape {
                    precision,
                    length: n1,
                    columns: n2,
                    load: column_walk,
                    store: column_walk,
                    post_twiddle: true,
                    input: source.input,
                },
                transforms: rows * n2 as usize,
                source: (source.buffer, source.offset),
                destination: &scratch,
                geometry: [source.limit, n, source.row_stride, 1, n2, n, 1, n2, n2],
                conjugate_input: inverse,
                conjugate_output: false,
                hermitian_length,
                scale: 1.0,
            })?;
            run(MixedPass {
                shape: MixedShape {
                    precision,
                    length: n2,
                    columns: n1,
                    load: Walk::AlongElements,
                    store: walk(n1, n2, n1),
                    post_twiddle: false,
                    input: LoadInput::Complex,
                },
                transforms: rows * n1 as usize,
                source: (&scratch, 0),
                destination: output,
                geometry: [n, n, n, n2, 1, n, 1, n1, n1],
                conjugate_input: false,
                conjugate_output: inverse,
                hermitian_length: 0,
                scale,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plans by length: one pass up to the tile, two passes with both sides within the tile
    /// up to its square, Bluestein beyond, for other primes and for lengths without a split.
    #[test]
    fn plans_follow_the_tile() {
        let single = Precision::Single;
        assert_eq!(mixed_plan(single, 3), Some(MixedPlan::Single));
        assert_eq!(mixed_plan(single, 2000), Some(MixedPlan::Single));
        assert_eq!(mixed_plan(single, 4096), None, "a power of two");
        assert_eq!(mixed_plan(single, 11), None, "another prime");
        assert_eq!(mixed_plan(single, 1009), None);
        assert_eq!(
            mixed_plan(single, 3 << 12),
            Some(MixedPlan::FourStep { n1: 96, n2: 128 })
        );
        assert_eq!(
            mixed_plan(Precision::Double, 1536),
            Some(MixedPlan::FourStep { n1: 32, n2: 48 })
        );
        // 7^7 has no divisor between 7^7 / 2048 and 2048.
        assert_eq!(mixed_plan(single, 823_543), None);
        assert_eq!(mixed_plan(single, 3 << 22), None, "beyond the tile squared");
        for length in [
            3usize,
            5,
            6,
            7,
            9,
            12,
            15,
            21,
            35,
            49,
            105,
            243,
            1000,
            3 << 10,
        ] {
            assert!(mixed_plan(single, length).is_some(), "{length}");
        }
        for plan in [mixed_plan(single, 5 << 14), mixed_plan(single, 1_000_000)] {
            let Some(MixedPlan::FourStep { n1, n2 }) = plan else {
                panic!("{plan:?}");
            };
            assert!(n1 <= n2 && n2 <= 2048);
        }
    }
}
