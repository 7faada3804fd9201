//! The dense variant of the elementwise kernels (four elements per access, `dense_codegen.rs`)
//! against the generic template, bit for bit: every op of the table on every native dtype whose
//! kernel computes in that dtype and every cast between native dtypes, on lengths that exercise the unrolled loop, the single-packet
//! loop and the tail, with NaN, infinities, -0.0 and extreme integers mixed in.
//!
//! Each case runs the op three ways on the same values: dense and packet-aligned (the dense
//! variant, which the test proves through `runs_dense`), as a strided view (stride 2: the
//! generic template's strided path) and as a view at a one-element offset (dense but not
//! aligned: the generic template's linear path). Correctness against Nx's semantics is
//! `elementwise.rs`'s job, whose contiguous cases now run the dense variant too.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::types::{binary_types, unary_types};
use nxvk_kernels::{
    BinaryOp, UnaryOp, binary_kernel, cast_kernel, elem_of, ops, runs_dense, unary_kernel,
};
use proptest::prelude::*;

/// Cases per property (`NXVK_TEST_CASES` soaks them).
fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(6)
}

/// The three layouts of one operand's values: dense `[n, 1]`, strided `[n, 1]` (stride 2) and
/// dense at a one-element offset.
struct Layouts {
    dense: Tensor,
    strided: Tensor,
    offset: Tensor,
}

fn layouts(dtype: DType, values: &[Value], rng: &mut SplitMix) -> Layouts {
    let device = device();
    let n = values.len();
    let upload = |values: &[Value], shape: &[usize]| {
        Tensor::from_bytes(&device, dtype, shape, &reference::encode(dtype, values)).unwrap()
    };
    let dense = upload(values, &[n, 1]);
    let interleaved: Vec<Value> = values
        .iter()
        .flat_map(|&value| [value, random_value(dtype, Domain::Wide, rng)])
        .collect();
    let strided = upload(&interleaved, &[n, 2])
        .slice(&[0, 0], &[n, 1])
        .unwrap();
    let shifted: Vec<Value> = std::iter::once(random_value(dtype, Domain::Wide, rng))
        .chain(values.iter().copied())
        .collect();
    let offset = upload(&shifted, &[n + 1, 1])
        .slice(&[1, 0], &[n, 1])
        .unwrap();
    Layouts {
        dense,
        strided,
        offset,
    }
}

/// Equal bytes, or a message naming the first differing element.
fn same_bits(what: &str, expected: &Tensor, actual: &Tensor) -> Result<(), String> {
    let expected_bytes = expected.to_bytes().map_err(|error| error.to_string())?;
    let actual_bytes = actual.to_bytes().map_err(|error| error.to_string())?;
    if expected_bytes == actual_bytes {
        return Ok(());
    }
    let size = expected.dtype().byte_size().unwrap_or(1) as usize;
    let first = expected_bytes
        .iter()
        .zip(&actual_bytes)
        .position(|(a, b)| a != b)
        .map_or(0, |byte| byte / size);
    Err(format!(
        "{what}: element {first} of {:?} differs ({} bytes against {})",
        expected.shape(),
        expected_bytes.len(),
        actual_bytes.len()
    ))
}

/// Runs `run` on the three layouts of `operands` and compares the results bit for bit;
/// `dense_kernel_ran` says whether the dense run took the dense variant.
fn check_layouts(
    what: &str,
    operands: &[Layouts],
    run: impl Fn(&[&Tensor]) -> nxvk_core::Result<Tensor>,
    dense_kernel_ran: impl Fn(&[&Tensor], &Tensor) -> bool,
) -> Result<(), String> {
    let pick = |choose: fn(&Layouts) -> &Tensor| operands.iter().map(choose).collect::<Vec<_>>();
    let run_on = |tensors: &[&Tensor]| run(tensors).map_err(|error| format!("{what}: {error}"));
    let dense_inputs = pick(|layouts| &layouts.dense);
    let dense = run_on(&dense_inputs)?;
    let n_elements = dense.n_elements();
    if n_elements > 0 && !dense_kernel_ran(&dense_inputs, &dense) {
        return Err(format!(
            "{what}: the dense run did not take the dense variant"
        ));
    }
    let strided = run_on(&pick(|layouts| &layouts.strided))?;
    same_bits(&format!("{what} dense vs strided"), &strided, &dense)?;
    let offset_inputs = pick(|layouts| &layouts.offset);
    let offset = run_on(&offset_inputs)?;
    if n_elements > 0 && dense_kernel_ran(&offset_inputs, &offset) {
        return Err(format!("{what}: a misaligned view took the dense variant"));
    }
    same_bits(&format!("{what} dense vs offset"), &strided, &offset)
}

fn values(dtype: DType, n: usize, rng: &mut SplitMix) -> Vec<Value> {
    (0..n)
        .map(|_| random_value(dtype, Domain::Wide, rng))
        .collect()
}

fn check_binary(op: BinaryOp, dtype: DType, n: usize, rng: &mut SplitMix) -> Result<(), String> {
    let Some(kernel) = elem_of(dtype).and_then(|elem| binary_kernel(op, elem)) else {
        return Ok(());
    };
    let left = layouts(dtype, &values(dtype, n, rng), rng);
    let right = layouts(dtype, &values(dtype, n, rng), rng);
    check_layouts(
        &format!("{} {dtype:?} n={n}", op.name()),
        &[left, right],
        |tensors| ops::binary(op, tensors[0], tensors[1]),
        |tensors, output| runs_dense(kernel, tensors, output),
    )
}

fn check_unary(op: UnaryOp, dtype: DType, n: usize, rng: &mut SplitMix) -> Result<(), String> {
    let Some(kernel) = elem_of(dtype).and_then(|elem| unary_kernel(op, elem)) else {
        return Ok(());
    };
    let input = layouts(dtype, &values(dtype, n, rng), rng);
    check_layouts(
        &format!("{} {dtype:?} n={n}", op.name()),
        &[input],
        |tensors| ops::unary(op, tensors[0]),
        |tensors, output| runs_dense(kernel, tensors, output),
    )
}

fn check_cast(from: DType, to: DType, n: usize, rng: &mut SplitMix) -> Result<(), String> {
    let (Some(from_elem), Some(to_elem)) = (elem_of(from), elem_of(to)) else {
        return Ok(());
    };
    let Some(kernel) = cast_kernel(from_elem, to_elem) else {
        return Ok(());
    };
    let input = layouts(from, &values(from, n, rng), rng);
    check_layouts(
        &format!("as_type {from:?} -> {to:?} n={n}"),
        &[input],
        |tensors| ops::as_type(tensors[0], to),
        |tensors, output| runs_dense(kernel, tensors, output),
    )
}

/// Lengths around the packet boundaries and, from 3076 elements, through the unrolled loop of
/// four packets per invocation (launch.rs gives each invocation up to four packets, so lengths
/// just under a multiple of 4096 run both loops and the tail).
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..40, 4000usize..4110]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 16, ..ProptestConfig::default() })]

    #[test]
    fn dense_binary_kernels_match_the_generic_template_bit_for_bit(n in length(), seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        for &op in BinaryOp::ALL {
            for dtype in ops::native_dtypes() {
                // Only ops whose kernel computes in the operands' own type: any cast first
                // would make every layout dense before the op's kernel runs.
                let computes_in_place = binary_types(op, dtype, dtype, &[])
                    .is_ok_and(|types| types.compute == dtype);
                if computes_in_place {
                    check_binary(op, dtype, n, &mut rng).map_err(TestCaseError::fail)?;
                }
            }
        }
    }

    #[test]
    fn dense_casts_match_the_generic_template_bit_for_bit(n in length(), seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        for from in ops::native_dtypes() {
            for to in ops::native_dtypes() {
                if from != to {
                    check_cast(from, to, n, &mut rng).map_err(TestCaseError::fail)?;
                }
            }
        }
    }

    #[test]
    fn dense_unary_kernels_match_the_generic_template_bit_for_bit(n in length(), seed in any::<u64>()) {
        let mut rng = SplitMix(seed);
        for &op in UnaryOp::ALL {
            for dtype in ops::native_dtypes() {
                let computes_in_place = unary_types(op, dtype, &[])
                    .is_ok_and(|types| types.compute == dtype && !types.result.is_complex());
                if computes_in_place {
                    check_unary(op, dtype, n, &mut rng).map_err(TestCaseError::fail)?;
                }
            }
        }
    }
}

/// The null arm: the comparison rejects a result that differs in one bit of one element, and
/// the dense-path check rejects a run that did not take the dense variant.
#[test]
fn the_comparison_rejects_a_perturbed_result_and_a_missed_variant() {
    let mut rng = SplitMix(7);
    let dtype = DType::F32;
    let operands = [layouts(dtype, &values(dtype, 37, &mut rng), &mut rng)];
    let perturbed = check_layouts(
        "neg f32 perturbed",
        &operands,
        |tensors| {
            let result = ops::negate(tensors[0])?;
            let mut bytes = result.to_bytes()?;
            // Perturb only the dense (packet-aligned) run.
            if tensors[0].layout().is_contiguous() && tensors[0].layout().offset() == 0 {
                bytes[4 * 35] ^= 1;
            }
            Tensor::from_bytes(result.device(), dtype, result.shape(), &bytes)
        },
        |_, _| true,
    );
    assert!(perturbed.is_err_and(|why| why.contains("element 35")));
    let missed = check_layouts(
        "neg f32",
        &operands,
        |tensors| ops::negate(tensors[0]),
        |_, _| false,
    );
    assert!(missed.is_err_and(|why| why.contains("did not take the dense variant")));
    let kernel = unary_kernel(UnaryOp::Negate, nxvk_kernels::Elem::F32).unwrap();
    let passes = check_layouts(
        "neg f32",
        &operands,
        |tensors| ops::negate(tensors[0]),
        |tensors, output| runs_dense(kernel, tensors, output),
    );
    assert_eq!(passes, Ok(()));
}
