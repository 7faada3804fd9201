//! GLSL for the mixed-radix FFT (`fft_mixed.rs`): the block kernel of transforms whose length
//! is `2^a 3^b 5^c 7^d` (not a power of two), one pass of a transform or of a four-step pair,
//! and the odd small DFTs it needs.
//!
//! A workgroup takes a tile of `group` transforms of `length`: it loads them into shared
//! memory (walking along each transform's elements, or across the transforms where they are
//! strided columns whose neighbours are contiguous), runs one Stockham stage per radix (7, 5,
//! 3, then the power-of-two part as radix 8, 4 and 2), each stage reading its butterflies'
//! inputs from shared memory into registers, twiddling and transforming them there, and
//! writing them back after a barrier, and stores the tile the way the pass says. Each
//! transform has `threads` invocations (`length` over the largest radix, at most 256), which
//! take the butterflies of a stage in turn, so a stage of a smaller radix gives each invocation
//! several. This is the general form rather than the power-of-two kernel's registers-only
//! stages (`fft_codegen::block_shader`), which need every radix to divide a fixed register
//! count; the power-of-two paths keep their kernels.
//!
//! Twiddles come from the two-level table of the whole transform (`fft_tables`), as in the
//! power-of-two kernel: one table twiddle per butterfly and the others as its powers. The
//! small DFTs of 3, 5 and 7 points pair inputs `k` and `r - k` (sums and differences), so a
//! DFT of `r` points takes `(r - 1)^2 / 2` real products by constants cos and sin of
//! `2 pi k / r`, rounded from f64 to the precision.

use crate::fft_codegen::{
    LoadInput, Precision, SMALL_DFT_GLSL, TILE_ACCESS_GLSL, TWIDDLE_GLSL, Walk, powers_glsl,
    radices, reals_glsl,
};
use std::f64::consts::PI;

/// Invocations per workgroup of the mixed-radix kernel, at most.
const MAX_WORKGROUP: u32 = 256;

/// The odd radices a mixed length may have.
pub(crate) const ODD_RADICES: [u32; 3] = [7, 5, 3];

/// The radices of a transform of `length` (`2^a 3^b 5^c 7^d`), in stage order: the odd ones,
/// largest first, then the power-of-two part as the power-of-two kernel splits it.
pub(crate) fn mixed_radices(length: u32) -> Vec<u32> {
    let mut rest = length;
    let mut stages = Vec::new();
    for radix in ODD_RADICES {
        while rest.is_multiple_of(radix) {
            stages.push(radix);
            rest /= radix;
        }
    }
    if rest > 1 {
        stages.extend(radices(rest.trailing_zeros()));
    }
    stages
}

/// What a mixed-radix block kernel is compiled for. Transform `t` of a dispatch is column
/// `t % columns` of row `t / columns` (one column per row for a single pass; a four-step pass
/// has many), its element `k` at `column * column_stride + k * element_stride` of the row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MixedShape {
    pub precision: Precision,
    pub length: u32,
    pub columns: u32,
    pub load: Walk,
    pub store: Walk,
    /// Multiply element `k` of column `c` by `W^(c k)` on the way out (four-step's first pass).
    pub post_twiddle: bool,
    /// What the pass reads (real input is widened on the way in).
    pub input: LoadInput,
}

impl MixedShape {
    /// Invocations per transform: one per butterfly of the largest radix, at most a workgroup.
    pub(crate) fn threads(self) -> u32 {
        let largest = mixed_radices(self.length).into_iter().max().unwrap_or(1);
        (self.length / largest).clamp(1, MAX_WORKGROUP)
    }

    /// Transforms per workgroup: as many as fit the tile (`capacity` complex numbers) and the
    /// workgroup.
    pub(crate) fn group(self, capacity: u32) -> u32 {
        (capacity / self.length)
            .min(MAX_WORKGROUP / self.threads())
            .max(1)
    }

    pub(crate) fn kernel_name(self, capacity: u32) -> String {
        format!(
            "fft_mixed_{}_{}_{}x{}_columns{}_{}_{}{}",
            self.precision.name(),
            self.input.name(),
            self.group(capacity),
            self.length,
            self.columns,
            self.load.name(),
            self.store.name(),
            if self.post_twiddle { "_twiddled" } else { "" },
        )
    }
}

/// A GLSL literal of `value` in the precision (shortest digits that round-trip).
fn literal(precision: Precision, value: f64) -> String {
    match precision {
        Precision::Single => format!("{:e}f", value as f32),
        Precision::Double => format!("{value:e}LF"),
    }
}

/// GLSL of `dft{radix}` for an odd radix, forward, in natural order: output `m` is `x0` plus
/// the sums `x_k + x_(r-k)` times `cos(2 pi m k / r)`, minus `i` times the differences
/// `x_k - x_(r-k)` times `sin(2 pi m k / r)`; output `r - m` has the same parts with `+ i`.
fn odd_dft_glsl(precision: Precision, radix: u32) -> String {
    let half = radix / 2;
    let parameters: Vec<String> = (0..radix).map(|k| format!("inout COMPLEX a{k}")).collect();
    let mut body = String::from("    COMPLEX x0 = a0;\n");
    for k in 1..=half {
        body.push_str(&format!(
            "    COMPLEX s{k} = a{k} + a{other}, d{k} = a{k} - a{other};\n",
            other = radix - k
        ));
    }
    let sums: Vec<String> = (1..=half).map(|k| format!("s{k}")).collect();
    body.push_str(&format!("    a0 = x0 + {};\n", sums.join(" + ")));
    for m in 1..=half {
        let angle = |k: u32| 2.0 * PI * f64::from((m * k) % radix) / f64::from(radix);
        let real: Vec<String> = (1..=half)
            .map(|k| format!("s{k} * {}", literal(precision, angle(k).cos())))
            .collect();
        let imaginary: Vec<String> = (1..=half)
            .map(|k| format!("d{k} * {}", literal(precision, angle(k).sin())))
            .collect();
        body.push_str(&format!(
            "    {{ COMPLEX even = x0 + {}; COMPLEX odd = times_minus_i({});\n      a{m} = even + odd; a{other} = even - odd; }}\n",
            real.join(" + "),
            imaginary.join(" + "),
            other = radix - m
        ));
    }
    format!("void dft{radix}({}) {{\n{body}}}\n", parameters.join(", "))
}

/// One stage of radix `radix` over sub-transforms of `sub_length` (the product of the radices
/// before it): butterfly `j` of a transform (`lane + b threads`, below `length / radix`)
/// reads elements `j + m length / radix`, multiplies them by `W_(sub_length radix)^(m (j %
/// sub_length))` (none in the first stage), transforms them, and after a barrier writes output
/// `q` to `(j / sub_length) sub_length radix + j % sub_length + q sub_length`.
fn stage_glsl(length: u32, threads: u32, sub_length: u32, radix: u32) -> String {
    let span = length / radix;
    let butterflies = span.div_ceil(threads);
    let register = |b: u32, m: u32| format!("v[{}]", b * radix + m);
    let mut reads = String::new();
    let mut writes = String::new();
    for b in 0..butterflies {
        reads.push_str(&format!(
            "        {{ uint j = lane + {offset}u;\n          if (j < {span}u) {{\n",
            offset = b * threads
        ));
        for m in 0..radix {
            reads.push_str(&format!(
                "            {} = get(group_slot, j + {}u);\n",
                register(b, m),
                m * span
            ));
        }
        if sub_length > 1 {
            reads.push_str(&format!(
                "            COMPLEX w1 = stage_twiddle((j % {sub_length}u) * {stride}u);\n{powers}",
                stride = length / (sub_length * radix),
                powers = powers_glsl("w", radix, "            "),
            ));
            for m in 1..radix {
                reads.push_str(&format!(
                    "            {r} = complex_multiply({r}, w{m});\n",
                    r = register(b, m)
                ));
            }
        }
        let arguments: Vec<String> = (0..radix).map(|m| register(b, m)).collect();
        reads.push_str(&format!(
            "            dft{radix}({});\n          }}\n        }}\n",
            arguments.join(", ")
        ));
        writes.push_str(&format!(
            "        {{ uint j = lane + {offset}u;\n          if (j < {span}u) {{\n            uint at = (j / {sub_length}u) * {block}u + j % {sub_length}u;\n",
            offset = b * threads,
            block = sub_length * radix
        ));
        for q in 0..radix {
            writes.push_str(&format!(
                "            put(group_slot, at + {}u, {});\n",
                q * sub_length,
                register(b, q)
            ));
        }
        writes.push_str("          }\n        }\n");
    }
    format!("{reads}        barrier();\n{writes}        barrier();\n")
}

/// The registers a stage needs per invocation, the most over the stages.
fn registers(length: u32, threads: u32) -> u32 {
    mixed_radices(length)
        .into_iter()
        .map(|radix| (length / radix).div_ceil(threads) * radix)
        .max()
        .unwrap_or(1)
}

/// The mixed-radix block kernel (module doc) for `shape`, with tiles of at most `capacity`
/// complex numbers. Addressing, limits, conjugations and the scale are push constants, as in
/// the power-of-two kernel: input positions at or past `input_limit` read as zeros (padding,
/// truncation with a longer row stride), output positions at or past `output_limit` are
/// dropped; a nonzero `hermitian_length` `n` reads positions above `n / 2` as the conjugates of
/// positions `n - k` (irfft's mirrored half). Twiddles come from the table of transforms of
/// `twiddle_step * length`.
pub(crate) fn mixed_block_shader(shape: MixedShape, capacity: u32) -> String {
    let length = shape.length;
    let threads = shape.threads();
    let group = shape.group(capacity);
    let workgroup = group * threads;
    let tile = group * length;
    let columns = shape.columns;
    let walk = |walk: Walk| match walk {
        Walk::AlongElements => (format!("slot / {length}u"), format!("slot % {length}u")),
        Walk::AcrossTransforms => (format!("slot % {group}u"), format!("slot / {group}u")),
    };
    let (load_transform, load_element) = walk(shape.load);
    let (store_transform, store_element) = walk(shape.store);
    let mut stages = String::new();
    let mut sub_length = 1;
    for radix in mixed_radices(length) {
        stages.push_str(&stage_glsl(length, threads, sub_length, radix));
        sub_length *= radix;
    }
    let odd_dfts: String = ODD_RADICES
        .iter()
        .filter(|&&radix| length.is_multiple_of(radix))
        .map(|&radix| odd_dft_glsl(shape.precision, radix))
        .collect();
    let post_twiddle = if shape.post_twiddle {
        "            value = complex_multiply(value, twiddle(push.twiddles, push.log2_fine, column_of(transform) * element));\n"
    } else {
        ""
    };
    format!(
        "{prelude}{reals}{TWIDDLE_GLSL}{SMALL_DFT_GLSL}{odd_dfts}
layout(push_constant, scalar) uniform Push {{
    uint64_t source;
    uint64_t destination;
    uint64_t twiddles;
    uint transforms;
    uint input_limit;
    uint output_limit;
    uint in_outer;
    uint in_column;
    uint in_element;
    uint out_outer;
    uint out_column;
    uint out_element;
    uint twiddle_step;
    uint log2_fine;
    uint conjugate_input;
    uint conjugate_output;
    uint hermitian_length;
    REAL scale;
}} push;

shared REAL tile_real[{tile}];
shared REAL tile_imaginary[{tile}];

uint tile_index(uint tile_transform, uint element) {{ return tile_transform * {length}u + element; }}
{TILE_ACCESS_GLSL}COMPLEX stage_twiddle(uint exponent) {{
    return twiddle(push.twiddles, push.log2_fine, exponent * push.twiddle_step);
}}
uint column_of(uint transform) {{ return transform % {columns}u; }}

// Element `k` of `transform`, read at its position in its row: zero at or past
// `input_limit`, mirrored and conjugated past half a Hermitian row, conjugated for an inverse.
COMPLEX load_element(uint transform, uint k) {{
    uint outer = transform / {columns}u;
    uint position = column_of(transform) * push.in_column + k * push.in_element;
    bool mirrored = push.hermitian_length != 0u && position > push.hermitian_length / 2u;
    uint source_position = mirrored ? push.hermitian_length - position : position;
    COMPLEX value = COMPLEX(REAL(0), REAL(0));
    if (source_position < push.input_limit) {{
        uint64_t element = uint64_t(outer) * uint64_t(push.in_outer) + uint64_t(source_position);
        value = {read};
        if (mirrored) value.y = -value.y;
    }}
    if (push.conjugate_input != 0u) value.y = -value.y;
    return value;
}}

// Stores element `element` of `transform` at its position in its row; positions at or past
// `output_limit` are dropped (truncation).
void store_element(uint transform, uint element, COMPLEX value) {{
    uint outer = transform / {columns}u;
    uint position = column_of(transform) * push.out_column + element * push.out_element;
    if (position >= push.output_limit) return;
    if (push.conjugate_output != 0u) value = conjugate_output(value);
    uint64_t offset = uint64_t(outer) * uint64_t(push.out_outer) + uint64_t(position);
    Complexes(push.destination + offset * COMPLEX_BYTES).v = value * push.scale;
}}

void main() {{
    uint thread = gl_LocalInvocationID.x;
    uint group_slot = thread / {threads}u;
    uint lane = thread % {threads}u;
    uint tiles = (push.transforms + {group}u - 1u) / {group}u;
    for (uint work = gl_WorkGroupID.x; work < tiles; work += gl_NumWorkGroups.x) {{
        uint first_transform = work * {group}u;
        for (uint slot = thread; slot < {tile}u; slot += {workgroup}u) {{
            uint tile_transform = {load_transform};
            uint element = {load_element};
            uint transform = first_transform + tile_transform;
            put(tile_transform, element, transform < push.transforms ? load_element(transform, element) : COMPLEX(REAL(0), REAL(0)));
        }}
        barrier();
        // Registers are indexed by constants only (unrolled here), so that they stay
        // registers.
        COMPLEX v[{registers}];
{stages}        for (uint slot = thread; slot < {tile}u; slot += {workgroup}u) {{
            uint tile_transform = {store_transform};
            uint element = {store_element};
            uint transform = first_transform + tile_transform;
            if (transform >= push.transforms) continue;
            COMPLEX value = get(tile_transform, element);
{post_twiddle}            store_element(transform, element, value);
        }}
        barrier();
    }}
}}
",
        prelude = shape.precision.prelude(workgroup),
        reals = reals_glsl(shape.precision),
        read = shape.input.read_glsl(),
        registers = registers(length, threads),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Radices multiply back to the length, odd ones first.
    #[test]
    fn radices_multiply_to_the_length() {
        for (length, expected) in [
            (3, vec![3]),
            (6, vec![3, 2]),
            (1000, vec![5, 5, 5, 8]),
            (105, vec![7, 5, 3]),
            (3 * 1024, vec![3, 8, 8, 4, 4]),
            (49, vec![7, 7]),
        ] {
            let stages = mixed_radices(length);
            assert_eq!(stages, expected, "{length}");
            assert_eq!(stages.iter().product::<u32>(), length);
        }
    }

    /// The kernel compiles in both precisions for short, odd-only, long, real and four-step
    /// shapes (glslang needs no device).
    #[test]
    fn kernels_compile() {
        for precision in [Precision::Single, Precision::Double] {
            for (length, columns, load, store, post_twiddle, input) in [
                (
                    3,
                    1,
                    Walk::AlongElements,
                    Walk::AlongElements,
                    false,
                    LoadInput::Real,
                ),
                (
                    105,
                    1,
                    Walk::AlongElements,
                    Walk::AlongElements,
                    false,
                    LoadInput::Complex,
                ),
                (
                    1000,
                    1,
                    Walk::AlongElements,
                    Walk::AlongElements,
                    false,
                    LoadInput::Complex,
                ),
                (
                    96,
                    128,
                    Walk::AcrossTransforms,
                    Walk::AcrossTransforms,
                    true,
                    LoadInput::Real,
                ),
                (
                    128,
                    96,
                    Walk::AlongElements,
                    Walk::AcrossTransforms,
                    false,
                    LoadInput::Complex,
                ),
            ] {
                let shape = MixedShape {
                    precision,
                    length,
                    columns,
                    load,
                    store,
                    post_twiddle,
                    input,
                };
                let capacity = 1024;
                let name = shape.kernel_name(capacity);
                nxvk_glsl::compile_compute(&name, &mixed_block_shader(shape, capacity))
                    .unwrap_or_else(|error| panic!("{name}: {error}"));
            }
        }
    }
}
