//! argmax/argmin in two passes (rows split into chunks whose winning indices a second kernel
//! combines): against the one-pass kernels (themselves checked against Nx.BinaryBackend's rules
//! in `tests/reduce.rs`) on random shapes, axes, views, chunk counts and every native type,
//! with NaN, ties and extreme values; against known indices on a row longer than the one-pass
//! limit (16M elements), which takes the two passes by itself.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::reduce::{self, ReduceOp, TieBreak, arg_reduce_in_chunks};
use nxvk_kernels::reference::Value;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(8), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn two_passes_agree_with_one(
        short in prop::collection::vec(1usize..5, 0..=2),
        long in 200usize..800,
        view in any_view_kind(),
        seed in any::<u64>(),
    ) {
        let device = device();
        let mut rng = SplitMix(seed);
        // One long axis somewhere, so rows span several 256-element chunk strides.
        let mut shape = short.clone();
        shape.insert(rng.below(short.len() as u64 + 1) as usize, long);
        let rank = shape.len();
        let native: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
        // Three types per case keep a case to seconds on lavapipe; cases cover them all.
        for _ in 0..3 {
            let dtype = native[rng.below(native.len() as u64) as usize];
            // Small integers make ties; floats bring NaN and infinities.
            let domain = if rng.below(2) == 0 { Domain::SmallInteger } else { Domain::Wide };
            let (input, _) = make_input(&device, dtype, &shape, view, domain, &mut rng);
            let axis = (rng.below(2) == 0).then(|| rng.below(rank as u64) as usize);
            let chunks = rng.below(6) as usize + 1;
            for op in [ReduceOp::ArgMax, ReduceOp::ArgMin] {
                for tie_break in [TieBreak::Low, TieBreak::High] {
                    let keep = rng.below(2) == 0;
                    let one = if op == ReduceOp::ArgMax {
                        reduce::argmax(&input, axis, tie_break, keep)
                    } else {
                        reduce::argmin(&input, axis, tie_break, keep)
                    }
                    .unwrap();
                    let two = arg_reduce_in_chunks(op, &input, axis, tie_break, keep, chunks).unwrap();
                    prop_assert_eq!(two.shape(), one.shape());
                    prop_assert_eq!(
                        two.to_vec::<i64>().unwrap(),
                        one.to_vec::<i64>().unwrap(),
                        "{} {} {:?} axis {:?} {:?} in {} chunks", op.name(), dtype, shape, axis, tie_break, chunks
                    );
                }
            }
        }
    }
}

/// Known indices: NaN positions (the last wins), ties (first or last), chunks past the row
/// (empty ones), and a null arm showing the check tells the tie rules apart.
#[test]
fn known_indices_and_null_arm() {
    let device = device();
    let values = [1.0f32, 7.0, f32::NAN, 7.0, -3.0, f32::NAN, 0.5, 7.0, -3.0];
    let input = Tensor::from_slice(&device, &[9], &values).unwrap();
    let index = |op, tie_break, chunks| {
        arg_reduce_in_chunks(op, &input, None, tie_break, false, chunks)
            .unwrap()
            .to_vec::<i64>()
            .unwrap()[0]
    };
    for chunks in [1, 2, 3, 9, 40] {
        assert_eq!(index(ReduceOp::ArgMax, TieBreak::Low, chunks), 5);
        assert_eq!(index(ReduceOp::ArgMin, TieBreak::High, chunks), 5);
    }
    let finite = [1.0f32, 7.0, 2.0, 7.0, -3.0, 6.0, 0.5, 7.0, -3.0];
    let input = Tensor::from_slice(&device, &[3, 3], &finite).unwrap();
    let rows = |op, tie_break| {
        arg_reduce_in_chunks(op, &input, Some(1), tie_break, false, 2)
            .unwrap()
            .to_vec::<i64>()
            .unwrap()
    };
    assert_eq!(rows(ReduceOp::ArgMax, TieBreak::Low), [1, 0, 1]);
    assert_eq!(rows(ReduceOp::ArgMin, TieBreak::Low), [0, 1, 2]);
    let flat =
        arg_reduce_in_chunks(ReduceOp::ArgMax, &input, None, TieBreak::High, false, 4).unwrap();
    assert!(check_output_exact("argmax high", &flat, &[], &[Value::Int(7)]).is_ok());
    // Null arm: the low tie-break's index is not the high one's.
    assert!(check_output_exact("null", &flat, &[], &[Value::Int(1)]).is_err());
}

/// A row longer than the one-pass limit splits by itself; extremes sit in different chunks,
/// ties at both ends.
#[test]
fn a_row_past_sixteen_million_elements_takes_two_passes() {
    let device = device();
    let n = (1usize << 24) + 1_000_003;
    let mut values = vec![5u8; n];
    for &position in &[3usize, n / 2, n - 2] {
        values[position] = 200;
    }
    values[777_777] = 1;
    values[n - 1] = 1;
    let input = Tensor::from_slice(&device, &[n], &values).unwrap();
    assert_eq!(input.dtype(), DType::U8);
    let index = |tensor: Tensor| tensor.to_vec::<i64>().unwrap()[0];
    assert_eq!(
        index(reduce::argmax(&input, None, TieBreak::Low, false).unwrap()),
        3
    );
    assert_eq!(
        index(reduce::argmax(&input, Some(0), TieBreak::High, false).unwrap()),
        (n - 2) as i64
    );
    assert_eq!(
        index(reduce::argmin(&input, None, TieBreak::Low, false).unwrap()),
        777_777
    );
    assert_eq!(
        index(reduce::argmin(&input, None, TieBreak::High, false).unwrap()),
        (n - 1) as i64
    );
}
