//! The one-pass row FFT, a variant behind the knob `NXVK_KNOB_FFT_ROW_PASS` (on by default
//! for GPUs, off for CPU drivers, as raced: docs/BENCHMARKS.md): c64 rows of 2^12 to 2^14 elements, which otherwise run as the
//! four-step pair of block passes, transformed by one workgroup per row that reads and writes
//! the row once (GLSL and the algorithm in `fft_row_codegen.rs`).
//!
//! Why it may win: the four-step pair moves every row through global memory twice (for
//! `fft_c64_1Kx16K`, 2 x 256 MiB at 2.4 TB/s on the H200, 0.20 ms against torch's 0.12);
//! one pass moves it once. What may cost: one workgroup of `n / 32` invocations (512 for 2^14)
//! per row, each holding 32 complex numbers, so about one workgroup per multiprocessor, whose
//! load, shared-memory and store phases overlap only with other multiprocessors'.

use crate::fft::push_of;
use crate::fft_codegen::{LoadInput, Precision};
use crate::fft_row_codegen::{CHUNK, LOG2_LENGTHS, row_kernel_name, row_shader, row_threads};
use crate::fft_tables::TwiddleTable;
use crate::kernel_knob::KernelKnob;
use nxvk_core::{BufferAccess, Device, DeviceBuffer, Result};
use std::sync::Arc;

/// Whether rows of `2^log2_length` in `precision` run as one row pass on `device`: the knob
/// is on, the rows are c64 of 2^12 to 2^14, and the device has the shared memory and the
/// workgroup size.
pub(crate) fn row_pass_applies(device: &Device, precision: Precision, log2_length: u32) -> bool {
    let capabilities = device.capabilities();
    precision == Precision::Single
        && LOG2_LENGTHS.contains(&log2_length)
        && capabilities.max_shared_memory_bytes >= CHUNK * 8
        && capabilities.max_workgroup_invocations >= row_threads(log2_length)
        && KernelKnob::FftRowPass.is_on(device)
}

/// Rows one side of a row pass reads or writes: `row_stride` elements apart in `buffer` from
/// byte `offset`, positions from `limit` on absent (read as zeros, or not written).
#[derive(Clone, Copy)]
pub(crate) struct RowSide<'a> {
    pub buffer: &'a DeviceBuffer,
    pub offset: u64,
    pub row_stride: u32,
    pub limit: u32,
}

/// Transforms `rows` rows of `2^table.log2_length` from `source` (read as `input`) into
/// `destination` in one dispatch, conjugating the input and the output when `inverse`, scaled
/// by `scale`.
pub(crate) fn row_pass(
    device: &Arc<Device>,
    table: &TwiddleTable,
    rows: usize,
    (source, input): (RowSide<'_>, LoadInput),
    destination: RowSide<'_>,
    inverse: bool,
    scale: f64,
) -> Result<()> {
    let log2_length = table.log2_length;
    let kernel = device.kernel_from_glsl(
        &row_kernel_name(log2_length, input),
        &row_shader(log2_length, input),
        &[],
    )?;
    let push = push_of(
        &[
            source.buffer.device_address() + source.offset,
            destination.buffer.device_address() + destination.offset,
            table.buffer.device_address(),
        ],
        &[
            rows as u32,
            source.limit,
            source.row_stride,
            destination.limit,
            destination.row_stride,
            table.log2_fine,
            u32::from(inverse),
            u32::from(inverse),
        ],
        Some((Precision::Single, scale)),
    );
    let max_groups = device.capabilities().max_workgroup_count[0];
    device.dispatch(
        &kernel,
        [(rows as u32).clamp(1, max_groups), 1, 1],
        &push,
        &[
            BufferAccess::Read(source.buffer),
            BufferAccess::Read(&table.buffer),
            BufferAccess::Write(destination.buffer),
        ],
    )
}
