//! Null arms: each comparison helper the core tests rely on must fail on a wrong value.

mod common;
use common::{same_bytes, same_f32};

#[test]
fn same_bytes_accepts_equal_and_rejects_any_difference() {
    assert!(same_bytes("equal", &[1, 2, 3], &[1, 2, 3]).is_ok());
    assert!(same_bytes("one bit", &[1, 2, 3], &[1, 2, 7]).is_err());
    assert!(same_bytes("length", &[1, 2], &[1, 2, 3]).is_err());
    assert!(same_bytes("empty", &[], &[]).is_ok());
}

#[test]
fn same_f32_is_bitwise() {
    assert!(same_f32("equal", &[1.0, f32::NAN], &[1.0, f32::NAN]).is_ok());
    assert!(same_f32("sign of zero", &[-0.0], &[0.0]).is_err());
    assert!(same_f32("one ulp", &[1.0], &[f32::from_bits(1.0f32.to_bits() + 1)]).is_err());
    assert!(same_f32("length", &[1.0], &[]).is_err());
}
