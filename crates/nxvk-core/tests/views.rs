//! Views share the buffer and read back exactly the elements a naive host walk selects, for
//! byte-sized, sub-byte and complex dtypes.

mod common;
use common::{device, same_bytes};
use nxvk_core::{DType, Tensor};
use proptest::prelude::*;

/// Bits of element `index` of a packed buffer (Nx order for sub-byte types).
fn element_bits(bytes: &[u8], dtype: DType, index: usize) -> Vec<u8> {
    match dtype.byte_size() {
        Some(size) => bytes[index * size as usize..(index + 1) * size as usize].to_vec(),
        None => {
            let bits = dtype.bits() as usize;
            let bit = index * bits;
            vec![(bytes[bit / 8] >> (8 - bits - bit % 8)) & ((1 << bits) - 1)]
        }
    }
}

/// Packs element values (as `element_bits` returns them) in row-major order.
fn pack(elements: &[Vec<u8>], dtype: DType) -> Vec<u8> {
    if dtype.byte_size().is_some() {
        return elements.concat();
    }
    let bits = dtype.bits() as usize;
    let mut out = vec![0u8; dtype.storage_bytes(elements.len() as u64) as usize];
    for (position, value) in elements.iter().enumerate() {
        let bit = position * bits;
        out[bit / 8] |= value[0] << (8 - bits - bit % 8);
    }
    out
}

/// Row-major multi-indices of `shape`.
fn multi_indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &size in shape {
        all = all
            .into_iter()
            .flat_map(|prefix| (0..size).map(move |i| [prefix.clone(), vec![i]].concat()))
            .collect();
    }
    all
}

fn flat(shape: &[usize], index: &[usize]) -> usize {
    index
        .iter()
        .zip(shape)
        .fold(0, |acc, (&i, &size)| acc * size + i)
}

const VIEW_DTYPES: [DType; 6] = [
    DType::F32,
    DType::U4,
    DType::S2,
    DType::BF16,
    DType::C128,
    DType::U8,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn transpose_slice_broadcast_read_back(
        shape in prop::collection::vec(1usize..5, 1..4),
        dtype_index in 0usize..VIEW_DTYPES.len(),
        permutation_seed in any::<u64>(),
        slice_seed in any::<u64>(),
        extra_axis in 1usize..4,
    ) {
        let dtype = VIEW_DTYPES[dtype_index];
        let n: usize = shape.iter().product();
        let bytes: Vec<u8> = (0..dtype.storage_bytes(n as u64)).map(|i| (i as u8).wrapping_mul(37).wrapping_add(slice_seed as u8)).collect();
        let tensor = Tensor::from_bytes(&device(), dtype, &shape, &bytes).unwrap();

        // A permutation from the seed (Fisher-Yates with the seed's bits).
        let mut permutation: Vec<usize> = (0..shape.len()).collect();
        for i in (1..permutation.len()).rev() {
            permutation.swap(i, (permutation_seed >> (i * 5)) as usize % (i + 1));
        }
        let transposed_shape: Vec<usize> = permutation.iter().map(|&a| shape[a]).collect();
        let starts: Vec<usize> = transposed_shape.iter().enumerate().map(|(a, &s)| (slice_seed >> (a * 7)) as usize % s).collect();
        let lengths: Vec<usize> = transposed_shape.iter().zip(&starts).enumerate().map(|(a, (&s, &st))| 1 + (slice_seed >> (a * 11 + 3)) as usize % (s - st)).collect();
        let mut broadcast_shape = vec![extra_axis];
        broadcast_shape.extend(&lengths);

        let view = tensor.transpose(&permutation).unwrap().slice(&starts, &lengths).unwrap().broadcast_to(&broadcast_shape).unwrap();
        let expected: Vec<Vec<u8>> = multi_indices(&broadcast_shape)
            .iter()
            .map(|index| {
                let sliced: Vec<usize> = index[1..].iter().zip(&starts).map(|(i, s)| i + s).collect();
                let mut source = vec![0; shape.len()];
                for (axis, &source_axis) in permutation.iter().enumerate() {
                    source[source_axis] = sliced[axis];
                }
                element_bits(&bytes, dtype, flat(&shape, &source))
            })
            .collect();
        let actual = view.to_bytes().unwrap();
        same_bytes(&format!("{dtype} {shape:?} perm {permutation:?} slice {starts:?}+{lengths:?}"), &actual, &pack(&expected, dtype)).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn views_share_the_buffer_and_reshape_squeeze() {
    let tensor = Tensor::from_slice(&device(), &[2, 1, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
    let squeezed = tensor.squeeze(&[1]).unwrap();
    assert!(std::sync::Arc::ptr_eq(tensor.buffer(), squeezed.buffer()));
    assert_eq!(
        squeezed.reshape(&[3, 2]).unwrap().to_vec::<i32>().unwrap(),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(
        squeezed
            .transpose(&[1, 0])
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![1, 4, 2, 5, 3, 6]
    );
    assert!(
        squeezed.transpose(&[1, 0]).unwrap().reshape(&[6]).is_err(),
        "non-contiguous reshape needs a copy"
    );
}
