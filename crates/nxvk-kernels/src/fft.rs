//! Fourier transforms: Nx's `fft` and `ifft` (any length, any axis, `length` padding with
//! zeros or truncating), `fft2`/`ifft2` and `rfft`/`irfft`, on the GPU in c64 (f32
//! arithmetic) and c128 (f64).
//!
//! Paths, by transform length `n` (tile capacity `T`: 2048 for c64, 1,024 for c128, so that a
//! tile takes 16 KiB of shared memory):
//! - **powers of two up to `T`**: one block dispatch (`fft_codegen::block_shader`). Each
//!   workgroup takes `T / n` whole rows (fewer for rows under 8, so that it stays at 256
//!   invocations); each invocation loads 8 elements straight into registers (consecutive
//!   invocations at consecutive addresses), runs radix-8 (then 4 or 2) Stockham stages in
//!   registers, exchanging through shared memory between stages (a transform of 2^11 takes
//!   four stages, with 7 barriers, against eleven radix-2 stages), and stores straight back.
//! - **powers of two up to `T^2`**: the four-step algorithm in two block dispatches, the row
//!   seen as a matrix of `n1` rows of `n2` (`n1 <= n2`, `n1 n2 = n`). Pass one transforms the
//!   columns: each workgroup takes `T / n1` neighbouring columns (128 bytes of every matrix
//!   row for `n = 2^14` in c64: 16 columns of 128), multiplies by the twiddle `W_n^(column k)`
//!   on the way out and stores in the same layout. Pass two transforms `T / n2` rows of that
//!   and writes them transposed through shared memory, so that its stores too are whole
//!   128-byte segments of neighbouring rows. Each pass reads and writes the data once. On
//!   GPUs (the knob `NXVK_KNOB_FFT_ROW_PASS`, on by default except on CPU drivers, where it
//!   lost its race), c64 rows of 2^12 to 2^14 run instead as one row pass that reads and
//!   writes them once in all (`fft_row.rs`).
//! - **longer powers of two**: one radix-2 Stockham dispatch per stage.
//! - **mixed-radix lengths** `2^a 3^b 5^c 7^d` (not powers of two): radix-7, 5 and 3 stages
//!   beside the power-of-two ones, in one block dispatch up to `T` or the four-step pair of
//!   dispatches up to `T^2` (`fft_mixed.rs`).
//! - **other lengths** (a prime factor above 7, or a mixed length beyond the four-step pair):
//!   Bluestein's algorithm: the transform becomes a circular convolution
//!   of length `m` (the power of two at least `2n - 1`) with a chirp: the input times the
//!   chirp, a forward power-of-two transform, a product with the chirp's spectrum, an inverse
//!   transform, and the first `n` elements times the chirp, scaled. Where `m` runs as block
//!   passes, the products, the padding to `m` and the truncation to `n` happen on the way
//!   into and out of the passes (two or four dispatches in all); longer convolutions run
//!   separate load, pointwise and store passes around the radix-2 passes.
//!
//! An inverse transform is the conjugate of the forward transform of the conjugate: the
//! block passes conjugate on load and store, so one set of forward twiddles serves both.
//! Twiddles (a two-level table of about `2 sqrt(n)` entries, L1-resident), chirps and chirp
//! spectra are computed on the host in f64 and kept on the device per (device, length,
//! precision, and direction for spectra) by `fft_tables` through nxvk-core's resident tables:
//! only the first call of a length uploads them. Inside a butterfly one twiddle is read from
//! the table and the others are its powers.
//!
//! The first block pass reads the rows as they are: real input is widened, and a `length`
//! that pads or truncates is applied, on the way into registers.
//!
//! Known costs: irfft's Hermitian input, and any input of rows longer than `T^2` that is not
//! packed complex rows, go through a load pass first (one more read and write); Bluestein
//! moves rows of `m`, about twice `n`, through two transforms; from rows of 2^19 on, a
//! four-step side exceeds 512 and its pass moves segments narrower than 32 bytes.
//!
//! Results follow Nx's types (`Nx.Type.to_complex`: f64 and c128 give c128, everything else
//! c64). Integer, f16 and bf16 inputs are cast to f32 first. Nx's BinaryBackend rounds
//! results within `eps` (1e-10) of zero to zero; these kernels do not (as EXLA does not).

use crate::fft_codegen::{
    BlockShape, FFT_WORKGROUP_SIZE, LoadInput, Precision, Walk, block_shader, load_shader,
    log2_group, pointwise_shader, radix2_shader, store_shader, tile_capacity,
};
use crate::fft_mixed::{MixedSource, mixed_plan, transform_mixed};
use crate::fft_row::{RowSide, row_pass, row_pass_applies};
use crate::fft_tables::{TwiddleTable, bluestein_tables, twiddle_table};
use crate::launch::poison_output;
use crate::operand_errors::bad_operands;
use crate::{movement, ops, types};
use nxvk_core::{BufferAccess, DType, Device, DeviceBuffer, Error, Result, Tensor};
use std::sync::Arc;

/// Which transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Forward,
    Inverse,
}

/// [`bad_operands`] for this module's single-operand checks.
fn bad(op: &'static str, input: &Tensor, detail: String) -> Error {
    bad_operands(op, &[input], detail)
}

fn groups(device: &Device, invocations: u64) -> u32 {
    let max_groups = device.capabilities().max_workgroup_count[0];
    invocations
        .div_ceil(u64::from(FFT_WORKGROUP_SIZE))
        .clamp(1, u64::from(max_groups)) as u32
}

/// Push-constant bytes: addresses, then 32-bit words, then the scale in the precision (at
/// its alignment).
pub(crate) fn push_of(
    addresses: &[u64],
    words: &[u32],
    scale: Option<(Precision, f64)>,
) -> Vec<u8> {
    let mut push = Vec::with_capacity(64);
    for address in addresses {
        push.extend_from_slice(&address.to_le_bytes());
    }
    for word in words {
        push.extend_from_slice(&word.to_le_bytes());
    }
    match scale {
        Some((Precision::Single, scale)) => push.extend_from_slice(&(scale as f32).to_le_bytes()),
        Some((Precision::Double, scale)) => {
            // The scalar block layout aligns a double to 8 bytes.
            push.resize(push.len().next_multiple_of(8), 0);
            push.extend_from_slice(&scale.to_le_bytes());
        }
        None => {}
    }
    push
}

/// How a power-of-two transform runs: its precision, direction and final scale.
#[derive(Debug, Clone, Copy)]
struct Plan {
    precision: Precision,
    transform: Transform,
    scale: f64,
}

/// Addressing within the rows of one side of a block dispatch, in elements: transform `t` of
/// a row is column `t % 2^log2_columns`, and its element `k` sits at position
/// `column * column_stride + k * element_stride` of the row.
#[derive(Debug, Clone, Copy)]
struct Strides {
    column: u32,
    element: u32,
}

/// Per-position factors a pass multiplies by: a table of complex numbers, conjugated or not.
#[derive(Clone, Copy)]
struct Factors<'a> {
    table: &'a DeviceBuffer,
    conjugate: bool,
}

/// Rows of a transform's input or output in `buffer` from byte `offset`: rows `row_stride`
/// elements apart, of which positions from `limit` on are absent (read as zeros, or not
/// written) and the others may be multiplied by `factors`. Block passes read and write any
/// such rows (padding, truncating and multiplying on the way in or out); the radix-2 passes
/// only packed ones.
#[derive(Clone, Copy)]
struct Rows<'a> {
    buffer: &'a DeviceBuffer,
    offset: u64,
    row_stride: u32,
    limit: u32,
    factors: Option<Factors<'a>>,
}

impl<'a> Rows<'a> {
    /// Rows of `length`, packed from byte 0 of `buffer`.
    fn packed(buffer: &'a DeviceBuffer, length: u32) -> Rows<'a> {
        Rows {
            buffer,
            offset: 0,
            row_stride: length,
            limit: length,
            factors: None,
        }
    }

    /// Rows of `length` with nothing to pad, drop or multiply (wherever they start).
    fn is_packed(&self, length: u32) -> bool {
        self.row_stride == length && self.limit == length && self.factors.is_none()
    }
}

/// The rows a transform reads, and whether they hold real or complex numbers (the first
/// block pass widens real ones).
#[derive(Clone, Copy)]
struct RowSource<'a> {
    rows: Rows<'a>,
    input: LoadInput,
}

impl<'a> RowSource<'a> {
    /// Complex rows of `length`, packed from byte 0 of `buffer`.
    fn packed(buffer: &'a DeviceBuffer, length: u32) -> RowSource<'a> {
        RowSource {
            rows: Rows::packed(buffer, length),
            input: LoadInput::Complex,
        }
    }

    fn is_packed(&self, length: u32) -> bool {
        self.input == LoadInput::Complex && self.rows.is_packed(length)
    }
}

/// One block pass: `transforms` transforms of `2^log2_length` (`2^log2_columns` per row),
/// read from `source` and written to `destination`.
struct BlockPass<'a> {
    transforms: usize,
    log2_columns: u32,
    log2_length: u32,
    source: (RowSource<'a>, Strides),
    destination: (Rows<'a>, Strides),
    /// Multiply element `k` of column `c` by `W^(c k)` on the way out (four-step's first pass).
    post_twiddle: bool,
    conjugate_input: bool,
    conjugate_output: bool,
    scale: f64,
}

/// Dispatches one block pass (see `fft_codegen::block_shader`) with twiddles from `table`.
fn block_dispatch(
    device: &Arc<Device>,
    precision: Precision,
    table: &TwiddleTable,
    pass: BlockPass<'_>,
) -> Result<()> {
    let log2_group = log2_group(precision, pass.log2_length);
    let (
        RowSource {
            rows: source,
            input,
        },
        source_strides,
    ) = pass.source;
    let (destination, destination_strides) = pass.destination;
    let shape = BlockShape {
        precision,
        log2_length: pass.log2_length,
        log2_group,
        load: Walk::for_stride(source_strides.element, 1 << log2_group),
        store: Walk::for_stride(destination_strides.element, 1 << log2_group),
        post_twiddle: pass.post_twiddle,
        input,
        input_factors: source.factors.is_some(),
        output_factors: destination.factors.is_some(),
    };
    let kernel = device.kernel_from_glsl(&shape.kernel_name(), &block_shader(shape), &[])?;
    let factors_address =
        |factors: Option<Factors<'_>>| factors.map_or(0, |factors| factors.table.device_address());
    let conjugated =
        |factors: Option<Factors<'_>>| u32::from(factors.is_some_and(|factors| factors.conjugate));
    let push = push_of(
        &[
            source.buffer.device_address() + source.offset,
            destination.buffer.device_address() + destination.offset,
            table.buffer.device_address(),
            factors_address(source.factors),
            factors_address(destination.factors),
        ],
        &[
            pass.transforms as u32,
            pass.log2_columns,
            source.limit,
            destination.limit,
            source.row_stride,
            source_strides.column,
            source_strides.element,
            destination.row_stride,
            destination_strides.column,
            destination_strides.element,
            1 << (table.log2_length - pass.log2_length),
            table.log2_fine,
            u32::from(pass.conjugate_input),
            u32::from(pass.conjugate_output),
            conjugated(source.factors),
            conjugated(destination.factors),
        ],
        Some((precision, pass.scale)),
    );
    let max_groups = device.capabilities().max_workgroup_count[0];
    let workgroups = (pass.transforms as u64)
        .div_ceil(1 << log2_group)
        .clamp(1, u64::from(max_groups)) as u32;
    let mut accesses = vec![
        BufferAccess::Read(source.buffer),
        BufferAccess::Read(&table.buffer),
        BufferAccess::Write(destination.buffer),
    ];
    accesses.extend(
        [source.factors, destination.factors]
            .into_iter()
            .flatten()
            .map(|factors| BufferAccess::Read(factors.table)),
    );
    device.dispatch(&kernel, [workgroups, 1, 1], &push, &accesses)
}

/// Whether rows of `2^log2_length` run as block passes (which read and write any
/// [`Rows`]).
fn runs_in_block_passes(precision: Precision, log2_length: u32) -> bool {
    log2_length <= 2 * tile_capacity(precision).trailing_zeros()
}

/// Transforms `rows` rows of `2^log2_length` (at least 2) from `source` into `destination`
/// (which may be the source's buffer when both are packed), using `scratch` (as large as the
/// rows):
/// - rows of at most [`tile_capacity`]: one block pass, every stage in one workgroup;
/// - rows of up to its square: the four-step algorithm as two block passes (the row as a
///   matrix of `n1` rows of `n2`: the columns' transforms, twiddled on the way out, then the
///   rows' transforms written transposed), or, with the knob `NXVK_KNOB_FFT_ROW_PASS=on`, c64
///   rows of 2^12 to 2^14 without factors in one row pass (`fft_row.rs`);
/// - longer rows: one radix-2 Stockham dispatch per stage, between packed complex rows only
///   (the caller runs the load pass first for any other source, and the pointwise or store
///   pass after).
///
/// An inverse is the conjugate of the forward transform of the conjugate, so the block
/// passes conjugate the input of the first pass and the output of the last.
fn transform_power_of_two(
    device: &Arc<Device>,
    plan: Plan,
    rows: usize,
    log2_length: u32,
    source: RowSource<'_>,
    destination: Rows<'_>,
    scratch: &DeviceBuffer,
) -> Result<()> {
    let table = twiddle_table(device, plan.precision, log2_length)?;
    let length_word = 1u32 << log2_length;
    let inverse = plan.transform == Transform::Inverse;
    let log2_capacity = tile_capacity(plan.precision).trailing_zeros();
    if log2_length <= log2_capacity {
        let row_strides = Strides {
            column: 0,
            element: 1,
        };
        let pass = BlockPass {
            transforms: rows,
            log2_columns: 0,
            log2_length,
            source: (source, row_strides),
            destination: (destination, row_strides),
            post_twiddle: false,
            conjugate_input: inverse,
            conjugate_output: inverse,
            scale: plan.scale,
        };
        return block_dispatch(device, plan.precision, &table, pass);
    }
    if runs_in_block_passes(plan.precision, log2_length) {
        if source.rows.factors.is_none()
            && destination.factors.is_none()
            && row_pass_applies(device, plan.precision, log2_length)
        {
            fn side<'a>(rows: Rows<'a>) -> RowSide<'a> {
                RowSide {
                    buffer: rows.buffer,
                    offset: rows.offset,
                    row_stride: rows.row_stride,
                    limit: rows.limit,
                }
            }
            return row_pass(
                device,
                &table,
                rows,
                (side(source.rows), source.input),
                side(destination),
                inverse,
                plan.scale,
            );
        }
        // The row as a matrix of n1 rows of n2: element n1_index * n2_count + n2_index.
        let log2_n2 = log2_length.div_ceil(2);
        let (n1_count, n2_count) = (1u32 << (log2_length - log2_n2), 1u32 << log2_n2);
        let column_strides = Strides {
            column: 1,
            element: n2_count,
        };
        let columns = BlockPass {
            transforms: rows * n2_count as usize,
            log2_columns: log2_n2,
            log2_length: log2_length - log2_n2,
            source: (source, column_strides),
            destination: (Rows::packed(scratch, length_word), column_strides),
            post_twiddle: true,
            conjugate_input: inverse,
            conjugate_output: false,
            scale: 1.0,
        };
        block_dispatch(device, plan.precision, &table, columns)?;
        let rows_pass = BlockPass {
            transforms: rows * n1_count as usize,
            log2_columns: log2_length - log2_n2,
            log2_length: log2_n2,
            source: (
                RowSource::packed(scratch, length_word),
                Strides {
                    column: n2_count,
                    element: 1,
                },
            ),
            destination: (
                destination,
                Strides {
                    column: 1,
                    element: n1_count,
                },
            ),
            post_twiddle: false,
            conjugate_input: false,
            conjugate_output: inverse,
            scale: plan.scale,
        };
        return block_dispatch(device, plan.precision, &table, rows_pass);
    }
    if !source.is_packed(length_word)
        || !destination.is_packed(length_word)
        || destination.offset != 0
    {
        return Err(Error::Unsupported {
            op: "fft",
            dtype: plan.precision.dtype(),
            detail: format!(
                "rows of 2^{log2_length} run as radix-2 passes, which read and write packed \
                 complex rows only"
            ),
        });
    }
    radix2_passes(
        device,
        plan,
        rows,
        (source.rows.buffer, source.rows.offset),
        destination.buffer,
        scratch,
        &table,
    )
}

/// The radix-2 stages as one dispatch each, ending in `destination`. Passes alternate
/// between `destination` and `scratch` so that no pass reads what it writes; when the
/// source is the destination and the pass count is odd, the first pass goes to a third
/// buffer.
fn radix2_passes(
    device: &Arc<Device>,
    plan: Plan,
    rows: usize,
    (source, source_offset): (&DeviceBuffer, u64),
    destination: &DeviceBuffer,
    scratch: &DeviceBuffer,
    table: &TwiddleTable,
) -> Result<()> {
    let log2_length = table.log2_length;
    let length = 1usize << log2_length;
    let kernel = device.kernel_from_glsl(
        &format!("fft_radix2_{}", plan.precision.name()),
        &radix2_shader(plan.precision),
        &[],
    )?;
    let passes = log2_length;
    let extra;
    let mut targets: Vec<&DeviceBuffer> = (0..passes)
        .map(|pass| {
            if (passes - 1 - pass).is_multiple_of(2) {
                destination
            } else {
                scratch
            }
        })
        .collect();
    if std::ptr::eq(source, destination) && std::ptr::eq(targets[0], destination) {
        // The second pass reads the third buffer and writes `scratch`, as it would have.
        extra = device.alloc("fft", scratch.size())?;
        targets[0] = &extra;
    }
    let pairs = (rows * length / 2) as u32;
    let mut from = (source, source_offset);
    for (pass, &to) in targets.iter().enumerate() {
        let pass = pass as u32;
        let pass_scale = if pass + 1 == passes { plan.scale } else { 1.0 };
        let push = push_of(
            &[
                from.0.device_address() + from.1,
                to.device_address(),
                table.buffer.device_address(),
            ],
            &[
                pairs,
                log2_length,
                pass,
                table.log2_fine,
                u32::from(plan.transform == Transform::Inverse),
            ],
            Some((plan.precision, pass_scale)),
        );
        device.dispatch(
            &kernel,
            [groups(device, u64::from(pairs)), 1, 1],
            &push,
            &[
                BufferAccess::Read(from.0),
                BufferAccess::Read(&table.buffer),
                BufferAccess::Write(to),
            ],
        )?;
        from = (to, 0);
    }
    Ok(())
}

/// Whether c64 rows of `length` run as one row pass on `device` rather than the four-step
/// pair (the knob `NXVK_KNOB_FFT_ROW_PASS` or its default for the device kind, the length and
/// the device's limits): for tests and reports that count dispatches.
pub fn takes_row_pass(device: &Device, length: usize) -> bool {
    length.is_power_of_two() && row_pass_applies(device, Precision::Single, length.trailing_zeros())
}

/// Nx's `fft` (or `ifft`) along `axis`, with the transform `length` (default: the axis's;
/// shorter inputs are padded with zeros, longer ones truncated).
pub fn fft(
    input: &Tensor,
    transform: Transform,
    length: Option<usize>,
    axis: usize,
) -> Result<Tensor> {
    let op = match transform {
        Transform::Forward => "fft",
        Transform::Inverse => "ifft",
    };
    transform_axis(op, input, transform, length, axis, false)
}

/// Nx's `rfft`: the first `length / 2 + 1` elements of the `fft` of a real tensor.
pub fn rfft(input: &Tensor, length: Option<usize>, axis: usize) -> Result<Tensor> {
    const OP: &str = "rfft";
    if input.dtype().is_complex() {
        return Err(bad(OP, input, "rfft expects a real tensor".into()));
    }
    let spectrum = transform_axis(OP, input, Transform::Forward, length, axis, false)?;
    let kept = spectrum.shape()[axis] / 2 + 1;
    let mut lengths = spectrum.shape().to_vec();
    lengths[axis] = kept;
    let rank = lengths.len();
    movement::slice(&spectrum, &vec![0; rank], &lengths, &vec![1; rank])
}

/// Nx's `irfft`: the real signal of `length` (default `2 * (m - 1)` for `m` elements on the
/// axis) whose spectrum's first half is `input` (padded with zeros or truncated to
/// `length / 2 + 1`; the rest is its conjugate mirror image). f32 (from c64 and real types
/// below f64) or f64 (from c128 and f64).
pub fn irfft(input: &Tensor, length: Option<usize>, axis: usize) -> Result<Tensor> {
    const OP: &str = "irfft";
    let half = input.shape().get(axis).copied().unwrap_or(0);
    let length = match length {
        Some(length) => length,
        None if half >= 2 => 2 * (half - 1),
        None => {
            return Err(bad(
                OP,
                input,
                "the default length 2 * (m - 1) needs at least 2 elements on the axis".into(),
            ));
        }
    };
    let signal = transform_axis(OP, input, Transform::Inverse, Some(length), axis, true)?;
    // Real parts: the complex result viewed as pairs of its real type, every other one.
    let real = match signal.dtype() {
        DType::C128 => DType::F64,
        _ => DType::F32,
    };
    let shape = signal.shape().to_vec();
    let strides: Vec<usize> = nxvk_core::contiguous_strides(&shape)
        .iter()
        .map(|stride| stride * 2)
        .collect();
    let layout = nxvk_core::Layout::from_parts(shape, strides, 0)?;
    movement::contiguous(&Tensor::from_parts(signal.buffer().clone(), layout, real)?)
}

/// Transforms along `axis`; a `hermitian` input holds the first half of a Hermitian spectrum.
fn transform_axis(
    op: &'static str,
    input: &Tensor,
    transform: Transform,
    length: Option<usize>,
    axis: usize,
    hermitian: bool,
) -> Result<Tensor> {
    let rank = input.shape().len();
    if axis >= rank {
        return Err(bad(
            op,
            input,
            format!("axis {axis} out of range for rank {rank} (fft needs rank 1 or more)"),
        ));
    }
    let input_length = input.shape()[axis];
    let length = length.unwrap_or(input_length);
    if length == 0 {
        return Err(bad(
            op,
            input,
            "the transform length must be positive".into(),
        ));
    }
    let result_dtype = types::to_complex(input.dtype());
    let precision = match result_dtype {
        DType::C64 => Precision::Single,
        DType::C128 => Precision::Double,
        _ => {
            return Err(Error::Unsupported {
                op,
                dtype: input.dtype(),
                detail: "no complex type to transform into".into(),
            });
        }
    };
    if input.dtype().is_sub_byte() || matches!(input.dtype(), DType::F8E5M2 | DType::F8E4M3FN) {
        return Err(Error::Unsupported {
            op,
            dtype: input.dtype(),
            detail: "no FFT input path for sub-byte integers and 8-bit floats".into(),
        });
    }
    // The input as the precision's real or complex type, with the axis last and contiguous.
    let (load_input, cast) = match input.dtype() {
        DType::C64 | DType::C128 => (LoadInput::Complex, input.clone()),
        DType::F64 => (LoadInput::Real, input.clone()),
        DType::F32 => (LoadInput::Real, input.clone()),
        _ => (LoadInput::Real, ops::as_type(input, DType::F32)?),
    };
    let mut permutation: Vec<usize> = (0..rank).filter(|&other| other != axis).collect();
    permutation.push(axis);
    let rows_tensor = if axis + 1 == rank {
        movement::contiguous(&cast)?
    } else {
        movement::transpose(&cast, &permutation)?
    };
    let mut moved_shape = rows_tensor.shape().to_vec();
    *moved_shape.last_mut().expect("rank 1 or more") = length;
    let device = input.device();
    let output = Tensor::empty(device, result_dtype, &moved_shape)?;
    let rows = output.n_elements() / length;
    if rows > 0 {
        poison_output(output.buffer())?;
        transform_rows(
            op,
            &rows_tensor,
            &output,
            (precision, load_input, transform, hermitian),
            rows,
            (input_length, length),
        )?;
    }
    if axis + 1 == rank {
        Ok(output)
    } else {
        let mut inverse = vec![0; rank];
        for (position, &moved) in permutation.iter().enumerate() {
            inverse[moved] = position;
        }
        movement::transpose(&output, &inverse)
    }
}

/// Transforms `rows` rows of `rows_tensor` (rows of `input_length`) into `output` (rows of
/// `length`).
fn transform_rows(
    op: &'static str,
    rows_tensor: &Tensor,
    output: &Tensor,
    (precision, load_input, transform, hermitian): (Precision, LoadInput, Transform, bool),
    rows: usize,
    (input_length, length): (usize, usize),
) -> Result<()> {
    let device = output.device();
    let bytes = precision.complex_bytes();
    let inverse = u32::from(transform == Transform::Inverse);
    let final_scale = match transform {
        Transform::Forward => 1.0,
        Transform::Inverse => 1.0 / length as f64,
    };
    let mixed = mixed_plan(precision, length);
    let padded = if length.is_power_of_two() || mixed.is_some() {
        length
    } else {
        (2 * length - 1).next_power_of_two()
    };
    let total = rows
        .checked_mul(padded)
        .filter(|&total| total < (u32::MAX / 2) as usize)
        .ok_or_else(|| {
            bad(
                op,
                rows_tensor,
                format!("{rows} rows of {padded} exceed 32-bit indices"),
            )
        })?;
    let log2_padded = padded.trailing_zeros();
    let source_address = rows_tensor.device_address().unwrap_or_default();
    let load = |destination: &DeviceBuffer, chirp: Option<&DeviceBuffer>| -> Result<()> {
        let kernel = device.kernel_from_glsl(
            &format!("fft_load_{:?}_{}", load_input, precision.name()).to_lowercase(),
            &load_shader(precision, load_input),
            &[],
        )?;
        let push = push_of(
            &[
                source_address,
                destination.device_address(),
                chirp.map_or(0, DeviceBuffer::device_address),
            ],
            &[
                total as u32,
                log2_padded,
                input_length as u32,
                length as u32,
                inverse,
                u32::from(hermitian),
            ],
            None,
        );
        let mut accesses = vec![
            BufferAccess::Read(rows_tensor.buffer()),
            BufferAccess::Write(destination),
        ];
        if let Some(chirp) = chirp {
            accesses.push(BufferAccess::Read(chirp));
        }
        device.dispatch(
            &kernel,
            [groups(device, total as u64), 1, 1],
            &push,
            &accesses,
        )
    };
    // An empty input (rows of length 0 padded) has no address and reads nothing.
    let offset = rows_tensor
        .device_address()
        .map_or(0, |address| address - rows_tensor.buffer().device_address());
    let rows_source = RowSource {
        rows: Rows {
            buffer: rows_tensor.buffer(),
            offset,
            row_stride: input_length as u32,
            limit: input_length.min(length) as u32,
            factors: None,
        },
        input: load_input,
    };
    if let Some(plan) = mixed {
        let source = MixedSource {
            buffer: rows_source.rows.buffer,
            offset: rows_source.rows.offset,
            row_stride: rows_source.rows.row_stride,
            limit: rows_source.rows.limit,
            input: load_input,
            hermitian,
        };
        return transform_mixed(
            device,
            op,
            plan,
            precision,
            transform,
            rows,
            length,
            source,
            output.buffer(),
        );
    }
    if padded == length {
        if log2_padded == 0 {
            // Length 1: the transform is the (padded or truncated) input itself.
            return load(output.buffer(), None);
        }
        let plan = Plan {
            precision,
            transform,
            scale: final_scale,
        };
        let scratch = device.alloc(op, total as u64 * bytes)?;
        let output_rows = Rows::packed(output.buffer(), length as u32);
        // Block passes read the rows as they are (padding, truncating and widening on the
        // way in); the radix-2 passes and irfft's mirrored input need the load pass first.
        if !hermitian
            && (runs_in_block_passes(precision, log2_padded)
                || rows_source.is_packed(length as u32))
        {
            return transform_power_of_two(
                device,
                plan,
                rows,
                log2_padded,
                rows_source,
                output_rows,
                &scratch,
            );
        }
        load(output.buffer(), None)?;
        return transform_power_of_two(
            device,
            plan,
            rows,
            log2_padded,
            RowSource::packed(output.buffer(), length as u32),
            output_rows,
            &scratch,
        );
    }
    // Bluestein: the input times the chirp, transformed, times the kernel's spectrum, back,
    // and times the chirp again. Where the convolution runs as block passes, each product
    // happens on the way into or out of a pass; longer ones (and irfft's mirrored input) run
    // the load, pointwise and store passes around the radix-2 passes.
    let tables = bluestein_tables(device, precision, transform, length, padded)?;
    let chirp = Factors {
        table: &tables.chirp,
        conjugate: transform == Transform::Inverse,
    };
    let spectrum = Factors {
        table: &tables.spectrum,
        conjugate: false,
    };
    let fused = runs_in_block_passes(precision, log2_padded);
    let padded_word = padded as u32;
    let work = device.alloc(op, total as u64 * bytes)?;
    let scratch = device.alloc(op, total as u64 * bytes)?;
    let chirped_input = if fused && !hermitian {
        RowSource {
            rows: Rows {
                factors: Some(chirp),
                ..rows_source.rows
            },
            ..rows_source
        }
    } else {
        load(&work, Some(chirp.table))?;
        RowSource::packed(&work, padded_word)
    };
    let forward = Plan {
        precision,
        transform: Transform::Forward,
        scale: 1.0,
    };
    let spectrum_product = Rows {
        factors: fused.then_some(spectrum),
        ..Rows::packed(&work, padded_word)
    };
    transform_power_of_two(
        device,
        forward,
        rows,
        log2_padded,
        chirped_input,
        spectrum_product,
        &scratch,
    )?;
    if !fused {
        let pointwise = device.kernel_from_glsl(
            &format!("fft_pointwise_{}", precision.name()),
            &pointwise_shader(precision),
            &[],
        )?;
        device.dispatch(
            &pointwise,
            [groups(device, total as u64), 1, 1],
            &push_of(
                &[work.device_address(), spectrum.table.device_address()],
                &[total as u32, log2_padded],
                None,
            ),
            &[
                BufferAccess::Write(&work),
                BufferAccess::Read(spectrum.table),
            ],
        )?;
    }
    let backward = Plan {
        precision,
        transform: Transform::Inverse,
        scale: if fused {
            final_scale / padded as f64
        } else {
            1.0 / padded as f64
        },
    };
    let convolution = RowSource::packed(&work, padded_word);
    if fused {
        let chirped_output = Rows {
            buffer: output.buffer(),
            offset: 0,
            row_stride: length as u32,
            limit: length as u32,
            factors: Some(chirp),
        };
        return transform_power_of_two(
            device,
            backward,
            rows,
            log2_padded,
            convolution,
            chirped_output,
            &scratch,
        );
    }
    transform_power_of_two(
        device,
        backward,
        rows,
        log2_padded,
        convolution,
        Rows::packed(&work, padded_word),
        &scratch,
    )?;
    let store = device.kernel_from_glsl(
        &format!("fft_store_{}", precision.name()),
        &store_shader(precision),
        &[],
    )?;
    let count = (rows * length) as u32;
    device.dispatch(
        &store,
        [groups(device, u64::from(count)), 1, 1],
        &push_of(
            &[
                work.device_address(),
                output.device_address().unwrap_or_default(),
                chirp.table.device_address(),
            ],
            &[count, log2_padded, length as u32, inverse],
            Some((precision, final_scale)),
        ),
        &[
            BufferAccess::Read(&work),
            BufferAccess::Read(chirp.table),
            BufferAccess::Write(output.buffer()),
        ],
    )
}

/// Nx's `fft2` (or `ifft2`): transforms along `axes[0]` and `axes[1]` with optional lengths.
pub fn fft2(
    input: &Tensor,
    transform: Transform,
    lengths: Option<[usize; 2]>,
    axes: [usize; 2],
) -> Result<Tensor> {
    let inner = fft(input, transform, lengths.map(|lengths| lengths[1]), axes[1])?;
    fft(
        &inner,
        transform,
        lengths.map(|lengths| lengths[0]),
        axes[0],
    )
}
