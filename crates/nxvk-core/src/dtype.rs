//! Element types: one variant per Nx type, with sizes and the packing of sub-byte types.

use std::fmt;
use std::str::FromStr;

/// Every element type Nx defines, named as Nx names them (`{:s, 4}` is `S4`, `{:f, 8}` is
/// `F8E5M2`, `{:f8_e4m3fn, 8}` is `F8E4M3FN`).
///
/// Sub-byte integers (`s2`, `s4`, `u2`, `u4`) are packed as Nx packs them in binaries: element 0
/// in the most significant bits of byte 0 (an Erlang bitstring's order). Every other type is
/// stored little-endian, one element after another; complex types store the real part first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    S2,
    S4,
    S8,
    S16,
    S32,
    S64,
    U2,
    U4,
    U8,
    U16,
    U32,
    U64,
    /// 8-bit float with 5 exponent bits and 2 mantissa bits (Nx's `{:f, 8}`).
    F8E5M2,
    /// 8-bit float with 4 exponent bits, 3 mantissa bits, no infinities (Nx's `:f8_e4m3fn`).
    F8E4M3FN,
    F16,
    BF16,
    F32,
    F64,
    /// Complex with f32 parts.
    C64,
    /// Complex with f64 parts.
    C128,
}

/// Broad classes of element types, as kernels and result-type rules see them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DTypeClass {
    SignedInt,
    UnsignedInt,
    Float,
    Complex,
}

impl DType {
    /// Every dtype, in Nx's order of declaration (for tests and coverage tables).
    pub const ALL: [DType; 20] = [
        DType::S2,
        DType::S4,
        DType::S8,
        DType::S16,
        DType::S32,
        DType::S64,
        DType::U2,
        DType::U4,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F8E5M2,
        DType::F8E4M3FN,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// Bits one element occupies in storage.
    pub const fn bits(self) -> u32 {
        match self {
            DType::S2 | DType::U2 => 2,
            DType::S4 | DType::U4 => 4,
            DType::S8 | DType::U8 | DType::F8E5M2 | DType::F8E4M3FN => 8,
            DType::S16 | DType::U16 | DType::F16 | DType::BF16 => 16,
            DType::S32 | DType::U32 | DType::F32 => 32,
            DType::S64 | DType::U64 | DType::F64 | DType::C64 => 64,
            DType::C128 => 128,
        }
    }

    /// True for the 2- and 4-bit integer types, several of which share a byte.
    pub const fn is_sub_byte(self) -> bool {
        self.bits() < 8
    }

    /// Bytes needed to store `n_elements` elements packed (sub-byte types round up).
    pub const fn storage_bytes(self, n_elements: u64) -> u64 {
        (n_elements * self.bits() as u64).div_ceil(8)
    }

    /// Bytes per element; `None` for the sub-byte types.
    pub const fn byte_size(self) -> Option<u64> {
        if self.is_sub_byte() {
            None
        } else {
            Some(self.bits() as u64 / 8)
        }
    }

    pub const fn class(self) -> DTypeClass {
        match self {
            DType::S2 | DType::S4 | DType::S8 | DType::S16 | DType::S32 | DType::S64 => {
                DTypeClass::SignedInt
            }
            DType::U2 | DType::U4 | DType::U8 | DType::U16 | DType::U32 | DType::U64 => {
                DTypeClass::UnsignedInt
            }
            DType::F8E5M2
            | DType::F8E4M3FN
            | DType::F16
            | DType::BF16
            | DType::F32
            | DType::F64 => DTypeClass::Float,
            DType::C64 | DType::C128 => DTypeClass::Complex,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self.class(), DTypeClass::Float)
    }

    pub const fn is_complex(self) -> bool {
        matches!(self.class(), DTypeClass::Complex)
    }

    pub const fn is_integer(self) -> bool {
        matches!(
            self.class(),
            DTypeClass::SignedInt | DTypeClass::UnsignedInt
        )
    }

    /// Nx's short name: `"s32"`, `"bf16"`, `"f8_e4m3fn"`.
    pub const fn name(self) -> &'static str {
        match self {
            DType::S2 => "s2",
            DType::S4 => "s4",
            DType::S8 => "s8",
            DType::S16 => "s16",
            DType::S32 => "s32",
            DType::S64 => "s64",
            DType::U2 => "u2",
            DType::U4 => "u4",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F8E5M2 => "f8",
            DType::F8E4M3FN => "f8_e4m3fn",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The text was not the name of an Nx type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}` (expected an Nx type name such as s32, f32, bf16, c64)")]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        DType::ALL
            .into_iter()
            .find(|dtype| dtype.name() == text)
            .ok_or_else(|| UnknownDType(text.to_owned()))
    }
}

/// Host element types that map one-to-one onto a [`DType`], for typed upload and read-back.
///
/// Sub-byte and 8-bit float types have no Rust element type; use the byte API for them.
pub trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($($rust:ty => $dtype:ident),* $(,)?) => {
        $(impl Element for $rust { const DTYPE: DType = DType::$dtype; })*
    };
}

element! {
    i8 => S8, i16 => S16, i32 => S32, i64 => S64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    half::f16 => F16, half::bf16 => BF16, f32 => F32, f64 => F64,
    num_complex::Complex32 => C64, num_complex::Complex64 => C128,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for dtype in DType::ALL {
            assert_eq!(dtype.name().parse::<DType>(), Ok(dtype));
        }
        assert!("f128".parse::<DType>().is_err());
    }

    #[test]
    fn sizes_follow_nx() {
        assert_eq!(DType::U4.storage_bytes(3), 2);
        assert_eq!(DType::S2.storage_bytes(5), 2);
        assert_eq!(DType::C128.storage_bytes(2), 32);
        assert_eq!(DType::BF16.byte_size(), Some(2));
        assert_eq!(DType::U2.byte_size(), None);
        assert_eq!(DType::F8E4M3FN.bits(), 8);
        assert!(DType::C64.is_complex() && !DType::C64.is_float());
    }
}
