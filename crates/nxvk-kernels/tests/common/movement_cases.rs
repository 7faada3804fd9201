//! The data-movement properties' cases and host oracles. A case is a random shape, view kind
//! and seed: sizes run from 0 to 4, and most empty axes are replaced by 2, so a case is empty
//! now and then, not half the time.

use super::{SplitMix, ViewKind, any_view_kind, coordinates, linear};
use nxvk_kernels::reference::Value;
use proptest::prelude::*;

#[derive(Debug, Clone)]
pub struct ShapeCase {
    pub shape: Vec<usize>,
    pub view: ViewKind,
    pub seed: u64,
}

/// Cases of rank 0 to `max_rank`.
pub fn shape_case(max_rank: usize) -> impl Strategy<Value = ShapeCase> {
    (
        prop::collection::vec(0usize..5, 0..=max_rank),
        any_view_kind(),
        any::<u64>(),
    )
        .prop_map(|(shape, view, seed)| {
            let shape = shape
                .iter()
                .enumerate()
                .map(|(axis, &size)| {
                    if size == 0 && (seed >> axis) & 3 != 0 {
                        2
                    } else {
                        size
                    }
                })
                .collect();
            ShapeCase { shape, view, seed }
        })
}

/// The host oracle of `concatenate([a, b, a], axis)`: `a` of `shape`, `b` of `other_shape`.
pub fn joined_values(
    shape: &[usize],
    a: &[Value],
    other_shape: &[usize],
    b: &[Value],
    axis: usize,
) -> (Vec<usize>, Vec<Value>) {
    let mut joined_shape = shape.to_vec();
    joined_shape[axis] = 2 * shape[axis] + other_shape[axis];
    let n: usize = joined_shape.iter().product();
    let values = (0..n)
        .map(|index| {
            let mut at = coordinates(&joined_shape, index);
            if at[axis] < shape[axis] {
                a[linear(shape, &at)]
            } else if at[axis] < shape[axis] + other_shape[axis] {
                at[axis] -= shape[axis];
                b[linear(other_shape, &at)]
            } else {
                at[axis] -= shape[axis] + other_shape[axis];
                a[linear(shape, &at)]
            }
        })
        .collect();
    (joined_shape, values)
}

/// The host oracle of `put_slice`: `values` of `shape` with `update` (of `update_shape`)
/// written from the (already clamped) `starts`.
pub fn put_values(
    shape: &[usize],
    values: &[Value],
    update_shape: &[usize],
    update: &[Value],
    starts: &[usize],
) -> Vec<Value> {
    let rank = shape.len();
    (0..values.len())
        .map(|index| {
            let at = coordinates(shape, index);
            let inside = (0..rank).all(|axis| {
                at[axis] >= starts[axis] && at[axis] < starts[axis] + update_shape[axis]
            });
            if inside {
                let local: Vec<usize> = (0..rank).map(|axis| at[axis] - starts[axis]).collect();
                update[linear(update_shape, &local)]
            } else {
                values[index]
            }
        })
        .collect()
}

/// A random pad configuration for `rank` axes: lo and hi in -2..=2 (negative ones crop),
/// interior 0 to 2.
pub fn pad_config(rank: usize, rng: &mut SplitMix) -> Vec<(i64, i64, usize)> {
    (0..rank)
        .map(|_| {
            (
                rng.below(5) as i64 - 2,
                rng.below(5) as i64 - 2,
                rng.below(3) as usize,
            )
        })
        .collect()
}

/// The host oracle of `pad`: the padded shape and values (`fill` where no input element
/// lands), or `None` when an axis would have a negative size (an error for the op).
pub fn padded_values(
    shape: &[usize],
    values: &[Value],
    config: &[(i64, i64, usize)],
    fill: Value,
) -> Option<(Vec<usize>, Vec<Value>)> {
    let padded_shape = shape
        .iter()
        .zip(config)
        .map(|(&size, &(lo, hi, interior))| {
            let size = size as i64;
            usize::try_from(size + (size - 1).max(0) * interior as i64 + lo + hi).ok()
        })
        .collect::<Option<Vec<usize>>>()?;
    let n: usize = padded_shape.iter().product();
    let padded = (0..n)
        .map(|index| {
            let at = coordinates(&padded_shape, index);
            let mut inner = Vec::with_capacity(shape.len());
            for (axis, &(lo, _, interior)) in config.iter().enumerate() {
                let position = at[axis] as i64 - lo;
                let step = interior as i64 + 1;
                if position < 0 || position % step != 0 || position / step >= shape[axis] as i64 {
                    return fill;
                }
                inner.push((position / step) as usize);
            }
            values[linear(shape, &inner)]
        })
        .collect();
    Some((padded_shape, padded))
}
