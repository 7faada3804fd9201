//! A random shape, view kind and seed: the case of the data-movement properties. Sizes run
//! from 0 to 4; most empty axes are replaced by 2, so a case is empty now and then, not half
//! the time.

use super::{ViewKind, any_view_kind};
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
