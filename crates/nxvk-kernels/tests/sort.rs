//! Sorting against a stable host sort with Nx's order (NaN above +infinity, -0.0 equal to
//! 0.0): sort and argsort on every axis of random shapes (empty and rank 0 included), both
//! directions, every real byte-sized dtype, inputs full of ties; rows longer than the
//! shared-memory block (global network steps); long rows, one to seventeen of them (the radix
//! sort for every key width: lengths around its tiles, one to eight passes, top_k through its
//! items); batches of rows on both sides of each dtype's switch-over between the paths; top_k;
//! and stability checked explicitly, 64-bit keys, NaNs and signed zeros included.
//! `sort_radix_path.rs` pins which rows take the radix path.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::sort::{self, Direction};
use proptest::prelude::*;
use std::cmp::Ordering;

fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(24)
}

fn real_dtypes() -> Vec<DType> {
    nxvk_kernels::ops::native_dtypes().collect()
}

/// Nx's ascending order: NaN last, -0.0 equal to 0.0.
fn nx_order(a: Value, b: Value) -> Ordering {
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => a.cmp(&b),
        (Value::Float(a), Value::Float(b)) => match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => a.partial_cmp(&b).expect("not NaN"),
        },
        _ => unreachable!("real values"),
    }
}

/// Positions of each row of `values` (rows along `axis` of `shape`) in stable sorted order.
fn host_argsort(
    values: &[Value],
    shape: &[usize],
    axis: usize,
    direction: Direction,
) -> Vec<usize> {
    let rank = shape.len();
    if rank == 0 {
        return vec![0];
    }
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut result = vec![0; values.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |position: usize| (o * length + position) * inner + i;
            let mut positions: Vec<usize> = (0..length).collect();
            positions.sort_by(|&p, &q| {
                let ordering = nx_order(values[at(p)], values[at(q)]);
                match direction {
                    Direction::Ascending => ordering,
                    Direction::Descending => ordering.reverse(),
                }
            });
            for (slot, &position) in positions.iter().enumerate() {
                result[at(slot)] = position;
            }
        }
    }
    result
}

/// The values at the sorted positions (same layout as `positions`).
fn gathered(values: &[Value], shape: &[usize], axis: usize, positions: &[usize]) -> Vec<Value> {
    if shape.is_empty() {
        return values.to_vec();
    }
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    (0..values.len())
        .map(|element| {
            let i = element % inner;
            let o = element / inner / length.max(1);
            values[(o * length + positions[element]) * inner + i]
        })
        .collect()
}

/// A value from a small pool (so rows are full of ties), specials included.
fn tie_value(dtype: DType, rng: &mut SplitMix) -> Value {
    if rng.below(3) == 0 {
        return random_value(dtype, Domain::Wide, rng);
    }
    let pool = [
        -2.0,
        -0.0,
        0.0,
        1.0,
        3.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let value = pool[rng.below(pool.len() as u64) as usize];
    match dtype.class() {
        nxvk_core::DTypeClass::Float => reference::round_to(Value::Float(value), dtype),
        _ => reference::round_to(
            Value::Int(if value.is_finite() { value as i128 } else { 7 }),
            dtype,
        ),
    }
}

fn upload(dtype: DType, shape: &[usize], values: &[Value]) -> Tensor {
    Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, values)).unwrap()
}

fn positions_of(tensor: &Tensor) -> Vec<usize> {
    read(tensor)
        .into_iter()
        .map(|value| match value {
            Value::Int(position) => position as usize,
            other => panic!("a position, got {other:?}"),
        })
        .collect()
}

fn check(
    dtype: DType,
    shape: &[usize],
    axis: usize,
    direction: Direction,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let n: usize = shape.iter().product();
    let values: Vec<Value> = (0..n).map(|_| tie_value(dtype, rng)).collect();
    let input = upload(dtype, shape, &values);
    let what = format!("{dtype} {shape:?} axis {axis} {direction:?}");
    let expected_positions = host_argsort(&values, shape, axis, direction);
    let index_type = [DType::S32, DType::S64, DType::U16][rng.below(3) as usize];
    let index_type = if shape.get(axis).is_some_and(|&length| length > 65535) {
        DType::S32
    } else {
        index_type
    };
    let positions = sort::argsort(&input, axis, direction, index_type)
        .map_err(|error| format!("{what}: {error}"))?;
    if positions.shape() != shape || positions.dtype() != index_type {
        return Err(format!("{what}: argsort shape {:?}", positions.shape()));
    }
    let actual_positions = positions_of(&positions);
    if actual_positions != expected_positions {
        return Err(format!(
            "{what}: argsort {actual_positions:?}, expected {expected_positions:?}"
        ));
    }
    let sorted = sort::sort(&input, axis, direction).map_err(|error| format!("{what}: {error}"))?;
    let expected = gathered(&values, shape, axis, &expected_positions);
    if sorted.shape() != shape {
        return Err(format!("{what}: sort shape {:?}", sorted.shape()));
    }
    check_all(dtype, Tolerance::Exact, &read(&sorted), &expected, &[])
        .map_err(|why| format!("{what}: sort {why}"))
}

fn shape_and_axis() -> impl Strategy<Value = (Vec<usize>, usize, bool, u64)> {
    (
        prop::collection::vec(0usize..7, 0..=3),
        any::<usize>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(shape, axis, descending, seed)| {
            let axis = if shape.is_empty() {
                0
            } else {
                axis % shape.len()
            };
            (shape, axis, descending, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn sorts_match_a_stable_host_sort((shape, axis, descending, seed) in shape_and_axis()) {
        let mut rng = SplitMix(seed);
        let direction = if descending { Direction::Descending } else { Direction::Ascending };
        for dtype in real_dtypes() {
            if let Err(why) = check(dtype, &shape, axis, direction, &mut rng) {
                prop_assert!(false, "{}", why);
            }
        }
    }
}

/// Rows longer than the shared-memory block run the global steps of the network (one to four
/// per pass) or the radix sort, as the rule picks; odd lengths pad. One long row, and several
/// rows on a leading axis.
#[test]
fn long_rows_sort() {
    let mut rng = SplitMix(7);
    for (dtype, shape, axis) in [
        (DType::F32, vec![5000], 0),
        (DType::S64, vec![3, 2100], 1),
        (DType::F16, vec![1500, 2], 0),
        (DType::U8, vec![4099], 0),
        (DType::F64, vec![1 << 13], 0),
        // Two rows of 32-bit keys just over 2^15: the radix sort, both rows in each pass.
        (DType::S32, vec![2, (1 << 15) + 3], 1),
        // 64-bit keys the rule leaves to the network on lavapipe and the H200 (padded to 2^14,
        // where it pads least): network passes of four global steps.
        (DType::S64, vec![2, 16_000], 1),
        // One row of 32-bit keys just over 2^15: the radix sort.
        (DType::U32, vec![(1 << 15) + 3], 0),
        // Empty batches: no rows of a length the radix sort takes, and rows along an empty axis.
        (DType::F32, vec![0, 5000], 1),
        (DType::F64, vec![5000, 0], 0),
    ] {
        for direction in [Direction::Ascending, Direction::Descending] {
            check(dtype, &shape, axis, direction, &mut rng).unwrap();
        }
    }
}

/// Stability, explicitly: equal keys keep their input order in both directions, and NaN sorts
/// last ascending and first descending.
#[test]
fn equal_keys_keep_their_order() {
    let device = device();
    // 2000 sorts by the network, 6000 by radix.
    for length in [2000, 6000] {
        let ties = Tensor::from_slice(&device, &[length], &vec![1.5f32; length]).unwrap();
        let identity: Vec<i32> = (0..length as i32).collect();
        for direction in [Direction::Ascending, Direction::Descending] {
            let positions = sort::argsort(&ties, 0, direction, DType::S32).unwrap();
            assert_eq!(positions.to_vec::<i32>().unwrap(), identity);
        }
    }
    let mixed = Tensor::from_slice(
        &device,
        &[6],
        &[f32::NAN, 1.0, -0.0, 0.0, f32::NEG_INFINITY, 1.0],
    )
    .unwrap();
    let ascending = sort::argsort(&mixed, 0, Direction::Ascending, DType::S32).unwrap();
    assert_eq!(ascending.to_vec::<i32>().unwrap(), vec![4, 2, 3, 1, 5, 0]);
    let descending = sort::argsort(&mixed, 0, Direction::Descending, DType::S32).unwrap();
    assert_eq!(descending.to_vec::<i32>().unwrap(), vec![0, 1, 5, 2, 3, 4]);
}

/// top_k: Nx's example and ties resolved to the earlier position.
#[test]
fn top_k_matches_nx() {
    let device = device();
    let input = Tensor::from_slice(&device, &[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 5.0]).unwrap();
    let (values, positions) = sort::top_k(&input, 2).unwrap();
    assert_eq!(values.shape(), &[2, 2]);
    assert_eq!(values.to_vec::<f32>().unwrap(), vec![3.0, 2.0, 5.0, 5.0]);
    assert_eq!(positions.to_vec::<i32>().unwrap(), vec![2, 1, 1, 2]);
    assert!(sort::top_k(&input, 4).is_err());
    let scalar = Tensor::from_slice(&device, &[], &[1.0f32]).unwrap();
    assert!(sort::top_k(&scalar, 1).is_err());
}

/// Bad operands are errors, never panics.
#[test]
fn bad_operands_are_errors() {
    let device = device();
    let complex = Tensor::zeros(&device, DType::C64, &[3]).unwrap();
    assert!(sort::sort(&complex, 0, Direction::Ascending).is_err());
    let input = Tensor::from_slice(&device, &[3], &[1i32, 2, 3]).unwrap();
    assert!(sort::sort(&input, 1, Direction::Ascending).is_err());
    assert!(sort::argsort(&input, 0, Direction::Ascending, DType::F32).is_err());
    let sub_byte = Tensor::zeros(&device, DType::U4, &[4]).unwrap();
    assert!(sort::sort(&sub_byte, 0, Direction::Ascending).is_err());
}

/// Null arm: an unstable order (ties reversed) and an order with NaN first are rejected by the
/// same comparison the property uses.
#[test]
fn the_comparison_rejects_unstable_orders() {
    let values = vec![Value::Int(2), Value::Int(1), Value::Int(2), Value::Int(1)];
    let stable = host_argsort(&values, &[4], 0, Direction::Ascending);
    assert_eq!(stable, vec![1, 3, 0, 2]);
    let device = device();
    let input = Tensor::from_slice(&device, &[4], &[2i32, 1, 2, 1]).unwrap();
    let positions =
        positions_of(&sort::argsort(&input, 0, Direction::Ascending, DType::S32).unwrap());
    assert_eq!(positions, stable);
    assert_ne!(positions, vec![3, 1, 2, 0], "an unstable order must differ");
    let floats = vec![Value::Float(f64::NAN), Value::Float(0.0)];
    assert_eq!(
        host_argsort(&floats, &[2], 0, Direction::Ascending),
        vec![1, 0]
    );
    assert_ne!(
        host_argsort(&floats, &[2], 0, Direction::Ascending),
        vec![0, 1]
    );
}

/// A row of 2^20 + 1 keys: the radix scan spans several blocks of counts (each carrying the
/// totals before it). Keys repeat (a range of 1000), so stability is checked too.
#[test]
fn a_million_keys_sort_stably() {
    let device = device();
    let length = (1 << 20) + 1;
    let mut rng = SplitMix(99);
    let keys: Vec<u32> = (0..length).map(|_| rng.below(1000) as u32).collect();
    let input = Tensor::from_slice(&device, &[length], &keys).unwrap();
    let positions = sort::argsort(&input, 0, Direction::Descending, DType::S32)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    let mut expected: Vec<i32> = (0..length as i32).collect();
    expected.sort_by_key(|&position| std::cmp::Reverse(keys[position as usize]));
    assert!(
        positions == expected,
        "the GPU order differs from a stable host sort"
    );
}

/// Shapes of long rows: a vector, a row along the last axis, a column (the axis moved last
/// and back), three rows, two columns, and seventeen rows (more than the radix path once
/// took).
fn radix_rows_shape(length: usize, layout: u8) -> (Vec<usize>, usize) {
    match layout % 6 {
        0 => (vec![length], 0),
        1 => (vec![1, length], 1),
        2 => (vec![length, 1], 0),
        3 => (vec![3, length], 1),
        4 => (vec![length, 2], 0),
        _ => (vec![17, length], 1),
    }
}

/// Lengths around the radix tiles (1,024 items on lavapipe, 2,048 or 4,096 with subgroups of
/// 32) and the switch-overs (1,025, 2,049, 4,097 or 8,193 by key width), or anywhere up to
/// four tiles of 4,096.
fn radix_length() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            1024, 1025, 2048, 2049, 2050, 3071, 3072, 3073, 4095, 4096, 4097, 8191, 8192, 8193,
            12287,
        ]),
        1025usize..16_384,
    ]
}

/// top_k of `rows` rows (the values, row after row) against the host's stable descending
/// order.
fn check_top_k(dtype: DType, rows: usize, values: &[Value], k: usize) -> Result<(), String> {
    let length = values.len() / rows;
    let input = upload(dtype, &[rows, length], values);
    let what = format!("{dtype} top_k {k} of {rows} x {length}");
    let (top, positions) = sort::top_k(&input, k).map_err(|error| format!("{what}: {error}"))?;
    let order = host_argsort(values, &[rows, length], 1, Direction::Descending);
    let expected: Vec<usize> = order
        .chunks(length)
        .flat_map(|row| row[..k].to_vec())
        .collect();
    if positions_of(&positions) != expected {
        return Err(format!("{what}: positions differ"));
    }
    let expected_values: Vec<Value> = expected
        .iter()
        .enumerate()
        .map(|(slot, &position)| values[slot / k * length + position])
        .collect();
    check_all(dtype, Tolerance::Exact, &read(&top), &expected_values, &[])
        .map_err(|why| format!("{what}: {why}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 16, ..ProptestConfig::default() })]

    /// Long rows (the radix sort or the network, as the rule picks for each dtype): sort and
    /// argsort (s32, s64 or u16 positions) of every real dtype and top_k of f32 and f64 (32-
    /// and 64-bit radix items), ties and specials (NaN, +-0.0, +-infinity) included, both
    /// directions.
    #[test]
    fn long_rows_match_a_stable_host_sort(
        length in radix_length(),
        layout in any::<u8>(),
        descending in any::<bool>(),
        k_fraction in 0.0f64..1.0,
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix(seed);
        let direction = if descending { Direction::Descending } else { Direction::Ascending };
        let (shape, axis) = radix_rows_shape(length, layout);
        for dtype in real_dtypes() {
            if let Err(why) = check(dtype, &shape, axis, direction, &mut rng) {
                prop_assert!(false, "{}", why);
            }
        }
        let rows = [1, 2, 17][usize::from(layout % 3)];
        let k = ((length as f64 * k_fraction) as usize).max(1);
        for dtype in [DType::F32, DType::F64] {
            let values: Vec<Value> =
                (0..rows * length).map(|_| tie_value(dtype, &mut rng)).collect();
            if let Err(why) = check_top_k(dtype, rows, &values, k) {
                prop_assert!(false, "{}", why);
            }
        }
    }
}

/// Every tile boundary the radix passes meet, on both kinds of device, with keys spread over
/// all four bytes (random wide values) and with few distinct keys.
#[test]
fn radix_tile_boundaries() {
    let mut rng = SplitMix(11);
    for length in [2049, 3071, 3072, 3073, 4095, 4096, 4097, 8191, 8193, 12289] {
        for (dtype, direction) in [
            (DType::F32, Direction::Ascending),
            (DType::S32, Direction::Descending),
            (DType::BF16, Direction::Ascending),
            (DType::S8, Direction::Descending),
        ] {
            check(dtype, &[length], 0, direction, &mut rng).unwrap();
        }
    }
}

/// Stability of the radix path, explicitly: keys with three distinct values keep their input
/// order within each value, for 8-, 16- and 32-bit keys (one, two and four passes) and s64
/// positions.
#[test]
fn radix_ties_keep_their_input_order() {
    let device = device();
    let length = 5000;
    let keys: Vec<u16> = (0..length).map(|i| [7u16, 3, 7, 900][i % 4]).collect();
    for (dtype, bytes) in [
        (
            DType::U8,
            keys.iter().map(|&k| k as u8).collect::<Vec<u8>>(),
        ),
        (
            DType::U16,
            keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
        ),
        (
            DType::U32,
            keys.iter()
                .flat_map(|&k| u32::from(k).to_le_bytes())
                .collect(),
        ),
    ] {
        let input = Tensor::from_bytes(&device, dtype, &[length], &bytes).unwrap();
        let key_of = |position: usize| match dtype {
            DType::U8 => u16::from(keys[position] as u8),
            _ => keys[position],
        };
        for direction in [Direction::Ascending, Direction::Descending] {
            let positions = sort::argsort(&input, 0, direction, DType::S64)
                .unwrap()
                .to_vec::<i64>()
                .unwrap();
            let mut expected: Vec<i64> = (0..length as i64).collect();
            match direction {
                Direction::Ascending => expected.sort_by_key(|&p| key_of(p as usize)),
                Direction::Descending => {
                    expected.sort_by_key(|&p| std::cmp::Reverse(key_of(p as usize)))
                }
            }
            assert_eq!(positions, expected, "{dtype} {direction:?}");
        }
    }
}

/// Null arm for the value comparison of the radix path: the sorted values of a long row of
/// +0.0 and -0.0 pass the exact check, and fail it once two zeros of different signs are
/// swapped (the check sees the order of equal keys, not only their value).
#[test]
fn the_value_check_sees_the_order_of_equal_zeros() {
    let length = 3000;
    let values: Vec<Value> = (0..length)
        .map(|i| Value::Float(if i % 3 == 0 { -0.0 } else { 0.0 }))
        .collect();
    let input = upload(DType::F32, &[length], &values);
    let sorted = read(&sort::sort(&input, 0, Direction::Ascending).unwrap());
    check_all(DType::F32, Tolerance::Exact, &sorted, &values, &[]).unwrap();
    let mut swapped = sorted.clone();
    swapped.swap(0, 1);
    assert!(check_all(DType::F32, Tolerance::Exact, &swapped, &values, &[]).is_err());
}

/// The first row length of `dtype` that sorts by radix on this device (searched from 1,000),
/// for a batch of `rows` rows.
fn first_radix_length(dtype: DType, rows: usize) -> Option<usize> {
    (1000..20_000).find(|&length| sort::uses_radix(&device(), dtype, rows, length))
}

/// Batches of eighteen rows (more than the radix path once took) one element below, at and
/// one above each dtype's switch-over from the network to the radix sort: sort and argsort
/// against the host in both directions, ties and specials included. The null arm: the lengths
/// really fall on both sides (the network below, radix from the switch-over on).
#[test]
fn batches_on_both_sides_of_the_switch_over_sort() {
    let rows = 18;
    let mut rng = SplitMix(2049);
    for dtype in real_dtypes() {
        let Some(switch_over) = first_radix_length(dtype, rows) else {
            panic!("{dtype}: no radix length below 20,000 on this device");
        };
        assert!(!sort::uses_radix(&device(), dtype, rows, switch_over - 1));
        for length in [switch_over - 1, switch_over, switch_over + 1] {
            for direction in [Direction::Ascending, Direction::Descending] {
                check(dtype, &[rows, length], 1, direction, &mut rng).unwrap();
            }
        }
        // The same rows as columns: the axis moved last and back around the radix passes.
        check(dtype, &[switch_over, 3], 0, Direction::Ascending, &mut rng).unwrap();
    }
}

/// The positions of `keys` in stable sorted order (equal keys in input order either way).
fn stable_positions<K: Ord + Copy>(keys: &[K], direction: Direction) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..keys.len()).collect();
    match direction {
        Direction::Ascending => positions.sort_by_key(|&position| keys[position]),
        Direction::Descending => {
            positions.sort_by_key(|&position| std::cmp::Reverse(keys[position]))
        }
    }
    positions
}

/// Stability of 64-bit keys, explicitly, on the radix path with many rows: f64 rows of NaNs
/// (quiet and signalling payloads, both signs), -0.0 and 0.0, infinities and a few numbers
/// keep the input order of equal keys, NaN last ascending and first descending; s64 and u64
/// rows of three distinct values keep theirs too, including the extremes of the type.
#[test]
fn wide_keys_keep_their_order_on_the_radix_path() {
    let device = device();
    let rows = 20;
    let length = first_radix_length(DType::F64, rows).unwrap() + 5;
    assert!(sort::uses_radix(&device, DType::F64, rows, length));
    let pool = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001),
        f64::from_bits(0xFFF8_0000_DEAD_BEEF),
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -1.5,
    ];
    let mut rng = SplitMix(64);
    let floats: Vec<f64> = (0..rows * length)
        .map(|_| pool[rng.below(pool.len() as u64) as usize])
        .collect();
    // Nx's order as a rank: NaN above everything, both zeros one rank.
    let rank = |value: f64| -> i32 {
        if value.is_nan() {
            4
        } else if value == f64::INFINITY {
            3
        } else if value > 0.0 {
            2
        } else if value == 0.0 {
            1
        } else if value > f64::NEG_INFINITY {
            0
        } else {
            -1
        }
    };
    let input = Tensor::from_slice(&device, &[rows, length], &floats).unwrap();
    for direction in [Direction::Ascending, Direction::Descending] {
        let positions = sort::argsort(&input, 1, direction, DType::S64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap();
        let sorted = sort::sort(&input, 1, direction)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        for row in 0..rows {
            let keys = &floats[row * length..(row + 1) * length];
            let ranks: Vec<i32> = keys.iter().map(|&key| rank(key)).collect();
            let expected: Vec<i64> = stable_positions(&ranks, direction)
                .into_iter()
                .map(|position| position as i64)
                .collect();
            let got = &positions[row * length..(row + 1) * length];
            assert!(
                got == expected,
                "f64 row {row} {direction:?}: positions differ"
            );
            // The values, bit for bit: each NaN payload and each zero's sign where stability
            // puts it.
            let got_bits: Vec<u64> = sorted[row * length..(row + 1) * length]
                .iter()
                .map(|value| value.to_bits())
                .collect();
            let expected_bits: Vec<u64> = expected
                .iter()
                .map(|&position| keys[position as usize].to_bits())
                .collect();
            assert!(
                got_bits == expected_bits,
                "f64 row {row} {direction:?}: values differ"
            );
        }
    }
    for dtype in [DType::S64, DType::U64] {
        let length = first_radix_length(dtype, rows).unwrap() + 7;
        let extremes: [i128; 3] = match dtype {
            DType::S64 => [i64::MIN.into(), -1, i64::MAX.into()],
            _ => [0, 1 << 40, u64::MAX.into()],
        };
        let keys: Vec<i128> = (0..rows * length)
            .map(|i| extremes[(i * 7 + i / 3) % 3])
            .collect();
        let values: Vec<Value> = keys.iter().map(|&key| Value::Int(key)).collect();
        let input = upload(dtype, &[rows, length], &values);
        for direction in [Direction::Ascending, Direction::Descending] {
            let positions = sort::argsort(&input, 1, direction, DType::S32)
                .unwrap()
                .to_vec::<i32>()
                .unwrap();
            for row in 0..rows {
                let expected: Vec<i32> =
                    stable_positions(&keys[row * length..(row + 1) * length], direction)
                        .into_iter()
                        .map(|position| position as i32)
                        .collect();
                assert!(
                    positions[row * length..(row + 1) * length] == expected,
                    "{dtype} row {row} {direction:?}: positions differ"
                );
            }
        }
    }
}

/// Null arm for the explicit stability checks: the stable order of equal f64 keys differs from
/// the order that swaps two equal NaNs, so a sort that reordered equal keys would be caught.
#[test]
fn the_stability_check_sees_swapped_equal_keys() {
    let device = device();
    let length = first_radix_length(DType::F64, 1).unwrap();
    let mut keys = vec![f64::NAN; length];
    keys[0] = -f64::NAN;
    let input = Tensor::from_slice(&device, &[length], &keys).unwrap();
    let positions = sort::argsort(&input, 0, Direction::Ascending, DType::S32)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    let identity: Vec<i32> = (0..length as i32).collect();
    assert_eq!(positions, identity);
    let mut swapped = identity.clone();
    swapped.swap(0, 1);
    assert_ne!(positions, swapped);
    let sorted = sort::sort(&input, 0, Direction::Descending)
        .unwrap()
        .to_vec::<f64>()
        .unwrap();
    assert_eq!(sorted[0].to_bits(), (-f64::NAN).to_bits());
    assert_ne!(sorted[1].to_bits(), (-f64::NAN).to_bits());
}
