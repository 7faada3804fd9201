//! View ops: the graph's data-movement nodes that never copy, as steps applied to tensors.
//!
//! Inside a fused kernel a view between two elementwise nodes is not computed at all: it
//! changes which element of the leaf below it each invocation reads, so the planner pushes
//! every view (and every implicit right-aligned broadcast of an elementwise operand) down to
//! the kernel's leaf tensors as a [`ViewPath`], and the executor applies the path to the leaf's
//! layout. A step the layout cannot express (reshaping a transposed or broadcast view) makes
//! the executor materialise the tensor first (one copy dispatch), never a wrong answer.

use crate::graph::Op;
use nxvk_core::{Layout, Result, Tensor};
use nxvk_kernels::movement;

/// One view step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ViewStep {
    /// Nx broadcast to `shape`, input axis `i` becoming output axis `axes[i]`.
    Broadcast {
        shape: Vec<usize>,
        axes: Vec<usize>,
    },
    Reshape {
        shape: Vec<usize>,
    },
    Transpose {
        permutation: Vec<usize>,
    },
    Squeeze {
        axes: Vec<usize>,
    },
    Slice {
        starts: Vec<usize>,
        lengths: Vec<usize>,
        strides: Vec<usize>,
    },
}

/// View steps in the order they apply to a leaf (first step first).
pub type ViewPath = Vec<ViewStep>;

impl ViewStep {
    /// The step a view node applies, given its output shape; `None` for non-view ops.
    pub(crate) fn of(op: &Op, shape: &[usize]) -> Option<ViewStep> {
        Some(match op {
            Op::Broadcast { axes, .. } => ViewStep::Broadcast {
                shape: shape.to_vec(),
                axes: axes.clone(),
            },
            Op::Reshape { .. } => ViewStep::Reshape {
                shape: shape.to_vec(),
            },
            Op::Transpose { permutation, .. } => ViewStep::Transpose {
                permutation: permutation.clone(),
            },
            Op::Squeeze { axes, .. } => ViewStep::Squeeze { axes: axes.clone() },
            Op::Slice {
                starts,
                lengths,
                strides,
                ..
            } => ViewStep::Slice {
                starts: starts.clone(),
                lengths: lengths.clone(),
                strides: strides.clone(),
            },
            _ => return None,
        })
    }

    /// Right-aligned broadcast of a value of rank `rank` to `shape`.
    pub(crate) fn broadcast_to(rank: usize, shape: &[usize]) -> ViewStep {
        ViewStep::Broadcast {
            shape: shape.to_vec(),
            axes: (shape.len() - rank..shape.len()).collect(),
        }
    }

    pub(crate) fn apply_layout(&self, layout: &Layout) -> Result<Layout> {
        match self {
            ViewStep::Broadcast { shape, axes } => layout.broadcast(shape, axes),
            ViewStep::Reshape { shape } => layout.reshape(shape),
            ViewStep::Transpose { permutation } => layout.transpose(permutation),
            ViewStep::Squeeze { axes } => layout.squeeze(axes),
            ViewStep::Slice {
                starts,
                lengths,
                strides,
            } => {
                let window = layout.slice(starts, lengths)?;
                let shape = lengths
                    .iter()
                    .zip(strides)
                    .map(|(&length, &stride)| length.div_ceil(stride))
                    .collect();
                let element_strides = window
                    .strides()
                    .iter()
                    .zip(strides)
                    .map(|(&element, &step)| element * step)
                    .collect();
                Layout::from_parts(shape, element_strides, window.offset())
            }
        }
    }

    /// `tensor` seen through this step: a view when the layout allows it, else a view of a
    /// contiguous copy.
    pub(crate) fn apply(&self, tensor: &Tensor) -> Result<Tensor> {
        match self.apply_layout(tensor.layout()) {
            Ok(layout) => Tensor::from_parts(tensor.buffer().clone(), layout, tensor.dtype()),
            Err(_) => {
                let copy = movement::contiguous(tensor)?;
                let layout = self.apply_layout(copy.layout())?;
                Tensor::from_parts(copy.buffer().clone(), layout, copy.dtype())
            }
        }
    }
}

/// `tensor` seen through every step of `path`.
pub(crate) fn apply_path(tensor: &Tensor, path: &[ViewStep]) -> Result<Tensor> {
    path.iter()
        .try_fold(tensor.clone(), |tensor, step| step.apply(&tensor))
}
