//! Nx's type promotion (`Nx.Type.merge`, `to_floating`, `to_real`, `to_complex`) on
//! [`DType`], and the result and compute types of each op.
//!
//! The *compute type* is the type the operands are cast to before the kernel runs: the result
//! type, except for predicates (u8 results), which compare in the operands' merged type. Nx's
//! BinaryBackend compares mixed-type operands exactly; casting first (as EXLA does) differs only
//! where the merged type cannot represent an operand (say an s64 above 2^24 against an f32).

use crate::op_table::{Accepts, BinaryOp, OpSpec, ResultRule, UnaryOp};
use nxvk_core::{DType, DTypeClass, Error, Result};

/// Nx's kind ranking in `Nx.Type.sort`: u < s < bf < f (and f8_e4m3fn) < c.
fn kind_rank(dtype: DType) -> u8 {
    match dtype {
        DType::U2 | DType::U4 | DType::U8 | DType::U16 | DType::U32 | DType::U64 => 0,
        DType::S2 | DType::S4 | DType::S8 | DType::S16 | DType::S32 | DType::S64 => 1,
        DType::BF16 => 2,
        DType::F8E5M2 | DType::F8E4M3FN | DType::F16 | DType::F32 | DType::F64 => 3,
        DType::C64 | DType::C128 => 4,
    }
}

/// Nx's kind (`:u`, `:s`, `:bf`, `:f`, `:f8_e4m3fn`, `:c`), for "same kind: larger size".
fn kind(dtype: DType) -> u8 {
    match dtype {
        DType::F8E4M3FN => 5,
        other => kind_rank(other),
    }
}

fn with_bits(kind_of: DType, bits: u32) -> DType {
    DType::ALL
        .into_iter()
        .find(|&dtype| kind(dtype) == kind(kind_of) && dtype.bits() == bits)
        .unwrap_or(kind_of)
}

/// `Nx.Type.merge(left, right)`.
pub fn merge(left: DType, right: DType) -> DType {
    if kind(left) == kind(right) {
        return if left.bits() >= right.bits() {
            left
        } else {
            right
        };
    }
    let (low, high) = if kind_rank(left) < kind_rank(right) {
        (left, right)
    } else {
        (right, left)
    };
    match (low.class(), high.class()) {
        (DTypeClass::UnsignedInt, DTypeClass::SignedInt) => {
            with_bits(high, (low.bits() * 2).min(64).max(high.bits()))
        }
        (DTypeClass::Float, DTypeClass::Complex) if low != DType::BF16 => {
            with_bits(high, (low.bits() * 2).max(high.bits()))
        }
        _ => high,
    }
}

/// `Nx.Type.to_floating`: integers become f32 (merged), floats and complex stay.
pub fn to_floating(dtype: DType) -> DType {
    match dtype.class() {
        DTypeClass::Float | DTypeClass::Complex => dtype,
        DTypeClass::SignedInt | DTypeClass::UnsignedInt => merge(dtype, DType::F32),
    }
}

/// `Nx.Type.to_real`: complex becomes its component type, integers f32.
pub fn to_real(dtype: DType) -> DType {
    match dtype {
        DType::C64 => DType::F32,
        DType::C128 => DType::F64,
        other if other.is_float() => other,
        _ => DType::F32,
    }
}

/// `Nx.Type.to_complex`.
pub fn to_complex(dtype: DType) -> DType {
    match dtype {
        DType::C128 | DType::F64 => DType::C128,
        _ => DType::C64,
    }
}

/// The result and compute types of an op, after checking that Nx accepts the operand types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTypes {
    pub result: DType,
    pub compute: DType,
}

fn accepted(spec: &OpSpec, merged: DType) -> bool {
    match spec.accepts {
        Accepts::Any => true,
        Accepts::Real => !merged.is_complex(),
        Accepts::Integer => merged.is_integer(),
    }
}

fn apply_rule(spec: &OpSpec, merged: DType) -> OpTypes {
    let result = match spec.result {
        ResultRule::Same => merged,
        ResultRule::Floating => to_floating(merged),
        ResultRule::U8 => DType::U8,
        ResultRule::Real => to_real(merged),
        ResultRule::Complex => to_complex(merged),
    };
    let compute = if spec.result == ResultRule::U8 {
        merged
    } else {
        result
    };
    OpTypes { result, compute }
}

fn refused(op: &'static str, shapes: &[&[usize]], dtypes: Vec<DType>, spec: &OpSpec) -> Error {
    let wanted = match spec.accepts {
        Accepts::Any => "any type",
        Accepts::Real => "integer or float operands (not complex)",
        Accepts::Integer => "integer operands",
    };
    Error::BadOperands {
        op,
        shapes: shapes.iter().map(|shape| shape.to_vec()).collect(),
        dtypes,
        detail: format!("{op} accepts {wanted}"),
    }
}

/// Types of a binary op on operands of `left` and `right` types.
pub fn binary_types(
    op: BinaryOp,
    left: DType,
    right: DType,
    shapes: &[&[usize]],
) -> Result<OpTypes> {
    let spec = op.spec();
    let merged = merge(left, right);
    // Nx checks predicates' operands one by one (a complex operand anywhere is refused).
    let accepted_operands =
        accepted(&spec, merged) && accepted(&spec, left) && accepted(&spec, right);
    if !accepted_operands {
        return Err(refused(spec.name, shapes, vec![left, right], &spec));
    }
    Ok(apply_rule(&spec, merged))
}

/// Types of a unary op on an operand of type `input`.
pub fn unary_types(op: UnaryOp, input: DType, shape: &[usize]) -> Result<OpTypes> {
    let spec = op.spec();
    if !accepted(&spec, input) {
        return Err(refused(spec.name, &[shape], vec![input], &spec));
    }
    if input.is_complex() {
        // Evaluated on the complex value itself, also where the result is real (abs, real,
        // imag): the op's complex result rule.
        let complex_spec = OpSpec {
            result: spec.complex_result,
            ..spec
        };
        let result = apply_rule(&complex_spec, input).result;
        return Ok(OpTypes {
            result,
            compute: input,
        });
    }
    Ok(apply_rule(&spec, input))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_follows_nx_type_merge() {
        use DType::*;
        let cases = [
            (U8, S8, S16),
            (U8, S32, S32),
            (U32, S8, S64),
            (U64, S64, S64),
            (S32, F32, F32),
            (S64, F16, F16),
            (U8, BF16, BF16),
            (BF16, F16, F16),
            (F16, F32, F32),
            (F64, C64, C128),
            (F32, C64, C64),
            (S64, C64, C64),
            (U16, U8, U16),
        ];
        for (left, right, expected) in cases {
            assert_eq!(merge(left, right), expected, "{left} + {right}");
            assert_eq!(merge(right, left), expected, "{right} + {left}");
        }
        assert_eq!(to_floating(S64), F32);
        assert_eq!(to_floating(BF16), BF16);
        assert_eq!(to_real(C128), F64);
        assert_eq!(to_complex(F64), C128);
    }

    #[test]
    fn rules_give_result_and_compute_types() {
        let types = binary_types(BinaryOp::Less, DType::U8, DType::S8, &[]).unwrap();
        assert_eq!(
            types,
            OpTypes {
                result: DType::U8,
                compute: DType::S16
            }
        );
        let types = binary_types(BinaryOp::Divide, DType::S32, DType::S32, &[]).unwrap();
        assert_eq!(types.result, DType::F32);
        assert!(binary_types(BinaryOp::BitwiseAnd, DType::F32, DType::S32, &[]).is_err());
        assert!(binary_types(BinaryOp::Quotient, DType::S32, DType::F32, &[]).is_err());
        assert_eq!(
            unary_types(UnaryOp::Exp, DType::S32, &[]).unwrap().result,
            DType::F32
        );
        assert_eq!(
            unary_types(UnaryOp::Abs, DType::C64, &[]).unwrap().result,
            DType::F32
        );
        assert_eq!(
            unary_types(UnaryOp::Conjugate, DType::F64, &[])
                .unwrap()
                .result,
            DType::C128
        );
    }
}
