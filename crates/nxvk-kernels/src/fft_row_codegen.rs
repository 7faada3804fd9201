//! GLSL for the one-pass row FFT (`fft_row.rs`): a c64 row of `n` = 2^12, 2^13 or 2^14
//! elements transformed by one workgroup of `n / 32` invocations, the row held in registers
//! (32 complex numbers each) and exchanged through a 32 KiB shared chunk, a quarter of a row
//! of 2^14 at a time.
//!
//! The row is a four-step transform of `32 x M` (`M = n / 32`) done on chip:
//! 1. invocation `t` loads elements `t + M m` (`m < 32`: coalesced, one read of the row) and
//!    transforms them in registers (a DFT of 32 points as 4 DFTs of 8, twiddles and 8 DFTs of
//!    4), which leaves `Y_t[k1]` in register `k1`;
//! 2. register `k1` is multiplied by `W_n^(t k1)`; the rest is 32 independent DFTs of `M`, one
//!    per register index, `X[k1 + 32 k2] = DFT_M over t of Y_t[k1]`;
//! 3. the registers go through shared memory in groups of `4096 / M` (8 for 2^14): a group's
//!    registers of every invocation fill the chunk, and the group's DFTs of `M` run as
//!    Stockham stages (radix 8, 4) over the chunk with `4096 / M` elements per invocation,
//!    which are exactly the group's own registers, so no invocation needs a register beyond its
//!    32, however the group's data moves. (A chunked exchange of a radix-16 pipeline over the
//!    whole row would need each invocation's outputs kept while it read its next inputs: twice
//!    the registers, more than 1,024 invocations can hold.)
//! 4. each group's results go through the chunk once more and out in runs of `4096 / M`
//!    consecutive elements (64 bytes for 2^14), 32 elements apart, which the other groups
//!    complete within the same workgroup's lifetime.
//!
//! The row is read and written once from global memory (the four-step pair reads and writes
//! it twice). Twiddles come from the two-level table of `n` (`fft_tables`).

use crate::fft_codegen::{
    LoadInput, Precision, SMALL_DFT_GLSL, TILE_ACCESS_GLSL, TWIDDLE_GLSL, powers_glsl, radices,
    reals_glsl, stage_glsl, stage_writes_glsl,
};
use std::f64::consts::PI;

/// Complex numbers each invocation holds.
const REGISTERS: u32 = 32;

/// Complex numbers of the shared chunk (32 KiB of c64 as separate real and imaginary parts).
pub(crate) const CHUNK: u32 = 4096;

/// The row lengths the kernel is written for, as powers of two.
pub(crate) const LOG2_LENGTHS: std::ops::RangeInclusive<u32> = 12..=14;

/// Invocations per workgroup for rows of `2^log2_length`.
pub(crate) fn row_threads(log2_length: u32) -> u32 {
    (1 << log2_length) / REGISTERS
}

/// The kernel's name.
pub(crate) fn row_kernel_name(log2_length: u32, input: LoadInput) -> String {
    format!("fft_row_c64_{}_{}", input.name(), 1u32 << log2_length)
}

/// GLSL of `W_32^exponent` as a c64 literal.
fn root32(exponent: u32) -> String {
    let angle = -2.0 * PI * f64::from(exponent % 32) / 32.0;
    format!(
        "COMPLEX({:e}f, {:e}f)",
        angle.cos() as f32,
        angle.sin() as f32
    )
}

/// GLSL transforming registers `v[0..32]` by a DFT of 32 points in place, natural order: with
/// element `i + 4 j` in register `i + 4 j`, DFTs of 8 over `j` for each `i`, twiddles
/// `W_32^(i k1)`, DFTs of 4 over `i` for each `k1`, then output `k1 + 8 k2` moved from
/// register `4 k1 + k2` to register `k1 + 8 k2`.
fn dft32_glsl() -> String {
    let mut text = String::new();
    for i in 0..4 {
        let registers: Vec<String> = (0..8).map(|j| format!("v[{}]", i + 4 * j)).collect();
        text.push_str(&format!("        dft8({});\n", registers.join(", ")));
    }
    for i in 1..4 {
        for k1 in 1..8 {
            text.push_str(&format!(
                "        v[{r}] = complex_multiply(v[{r}], {w});\n",
                r = i + 4 * k1,
                w = root32(i * k1)
            ));
        }
    }
    for k1 in 0..8 {
        text.push_str(&format!(
            "        dft4(v[{a}], v[{b}], v[{c}], v[{d}]);\n",
            a = 4 * k1,
            b = 4 * k1 + 1,
            c = 4 * k1 + 2,
            d = 4 * k1 + 3
        ));
    }
    text.push_str("        { COMPLEX before[32] = v;\n");
    for k1 in 0..8 {
        for k2 in 0..4 {
            text.push_str(&format!(
                "          v[{}] = before[{}];\n",
                k1 + 8 * k2,
                4 * k1 + k2
            ));
        }
    }
    text.push_str("        }\n");
    text
}

/// GLSL multiplying register `k1` by `W_n^(t k1)` (`t` the invocation): `W^(t b)` for `b < 8`
/// as powers of one table twiddle, and `W^(8 t a)` for `a < 4` from the table.
fn outer_twiddles_glsl() -> String {
    let mut text = String::from(
        "        {\n          COMPLEX w1 = twiddle(push.twiddles, push.log2_fine, t);\n",
    );
    text.push_str(&powers_glsl("w", 8, "          "));
    for a in 1..4 {
        text.push_str(&format!(
            "          COMPLEX u{a} = twiddle(push.twiddles, push.log2_fine, {}u * t);\n",
            8 * a
        ));
    }
    for k1 in 1..REGISTERS {
        let (a, b) = (k1 / 8, k1 % 8);
        let factor = match (a, b) {
            (0, b) => format!("w{b}"),
            (a, 0) => format!("u{a}"),
            (a, b) => format!("complex_multiply(u{a}, w{b})"),
        };
        text.push_str(&format!(
            "          v[{k1}] = complex_multiply(v[{k1}], {factor});\n"
        ));
    }
    text.push_str("        }\n");
    text
}

/// GLSL of one group of registers `[first, first + values)`: through the chunk, the group's
/// DFTs of `m_length` as Stockham stages with `values` elements per invocation (`local` is
/// the group's registers), and out to the row.
fn group_glsl(first: u32, values: u32, m_length: u32, threads: u32) -> String {
    let lanes = m_length / values;
    let mut text = format!(
        "        // Registers {first}..{last}: DFTs {first}..{last} of {m_length} over the invocations.\n",
        last = first + values - 1
    );
    for r in 0..values {
        text.push_str(&format!("        put({r}u, t, v[{}]);\n", first + r));
    }
    text.push_str("        barrier();\n        {\n        COMPLEX local[VALUES];\n");
    let local_reads = |text: &mut String| {
        for m in 0..values {
            text.push_str(&format!(
                "        local[{m}] = get(group_slot, lane + {}u);\n",
                m * lanes
            ));
        }
    };
    local_reads(&mut text);
    let stage_radices = radices(m_length.trailing_zeros());
    let mut sub_length = 1;
    for (stage, &radix) in stage_radices.iter().enumerate() {
        // The shared stage helpers name the registers `v`: a block scope renames `local`.
        text.push_str("        { COMPLEX v[VALUES] = local;\n");
        text.push_str(&stage_glsl(values, lanes, m_length, sub_length, radix));
        text.push_str("        barrier();\n");
        if stage + 1 < stage_radices.len() {
            text.push_str(&stage_writes_glsl(values, lanes, sub_length, radix));
        } else {
            // The last stage leaves element `lane + m lanes` in register `m`.
            for m in 0..values {
                text.push_str(&format!(
                    "        put(group_slot, lane + {}u, v[{m}]);\n",
                    m * lanes
                ));
            }
        }
        text.push_str("        local = v; }\n        barrier();\n");
        if stage + 1 < stage_radices.len() {
            local_reads(&mut text);
        }
        sub_length *= radix;
    }
    text.push_str("        }\n");
    // Out: slot `index` of the group holds X[first + index % values + 32 (index / values)].
    for r in 0..values {
        text.push_str(&format!(
            "        {{ uint index = t + {offset}u;\n          store_element({first}u + index % {values}u + {REGISTERS}u * (index / {values}u), get(index % {values}u, index / {values}u)); }}\n",
            offset = r * threads
        ));
    }
    text.push_str("        barrier();\n");
    text
}

/// The one-pass row kernel (module doc) for rows of `2^log2_length` read as `input`. Push
/// constants: the rows' addresses and strides, input positions at or past `input_limit` read
/// as zeros (padding, truncation), output positions at or past `output_limit` dropped,
/// conjugations of the input and output (an inverse), and the scale.
pub(crate) fn row_shader(log2_length: u32, input: LoadInput) -> String {
    let precision = Precision::Single;
    let length = 1u32 << log2_length;
    let threads = row_threads(log2_length);
    let m_length = length / REGISTERS;
    let values = CHUNK / m_length;
    let lanes = m_length / values;
    let groups: String = (0..REGISTERS / values)
        .map(|group| group_glsl(group * values, values, m_length, threads))
        .collect();
    let loads: String = (0..REGISTERS)
        .map(|m| {
            format!(
                "        {{ uint position = t + {}u; uint64_t element = row_start + uint64_t(position);\n          v[{m}] = position < push.input_limit ? {read} : COMPLEX(0.0f, 0.0f); }}\n",
                m * threads,
                read = input.read_glsl()
            )
        })
        .collect();
    format!(
        "{prelude}{reals}{TWIDDLE_GLSL}{SMALL_DFT_GLSL}
const uint VALUES = {values}u;
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint rows;
    uint input_limit;
    uint in_row_stride;
    uint output_limit;
    uint out_row_stride;
    uint log2_fine;
    uint conjugate_input;
    uint conjugate_output;
    REAL scale;
}} push;

// The shared chunk.
shared REAL tile_real[{CHUNK}];
shared REAL tile_imaginary[{CHUNK}];

// Element `element` of DFT `slot` of the chunk (DFTs of {m_length} contiguous), swizzled within
// each run of 32 slots: by bits 3-7 against the stages' strided accesses and by the DFT index
// against the final read across DFTs (both XORs into the low five bits keep it a bijection).
uint tile_index(uint slot, uint element) {{
    uint index = slot * {m_length}u + element;
    return index ^ (((index >> 3u) ^ (slot << 2u)) & 31u);
}}
{TILE_ACCESS_GLSL}// Twiddles of the DFTs of {m_length}: W_{m_length}^e = W_{length}^(32 e).
COMPLEX stage_twiddle(uint exponent) {{
    return twiddle(push.twiddles, push.log2_fine, exponent * {REGISTERS}u);
}}

uint64_t out_row;
void store_element(uint position, COMPLEX value) {{
    if (position >= push.output_limit) return;
    if (push.conjugate_output != 0u) value = conjugate_output(value);
    Complexes(push.destination + (out_row + uint64_t(position)) * COMPLEX_BYTES).v = value * push.scale;
}}

void main() {{
    uint t = gl_LocalInvocationID.x;
    // In a group's DFTs: which DFT this invocation works on, and its lane in it.
    uint group_slot = t / {lanes}u;
    uint lane = t % {lanes}u;
    for (uint row = gl_WorkGroupID.x; row < push.rows; row += gl_NumWorkGroups.x) {{
        uint64_t row_start = uint64_t(row) * uint64_t(push.in_row_stride);
        out_row = uint64_t(row) * uint64_t(push.out_row_stride);
        // Registers are indexed by constants only (unrolled here), so that they stay
        // registers.
        COMPLEX v[{REGISTERS}];
{loads}        if (push.conjugate_input != 0u) {{
{conjugates}        }}
{dft32}{twiddles}{groups}    }}
}}
",
        prelude = precision.prelude(threads),
        reals = reals_glsl(precision),
        conjugates = (0..REGISTERS)
            .map(|m| format!("            v[{m}].y = -v[{m}].y;\n"))
            .collect::<String>(),
        dft32 = dft32_glsl(),
        twiddles = outer_twiddles_glsl(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel compiles for every length and input (glslang needs no device), and each
    /// group's elements per invocation are the group's registers.
    #[test]
    fn kernels_compile() {
        for log2_length in LOG2_LENGTHS {
            let m_length = (1u32 << log2_length) / REGISTERS;
            assert_eq!(
                (CHUNK / m_length) * row_threads(log2_length),
                CHUNK,
                "a group fills the chunk"
            );
            for input in [LoadInput::Complex, LoadInput::Real] {
                let name = row_kernel_name(log2_length, input);
                nxvk_glsl::compile_compute(&name, &row_shader(log2_length, input))
                    .unwrap_or_else(|error| panic!("{name}: {error}"));
            }
        }
    }
}
