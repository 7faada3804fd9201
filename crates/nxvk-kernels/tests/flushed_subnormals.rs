//! f32 ops give the same normal results whether or not the driver flushes subnormal inputs.
//!
//! NVIDIA's driver flushes f32 subnormal inputs and outputs of every float instruction
//! (comparisons and conversions included) and cannot be asked otherwise; lavapipe keeps them.
//! So the kernels classify operands from their bits and take exact paths for subnormals
//! (`src/glsl_helpers.glsl`). This test runs them on a device that flushes: on x86-64,
//! lavapipe opened from a thread whose MXCSR has the DAZ and FTZ bits set (lavapipe's worker
//! threads, created with the device, inherit them and run the kernels' SSE/AVX code flushing,
//! as the H200 does: without the bit-level paths log(-1e-45) was -inf and cbrt(1e-45) 0 here
//! too); on a GPU that flushes by itself, the test device. The host references run on other
//! threads and never flush. Results that are themselves subnormal may be flushed (Vulkan
//! allows it); every other result must meet the same check as on a device that keeps
//! subnormals.

mod common;

use common::SplitMix;
use nxvk_core::{Context, DType, Device, Tensor};
use nxvk_kernels::accuracy::{MeasuredOp, samples, ulp_bound, worst};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, UnaryOp, as_type, binary, f32_math, unary};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

/// Work for the flushing thread: it gets the device, and sends its answer back itself.
type Job = Box<dyn FnOnce(&Arc<Device>) + Send>;

/// Runs `work` on the thread that owns this binary's only device, the flushing one: a
/// thread whose MXCSR flushes (x86-64), which opened the Vulkan context (so lavapipe's worker
/// threads inherit the mode) and submits every dispatch (lavapipe may run work on the
/// submitting thread). `work` must not convert floats on the host (the thread flushes them
/// too): uploads and downloads here are raw bytes, encoded and decoded by the caller.
fn on_flushing_device<R: Send + 'static>(
    work: impl FnOnce(&Arc<Device>) -> R + Send + 'static,
) -> R {
    static JOBS: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (sender, receiver) = channel::<Job>();
        std::thread::spawn(move || {
            set_denormals_are_zero_and_flush_to_zero();
            let context = Context::new().expect("a Vulkan device (lavapipe in CI)");
            let device = context.device().expect("device");
            for job in receiver {
                job(&device);
            }
        });
        Mutex::new(sender)
    });
    let (answer, answers) = channel();
    let job: Job = Box::new(move |device| {
        let _ = answer.send(work(device));
    });
    jobs.lock()
        .unwrap()
        .send(job)
        .expect("the flushing thread runs");
    answers.recv().expect("the flushing thread answers")
}

#[cfg(target_arch = "x86_64")]
fn set_denormals_are_zero_and_flush_to_zero() {
    // MXCSR bit 6 (DAZ) flushes subnormal inputs, bit 15 (FTZ) subnormal results.
    const DAZ_AND_FTZ: u32 = (1 << 6) | (1 << 15);
    // SAFETY: changes this thread's floating-point control word only; SSE is always present
    // on x86-64.
    #[allow(deprecated)]
    unsafe {
        std::arch::x86_64::_mm_setcsr(std::arch::x86_64::_mm_getcsr() | DAZ_AND_FTZ);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn set_denormals_are_zero_and_flush_to_zero() {}

/// f32 values as the bytes of an f32 tensor (encoded on this thread, which keeps subnormals).
fn f32_bytes(values: &[f64]) -> Vec<u8> {
    let values: Vec<Value> = values.iter().map(|&value| Value::Float(value)).collect();
    reference::encode(DType::F32, &values)
}

/// One op of the table, unary or binary, on f32 operands given as bytes, on the flushing
/// device: the result's dtype and bytes.
#[derive(Debug, Clone, Copy)]
enum Run {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Cast(DType),
}

fn run_flushing(run: Run, operands: Vec<Vec<u8>>) -> (DType, Vec<u8>) {
    on_flushing_device(move |device| {
        let tensors: Vec<Tensor> = operands
            .iter()
            .map(|bytes| Tensor::from_bytes(device, DType::F32, &[bytes.len() / 4], bytes).unwrap())
            .collect();
        let output = match run {
            Run::Unary(op) => unary(op, &tensors[0]),
            Run::Binary(op) => binary(op, &tensors[0], &tensors[1]),
            Run::Cast(dtype) => as_type(&tensors[0], dtype),
        }
        .unwrap();
        (output.dtype(), output.to_bytes().unwrap())
    })
}

fn decoded((dtype, bytes): (DType, Vec<u8>)) -> Vec<Value> {
    reference::decode(dtype, &bytes, bytes.len() * 8 / dtype.bits() as usize).unwrap()
}

/// Whether the flushing device flushes: the smallest subnormal plus zero.
fn device_flushes() -> bool {
    let sum = decoded(run_flushing(
        Run::Binary(BinaryOp::Add),
        vec![
            f32_bytes(&[f64::from(f32::from_bits(1))]),
            f32_bytes(&[0.0]),
        ],
    ));
    sum == [Value::Float(0.0)]
}

/// Subnormals of both signs and their neighbourhood: the smallest ones, the largest, a few in
/// between, and the smallest normals.
fn subnormal_edges() -> Vec<f64> {
    let mut values = Vec::new();
    for bits in [
        1u32, 2, 3, 0x40_0000, 0x7F_FFFE, 0x7F_FFFF, 0x80_0000, 0x80_0001,
    ] {
        let value = f64::from(f32::from_bits(bits));
        values.extend([value, -value]);
    }
    values
}

/// A few random subnormals of both signs.
fn random_subnormals(random: &mut SplitMix, count: usize) -> Vec<f64> {
    (0..count)
        .map(|_| {
            let bits = (random.next() as u32) & 0x807F_FFFF;
            f64::from(f32::from_bits(bits))
        })
        .collect()
}

#[test]
fn the_device_flushes_subnormals() {
    // The checks below mean something only where subnormals are flushed: this is the null arm
    // (the plain f32 add loses the smallest subnormal; see also the FIXME test below).
    assert!(
        device_flushes(),
        "the emulation did not take (lavapipe on x86-64 flushes under DAZ/FTZ; a GPU must flush by itself)"
    );
}

#[test]
fn transcendentals_meet_their_bounds_where_subnormals_flush() {
    assert!(device_flushes());
    let mut random = SplitMix(0x5ab);
    let math = on_flushing_device(|device| f32_math(device));
    let mut failures = Vec::new();
    for op in MeasuredOp::all() {
        let mut inputs = samples(op, DType::F32, 1 << 11, 0xF1u64);
        let edges = subnormal_edges();
        let extra = random_subnormals(&mut random, 64);
        match op {
            MeasuredOp::Unary(_) => {
                inputs.extend(edges.iter().chain(&extra).map(|&value| vec![value]));
            }
            MeasuredOp::Binary(_) => {
                let partners = [
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    2.5,
                    f64::NAN,
                    f64::INFINITY,
                    2f64.powi(-100),
                ];
                for &value in edges.iter().chain(&extra) {
                    for &partner in partners.iter().chain(&edges) {
                        inputs.push(vec![value, partner]);
                        inputs.push(vec![partner, value]);
                    }
                }
            }
        }
        let columns = (0..inputs[0].len())
            .map(|operand| {
                f32_bytes(
                    &inputs
                        .iter()
                        .map(|sample| sample[operand])
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let run = match op {
            MeasuredOp::Unary(unary) => Run::Unary(unary),
            MeasuredOp::Binary(binary) => Run::Binary(binary),
        };
        let actual: Vec<f64> = decoded(run_flushing(run, columns))
            .into_iter()
            .map(|value| match value {
                Value::Float(float) => float,
                _ => f64::NAN,
            })
            .collect();
        let measurement = worst(op, DType::F32, &inputs, &actual);
        if measurement.max_ulps > ulp_bound(op.name(), DType::F32, math) {
            failures.push(format!("{measurement:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// True when `actual` is the reference `expected`, or a signed zero where `expected` is a
/// subnormal (a flushed result).
fn matches_or_flushed(actual: Value, expected: Value) -> bool {
    match (actual, expected) {
        (Value::Float(actual), Value::Float(expected)) => {
            actual.to_bits() == expected.to_bits()
                || (actual.is_nan() && expected.is_nan())
                || (actual == 0.0
                    && expected != 0.0
                    && expected.abs() < f64::from(f32::MIN_POSITIVE))
        }
        (actual, expected) => actual == expected,
    }
}

/// A reference result as the kernel stores it: floats rounded to f32, predicates as they are.
fn rounded(value: Value) -> Value {
    match value {
        Value::Float(_) => reference::round_to(value, DType::F32),
        other => other,
    }
}

/// The exact f32 ops (bit for bit against the reference on a device that keeps subnormals)
/// that still let a flushed subnormal input change a normal result. FIXME: add, subtract and
/// multiply use the driver's instructions directly (a check on every operand would tax the
/// hottest ops and every fused chain); 2^-126 + 2^-149 and 2^-149 * 2^100 show it below.
const FLUSHING_ARITHMETIC: [BinaryOp; 3] = [BinaryOp::Add, BinaryOp::Subtract, BinaryOp::Multiply];

#[test]
fn exact_f32_ops_keep_their_normal_results_where_subnormals_flush() {
    assert!(device_flushes());
    let mut random = SplitMix(0xE7AC7);
    let mut values = subnormal_edges();
    values.extend(random_subnormals(&mut random, 32));
    values.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        // 2^-100: quotients and remainders of subnormals by it are normal.
        2f64.powi(-100),
        f64::NAN,
        f64::INFINITY,
    ]);
    let left: Vec<f64> = values
        .iter()
        .flat_map(|&a| values.iter().map(move |_| a))
        .collect();
    let right: Vec<f64> = values.iter().flat_map(|_| values.iter().copied()).collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for &op in BinaryOp::ALL {
        let spec = op.spec();
        if !spec.exact || spec.glsl.float.is_none() || FLUSHING_ARITHMETIC.contains(&op) {
            continue;
        }
        let output = decoded(run_flushing(
            Run::Binary(op),
            vec![f32_bytes(&left), f32_bytes(&right)],
        ));
        for ((&a, &b), actual) in left.iter().zip(&right).zip(output) {
            let expected =
                reference::binary(op, DType::F32, Value::Float(a), Value::Float(b)).map(rounded);
            if let Some(expected) = expected
                && !matches_or_flushed(actual, expected)
            {
                failures.push(format!(
                    "{} {a:e} {b:e}: {actual:?}, expected {expected:?}",
                    op.name()
                ));
            }
        }
        checked += 1;
    }
    for &op in UnaryOp::ALL {
        let spec = op.spec();
        if !spec.exact || spec.glsl.float.is_none() {
            continue;
        }
        let output = decoded(run_flushing(Run::Unary(op), vec![f32_bytes(&values)]));
        for (&a, actual) in values.iter().zip(output) {
            let expected = reference::unary(op, DType::F32, Value::Float(a)).map(rounded);
            if let Some(expected) = expected
                && !matches_or_flushed(actual, expected)
            {
                failures.push(format!(
                    "{} {a:e}: {actual:?}, expected {expected:?}",
                    op.name()
                ));
            }
        }
        checked += 1;
    }
    // f32 -> f64 converts subnormals exactly; to integers they truncate to 0.
    let widened = decoded(run_flushing(
        Run::Cast(DType::F64),
        vec![f32_bytes(&values)],
    ));
    for (&a, actual) in values.iter().zip(widened) {
        if !matches_or_flushed(actual, Value::Float(a)) {
            failures.push(format!("as_type f64 {a:e}: {actual:?}"));
        }
    }
    assert!(checked >= 20, "{checked} ops");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn arithmetic_still_flushes_subnormal_operands() {
    // FIXME (FLUSHING_ARITHMETIC): today's behaviour where the driver flushes, asserted so
    // that a fix shows up here. On a device that keeps subnormals both are exact.
    let smallest = f64::from(f32::from_bits(1));
    let normal = f64::from(f32::MIN_POSITIVE);
    let sum = decoded(run_flushing(
        Run::Binary(BinaryOp::Add),
        vec![f32_bytes(&[normal]), f32_bytes(&[smallest])],
    ));
    assert_eq!(
        sum,
        [Value::Float(normal)],
        "the flushed 2^-149 adds nothing"
    );
    let product = decoded(run_flushing(
        Run::Binary(BinaryOp::Multiply),
        vec![f32_bytes(&[smallest]), f32_bytes(&[2f64.powi(100)])],
    ));
    assert_eq!(product, [Value::Float(0.0)]);
}
