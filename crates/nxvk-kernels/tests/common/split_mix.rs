//! splitmix64, the seeded generator of the kernels' and the fusion planner's tests (fusion's
//! tests/common includes this file by `#[path]`). Each includer adds the draws its tests use
//! (bounded integers, unit floats, picks) in its own `impl SplitMix` block.

/// splitmix64: small, seeded, reproducible from a proptest seed.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
