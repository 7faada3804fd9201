//! Where a tensor's elements sit in its buffer: shape, element strides and an element offset.
//!
//! View ops are pure `Layout -> Result<Layout>` functions: a reshape, squeeze, broadcast,
//! transpose or unit-step slice never touches device memory. Strides are in elements (not
//! bytes) so that sub-byte types work the same way; a stride of 0 repeats an element
//! (broadcast).

use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl Layout {
    /// A dense row-major layout starting at element 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// A layout from its parts, checked only for matching ranks.
    pub fn from_parts(shape: Vec<usize>, strides: Vec<usize>, offset: usize) -> Result<Self> {
        if shape.len() != strides.len() {
            return Err(invalid(
                "layout",
                &shape,
                format!("{} strides for rank {}", strides.len(), shape.len()),
            ));
        }
        Ok(Layout {
            shape,
            strides,
            offset,
        })
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Elements in the view (saturating: a layout whose count overflows can describe no
    /// tensor, and every op on it fails instead of panicking).
    pub fn n_elements(&self) -> usize {
        self.shape
            .iter()
            .fold(1usize, |count, &size| count.saturating_mul(size))
    }

    /// True when the elements are dense, row-major, in order (size-1 axes may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size != 1 && stride != expected {
                return false;
            }
            expected *= size;
        }
        true
    }

    /// The range of element indices (from the buffer start) this layout can touch; empty for an
    /// empty tensor.
    pub fn element_span(&self) -> std::ops::Range<usize> {
        if self.n_elements() == 0 {
            return self.offset..self.offset;
        }
        let last = self
            .shape
            .iter()
            .zip(&self.strides)
            .fold(0usize, |last, (&size, &stride)| {
                last.saturating_add((size - 1).saturating_mul(stride))
            });
        self.offset..self.offset.saturating_add(last).saturating_add(1)
    }

    /// Buffer element index of each element, in row-major order of the view.
    pub fn element_indices(&self) -> impl Iterator<Item = usize> + '_ {
        let mut index = vec![0usize; self.rank()];
        let total = self.n_elements();
        (0..total).map(move |count| {
            if count > 0 {
                for axis in (0..index.len()).rev() {
                    index[axis] += 1;
                    if index[axis] < self.shape[axis] {
                        break;
                    }
                    index[axis] = 0;
                }
            }
            self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(&position, &stride)| position * stride)
                    .sum::<usize>()
        })
    }

    /// Same elements, new shape. Only a contiguous layout can be reshaped without a copy.
    pub fn reshape(&self, shape: &[usize]) -> Result<Layout> {
        let wanted = checked_count("reshape", shape)?;
        if wanted != self.n_elements() {
            return Err(invalid(
                "reshape",
                &self.shape,
                format!(
                    "to {shape:?}: {wanted} elements instead of {}",
                    self.n_elements()
                ),
            ));
        }
        if !self.is_contiguous() {
            return Err(invalid(
                "reshape",
                &self.shape,
                "the layout is not contiguous; materialise it first".into(),
            ));
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: self.offset,
        })
    }

    /// Removes the given axes, each of which must have size 1.
    pub fn squeeze(&self, axes: &[usize]) -> Result<Layout> {
        for &axis in axes {
            if self.shape.get(axis) != Some(&1) {
                return Err(invalid(
                    "squeeze",
                    &self.shape,
                    format!("axis {axis} is not of size 1"),
                ));
            }
        }
        let keep = |axis: &usize| !axes.contains(axis);
        Ok(Layout {
            shape: (0..self.rank())
                .filter(keep)
                .map(|a| self.shape[a])
                .collect(),
            strides: (0..self.rank())
                .filter(keep)
                .map(|a| self.strides[a])
                .collect(),
            offset: self.offset,
        })
    }

    /// Nx broadcasting: `axes[i]` is the target axis that source axis `i` becomes; each source
    /// axis must match its target size or be 1. The other target axes repeat (stride 0).
    pub fn broadcast(&self, shape: &[usize], axes: &[usize]) -> Result<Layout> {
        checked_count("broadcast", shape)?;
        if axes.len() != self.rank() || axes.windows(2).any(|pair| pair[0] >= pair[1]) {
            return Err(invalid(
                "broadcast",
                &self.shape,
                format!("axes {axes:?} must be increasing, one per source axis"),
            ));
        }
        let mut strides = vec![0; shape.len()];
        for (source_axis, &target_axis) in axes.iter().enumerate() {
            let source_size = self.shape[source_axis];
            match shape.get(target_axis) {
                Some(&size) if size == source_size => {
                    strides[target_axis] = self.strides[source_axis]
                }
                Some(_) if source_size == 1 => {}
                _ => {
                    return Err(invalid(
                        "broadcast",
                        &self.shape,
                        format!("cannot broadcast to {shape:?} along axes {axes:?}"),
                    ));
                }
            }
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// Right-aligned broadcasting (numpy's rule), as Nx applies it to binary operands.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        if self.rank() > shape.len() {
            return Err(invalid(
                "broadcast",
                &self.shape,
                format!("cannot broadcast to lower rank {shape:?}"),
            ));
        }
        let axes: Vec<usize> = (shape.len() - self.rank()..shape.len()).collect();
        self.broadcast(shape, &axes)
    }

    /// Axis `i` of the result is axis `permutation[i]` of `self`.
    pub fn transpose(&self, permutation: &[usize]) -> Result<Layout> {
        let mut seen = vec![false; self.rank()];
        let valid = permutation.len() == self.rank()
            && permutation
                .iter()
                .all(|&axis| axis < seen.len() && !std::mem::replace(&mut seen[axis], true));
        if !valid {
            return Err(invalid(
                "transpose",
                &self.shape,
                format!("{permutation:?} is not a permutation of the axes"),
            ));
        }
        Ok(Layout {
            shape: permutation.iter().map(|&axis| self.shape[axis]).collect(),
            strides: permutation.iter().map(|&axis| self.strides[axis]).collect(),
            offset: self.offset,
        })
    }

    /// A unit-step slice: `lengths[i]` elements from `starts[i]` on each axis.
    pub fn slice(&self, starts: &[usize], lengths: &[usize]) -> Result<Layout> {
        let in_bounds = starts.len() == self.rank()
            && lengths.len() == self.rank()
            && (0..self.rank()).all(|axis| {
                starts[axis]
                    .checked_add(lengths[axis])
                    .is_some_and(|end| end <= self.shape[axis])
            });
        if !in_bounds {
            return Err(invalid(
                "slice",
                &self.shape,
                format!("start {starts:?} with lengths {lengths:?} leaves the tensor"),
            ));
        }
        let offset = starts
            .iter()
            .zip(&self.strides)
            .fold(self.offset, |offset, (&start, &stride)| {
                offset.saturating_add(start.saturating_mul(stride))
            });
        Ok(Layout {
            shape: lengths.to_vec(),
            strides: self.strides.clone(),
            offset,
        })
    }
}

/// Row-major strides in elements for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1].saturating_mul(shape[axis + 1]);
    }
    strides
}

/// The element count of `shape`, or an error naming `op` when it overflows.
fn checked_count(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |count, &size| count.checked_mul(size))
        .ok_or_else(|| invalid(op, shape, "the element count overflows".into()))
}

fn invalid(op: &'static str, shape: &[usize], detail: String) -> Error {
    Error::InvalidView {
        op,
        shape: shape.to_vec(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_then_slice_addresses_the_right_elements() {
        let layout = Layout::contiguous(&[2, 3, 4]);
        let view = layout
            .transpose(&[2, 0, 1])
            .unwrap()
            .slice(&[1, 0, 1], &[2, 2, 2])
            .unwrap();
        assert_eq!(view.shape(), &[2, 2, 2]);
        let indices: Vec<usize> = view.element_indices().collect();
        // element (k, i, j) of the view is source (i, j + 1, k + 1) = i*12 + (j+1)*4 + k+1.
        assert_eq!(indices, vec![5, 9, 17, 21, 6, 10, 18, 22]);
        assert!(!view.is_contiguous());
    }

    #[test]
    fn broadcast_repeats_with_zero_strides() {
        let layout = Layout::contiguous(&[3, 1]);
        let view = layout.broadcast_to(&[2, 3, 4]).unwrap();
        assert_eq!(view.strides(), &[0, 1, 0]);
        assert_eq!(view.element_span(), 0..3);
        assert!(layout.broadcast_to(&[2, 4]).is_err());
    }

    #[test]
    fn reshape_needs_contiguity_and_equal_counts() {
        let layout = Layout::contiguous(&[2, 3]);
        assert!(layout.reshape(&[3, 2]).is_ok());
        assert!(layout.reshape(&[4]).is_err());
        assert!(layout.transpose(&[1, 0]).unwrap().reshape(&[6]).is_err());
    }

    #[test]
    fn rank_zero_and_empty_layouts() {
        let scalar = Layout::contiguous(&[]);
        assert_eq!(scalar.n_elements(), 1);
        assert_eq!(scalar.element_indices().collect::<Vec<_>>(), vec![0]);
        let empty = Layout::contiguous(&[2, 0, 3]);
        assert_eq!(empty.n_elements(), 0);
        assert_eq!(empty.element_span(), 0..0);
        assert!(scalar.squeeze(&[0]).is_err());
    }

    proptest::proptest! {
        /// Any view request on any layout returns a layout or an error, never a panic.
        #[test]
        fn arbitrary_view_requests_never_panic(
            shape in proptest::collection::vec(0usize..usize::MAX, 0..5),
            target in proptest::collection::vec(0usize..usize::MAX, 0..6),
            small in proptest::collection::vec(0usize..8, 0..6),
        ) {
            let layout = Layout::contiguous(&shape);
            let _ = layout.reshape(&target);
            let _ = layout.broadcast_to(&target);
            let _ = layout.broadcast(&target, &small);
            let _ = layout.transpose(&small);
            let _ = layout.squeeze(&small);
            let _ = layout.slice(&small, &target);
            let _ = layout.slice(&target, &small);
        }
    }

    #[test]
    fn overflowing_shapes_are_errors() {
        let layout = Layout::contiguous(&[1]);
        assert!(layout.broadcast_to(&[usize::MAX, 2]).is_err());
        assert!(layout.reshape(&[usize::MAX, 2]).is_err());
    }

    #[test]
    fn invalid_views_name_the_op_and_shape() {
        let message = Layout::contiguous(&[2, 2])
            .transpose(&[0, 0])
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("transpose") && message.contains("[2, 2]"),
            "{message}"
        );
    }
}
