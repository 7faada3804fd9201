//! The one constructor of `Error::BadOperands` for the hand-written kernel families: it names
//! the op and every operand's shape and dtype, so each family only writes its `detail`.

use nxvk_core::{Error, Tensor};

/// `Error::BadOperands` for `op` on `operands`, saying what is wrong in `detail`.
pub(crate) fn bad_operands(op: &'static str, operands: &[&Tensor], detail: String) -> Error {
    Error::BadOperands {
        op,
        shapes: operands
            .iter()
            .map(|operand| operand.shape().to_vec())
            .collect(),
        dtypes: operands.iter().map(|operand| operand.dtype()).collect(),
        detail,
    }
}
