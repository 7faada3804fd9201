//! Random numbers against Nx.Random: its documented values (keys, split, uniform, normal) and
//! a host threefry2x32 with Nx's counter layout and uniform formula, compared bit for bit over
//! random keys, odd and even sizes (empty and rank 0 included) and every float type.

mod common;

use common::*;
use nxvk_core::{Complex32, DType, Tensor, bf16, f16};
use nxvk_kernels::random;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(24)
}

/// threefry2x32 (20 rounds) as Nx.Random writes it, with `rotations` as a parameter so the
/// null arm can break it.
fn host_threefry(key: [u32; 2], counter: [u32; 2], rotations: [u32; 8]) -> [u32; 2] {
    let mut ks = [key[1], key[0] ^ key[1] ^ 0x1BD1_1BDA, key[0]];
    let mut x = [
        counter[0].wrapping_add(key[0]),
        counter[1].wrapping_add(key[1]),
    ];
    for step in 1..=5u32 {
        let first = if step % 2 == 1 { 0 } else { 4 };
        for round in 0..4 {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(rotations[first + round]) ^ x[0];
        }
        x[0] = x[0].wrapping_add(ks[0]);
        x[1] = x[1].wrapping_add(ks[1]).wrapping_add(step);
        ks.rotate_left(1);
    }
    x
}

const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];

/// Nx's `threefry2x32(key, shape)` words for `count` draws.
fn host_bits(key: [u32; 2], count: usize, rotations: [u32; 8]) -> Vec<u32> {
    let half = count.div_ceil(2);
    let mut words = vec![0; count];
    for pair in 0..half {
        let second = half + pair;
        let counter = [pair as u32, if second < count { second as u32 } else { 0 }];
        let [first_word, second_word] = host_threefry(key, counter, rotations);
        words[pair] = first_word;
        if second < count {
            words[second] = second_word;
        }
    }
    words
}

fn host_uniform_f32(key: [u32; 2], count: usize, minimum: f32, maximum: f32) -> Vec<f32> {
    let range = maximum - minimum;
    host_bits(key, count, ROTATIONS)
        .into_iter()
        .map(|bits| {
            let unit = f32::from_bits((bits >> 9) | 0x3F80_0000) - 1.0;
            (unit * range + minimum).max(minimum)
        })
        .collect()
}

fn host_uniform_f16(key: [u32; 2], count: usize, minimum: f16, maximum: f16) -> Vec<f16> {
    let range = maximum - minimum;
    host_bits(key, count, ROTATIONS)
        .into_iter()
        .map(|bits| {
            let unit = f16::from_bits((((bits & 0xFFFF) >> 6) | 0x3C00) as u16) - f16::ONE;
            (unit * range + minimum).max(minimum)
        })
        .collect()
}

fn host_uniform_bf16(key: [u32; 2], count: usize, minimum: bf16, maximum: bf16) -> Vec<bf16> {
    let range = maximum - minimum;
    host_bits(key, count, ROTATIONS)
        .into_iter()
        .map(|bits| {
            let unit = bf16::from_bits((((bits & 0xFFFF) >> 9) | 0x3F80) as u16) - bf16::ONE;
            (unit * range + minimum).max(minimum)
        })
        .collect()
}

fn host_uniform_f64(key: [u32; 2], count: usize, minimum: f64, maximum: f64) -> Vec<f64> {
    let range = maximum - minimum;
    (0..count)
        .map(|index| {
            let [high, low] = host_threefry(key, [index as u32, (count + index) as u32], ROTATIONS);
            let bits = (u64::from(high) << 32) | u64::from(low);
            let unit = f64::from_bits((bits >> 12) | 0x3FF0_0000_0000_0000) - 1.0;
            (unit * range + minimum).max(minimum)
        })
        .collect()
}

fn key_of(key: [u32; 2]) -> Tensor {
    Tensor::from_slice(&device(), &[2], &key).unwrap()
}

/// Row `row` of a `[parts, 2]` key tensor, as a key (a view).
fn row(keys: &Tensor, row: usize) -> Tensor {
    keys.slice(&[row, 0], &[1, 2])
        .unwrap()
        .reshape(&[2])
        .unwrap()
}

/// Nx's documented keys and splits.
#[test]
fn keys_and_splits_match_nx() {
    let device = device();
    assert_eq!(
        random::key(&device, 12).unwrap().to_vec::<u32>().unwrap(),
        vec![0, 12]
    );
    assert_eq!(
        random::key(&device, 999_999_999_999)
            .unwrap()
            .to_vec::<u32>()
            .unwrap(),
        vec![232, 3_567_587_327]
    );
    let key = random::key(&device, 1701).unwrap();
    assert_eq!(
        random::split(&key, 2).unwrap().to_vec::<u32>().unwrap(),
        vec![56_197_195, 1_801_093_307, 961_309_823, 1_704_866_707]
    );
    assert_eq!(
        random::split(&key, 4).unwrap().to_vec::<u32>().unwrap(),
        vec![
            4_000_152_724,
            2_030_591_747,
            2_287_976_877,
            2_598_630_646,
            2_426_625_787,
            580_268_518,
            3_136_765_380,
            433_355_682
        ]
    );
}

/// Nx's documented uniform and normal draws (Nx.Random.uniform(key) draws with the second
/// half of split(key)).
#[test]
fn draws_match_nx_documentation() {
    let device = device();
    let split_second = |seed: u64| {
        let keys = random::split(&random::key(&device, seed).unwrap(), 2).unwrap();
        row(&keys, 1)
    };
    let uniform = random::uniform(&split_second(12), &[], (0.0, 1.0), DType::F32).unwrap();
    assert_eq!(uniform.to_vec::<f32>().unwrap(), vec![0.769_112_7]);
    let uniform = random::uniform(&split_second(1701), &[], (0.0, 1.0), DType::F32).unwrap();
    assert_eq!(uniform.to_vec::<f32>().unwrap(), vec![0.972_864_4]);
    let uniform = random::uniform(&split_second(1701), &[3, 2], (0.0, 1.0), DType::F16).unwrap();
    let printed: Vec<f32> = uniform
        .to_vec::<f16>()
        .unwrap()
        .into_iter()
        .map(f32::from)
        .collect();
    let documented = [0.754, 0.6484, 0.7295, 0.2148, 0.09766, 0.06934];
    for (got, want) in printed.iter().zip(documented) {
        assert!((got - want).abs() < 5e-4, "{printed:?} vs {documented:?}");
    }
    let uniform = random::uniform(&split_second(1701), &[2, 2], (0.0, 1.0), DType::C64).unwrap();
    assert_eq!(
        uniform.to_vec::<Complex32>().unwrap(),
        vec![
            Complex32::new(0.184_048_06, 0.654_646_16),
            Complex32::new(0.552_591_56, 0.115_681_41),
            Complex32::new(0.607_458_5, 0.810_437_56),
            Complex32::new(0.247_686_5, 0.219_754_7),
        ]
    );
    // Normal draws go through erf_inv: a few ulps from Nx's.
    let normal = random::normal(&split_second(42), &[], (0.0, 1.0), DType::F32).unwrap();
    let value = normal.to_vec::<f32>().unwrap()[0];
    assert!((value - 1.369_469_5).abs() < 1e-5, "{value}");
    let normal = random::normal(&split_second(42), &[2, 2], (0.0, 1.0), DType::C64).unwrap();
    let documented = [
        Complex32::new(-0.763_276_1, 0.866_112_77),
        Complex32::new(-0.142_828_9, -0.738_479_6),
        Complex32::new(0.678_461_5, 0.411_831_08),
        Complex32::new(-2.269_538_4, -0.368_909_5),
    ];
    for (got, want) in normal.to_vec::<Complex32>().unwrap().iter().zip(documented) {
        assert!((got - want).norm() < 1e-5, "{got} vs {want}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn draws_match_the_host(key in any::<[u32; 2]>(), shape in prop::collection::vec(0usize..9, 0..=3), bounds in (-4i32..4, 1i32..6)) {
        let count: usize = shape.iter().product();
        let key_tensor = key_of(key);
        let bits = random::bits(&key_tensor, &shape).unwrap();
        prop_assert_eq!(bits.shape(), &shape[..]);
        prop_assert_eq!(bits.to_vec::<u32>().unwrap(), host_bits(key, count, ROTATIONS));
        let (minimum, maximum) = (f64::from(bounds.0) * 0.75, f64::from(bounds.0 + bounds.1) * 0.75);
        let range = (minimum, maximum);
        let f32s = random::uniform(&key_tensor, &shape, range, DType::F32).unwrap();
        prop_assert_eq!(f32s.to_vec::<f32>().unwrap(), host_uniform_f32(key, count, minimum as f32, maximum as f32));
        let f64s = random::uniform(&key_tensor, &shape, range, DType::F64).unwrap();
        prop_assert_eq!(f64s.to_vec::<f64>().unwrap(), host_uniform_f64(key, count, minimum, maximum));
        let f16s = random::uniform(&key_tensor, &shape, range, DType::F16).unwrap();
        prop_assert_eq!(f16s.to_vec::<f16>().unwrap(), host_uniform_f16(key, count, f16::from_f64(minimum), f16::from_f64(maximum)));
        let bf16s = random::uniform(&key_tensor, &shape, range, DType::BF16).unwrap();
        prop_assert_eq!(bf16s.to_vec::<bf16>().unwrap(), host_uniform_bf16(key, count, bf16::from_f64(minimum), bf16::from_f64(maximum)));
        for value in f32s.to_vec::<f32>().unwrap() {
            prop_assert!(value >= minimum as f32 && value <= maximum as f32);
        }
        let normals = random::normal(&key_tensor, &shape, (1.0, 2.0), DType::F32).unwrap();
        prop_assert_eq!(normals.shape(), &shape[..]);
        prop_assert!(normals.to_vec::<f32>().unwrap().iter().all(|value| value.is_finite()));
    }
}

/// Normal draws have the distribution's moments (10,000 draws: mean within 0.1, standard
/// deviation within 0.1 of the requested 3 and 2).
#[test]
fn normal_draws_have_the_requested_moments() {
    let key = key_of([7, 9]);
    let values = random::normal(&key, &[10_000], (3.0, 2.0), DType::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let mean = values.iter().map(|&value| f64::from(value)).sum::<f64>() / values.len() as f64;
    let variance = values
        .iter()
        .map(|&value| (f64::from(value) - mean).powi(2))
        .sum::<f64>()
        / values.len() as f64;
    assert!((mean - 3.0).abs() < 0.1, "mean {mean}");
    assert!(
        (variance.sqrt() - 2.0).abs() < 0.1,
        "deviation {}",
        variance.sqrt()
    );
}

/// Bad operands are errors, never panics.
#[test]
fn bad_operands_are_errors() {
    let device = device();
    let wrong_key = Tensor::from_slice(&device, &[3], &[1u32, 2, 3]).unwrap();
    assert!(random::bits(&wrong_key, &[4]).is_err());
    let signed_key = Tensor::from_slice(&device, &[2], &[1i32, 2]).unwrap();
    assert!(random::bits(&signed_key, &[4]).is_err());
    let key = key_of([1, 2]);
    assert!(random::uniform(&key, &[4], (0.0, 1.0), DType::S32).is_err());
    assert!(random::normal(&key, &[4], (0.0, 1.0), DType::U8).is_err());
}

/// Null arm: a threefry with one wrong rotation, or with the counter halves swapped, gives
/// different words, so the bitwise comparisons above can fail.
#[test]
fn broken_references_disagree() {
    let key = key_of([0, 1701]);
    let words = random::bits(&key, &[5]).unwrap().to_vec::<u32>().unwrap();
    assert_eq!(words, host_bits([0, 1701], 5, ROTATIONS));
    let mut wrong = ROTATIONS;
    wrong[3] = 7;
    assert_ne!(words, host_bits([0, 1701], 5, wrong));
    let mut swapped = host_bits([0, 1701], 6, ROTATIONS);
    swapped.rotate_left(3);
    assert_ne!(
        random::bits(&key, &[6]).unwrap().to_vec::<u32>().unwrap(),
        swapped
    );
}
