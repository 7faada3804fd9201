//! The gather that makes a convolution an implicit GEMM: the convolution's input, read as the
//! GEMM's B operand straight from the input view, with no im2col buffer.
//!
//! B's element (`depth`, `column`) of group `group` is input channel `depth / R` (plus the
//! group's channel offset) at kernel position `depth % R`, for image `column / P` (plus the
//! group's batch offset) at output position `column % P`, where R and P are the kernel's and
//! the output's spatial sizes. Positions falling in padding, between dilated input elements,
//! or outside the input read zero.
//!
//! Policy: the geometry is baked into the kernel as constants, one kernel per convolution
//! geometry (content-addressed, so a model's few geometries cost a few compiles). Every
//! division and remainder above is then by a constant, which compilers turn into a multiply
//! and shift; read from a parameter block at run time, they were integer divisions per
//! element and the gather cost more than the products (conv ran at a fifth of the GEMM's
//! rate on the H200). The column half of the decode (image, output coordinates) is computed
//! once per task when each invocation stages the same column at every step, which holds
//! whenever the workgroup's invocation count is a multiple of the tile's width.

use std::fmt::Write as _;

use crate::codegen::storage_bytes;
use crate::op_table::Elem;

/// One spatial axis of a convolution's gather.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatherAxis {
    pub output_size: u32,
    pub kernel_size: u32,
    pub stride: u32,
    pub kernel_dilation: u32,
    pub input_dilation: u32,
    /// Negative values crop.
    pub low_padding: i32,
    pub input_size: u32,
    /// Element stride of the input along this axis.
    pub input_stride: u32,
}

/// A convolution's input geometry as the GEMM's B operand. Strides are element strides of
/// the input view (any layout: permuted inputs never move).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvolutionGather {
    /// R: kernel positions (product of the kernel's spatial sizes).
    pub kernel_positions: u32,
    /// P: output positions per image.
    pub output_positions: u32,
    /// Input channels per feature group (0 without feature groups).
    pub group_channel_offset: u32,
    /// Output images per batch group (0 without batch groups).
    pub group_batch_offset: u32,
    pub input_batch_stride: u32,
    pub input_channel_stride: u32,
    pub axes: Vec<GatherAxis>,
}

impl ConvolutionGather {
    /// GLSL: `ConvolutionColumn convolution_column(group, column)` (the column's input offset
    /// and per-axis window origins), `ACC load_convolution_input(column, depth)` and
    /// `convolution_output_row(task, group, row)` + `convolution_output_column(column)` (where
    /// C's element goes). Needs
    /// `ACC`, `load_element` and the push block from the GEMM template.
    pub(crate) fn functions(&self, input: Elem) -> String {
        let rank = self.axes.len().max(1);
        let mut column_decode = String::new();
        let mut depth_decode = String::new();
        for (axis, geometry) in self.axes.iter().enumerate().rev() {
            let GatherAxis {
                output_size,
                kernel_size,
                stride,
                kernel_dilation,
                input_dilation,
                low_padding,
                input_size,
                input_stride,
            } = geometry;
            let _ = write!(
                column_decode,
                "
    column.origin[{axis}] = int((rest % {output_size}u) * {stride}u) - ({low_padding});
    rest /= {output_size}u;"
            );
            // Between dilated input elements there is nothing to read (Nx's zeros).
            let undilate = if *input_dilation > 1 {
                format!(
                    "
        if (uint(padded) % {input_dilation}u != 0u) return ACC(0);
        uint coordinate = uint(padded) / {input_dilation}u;"
                )
            } else {
                "
        uint coordinate = uint(padded);"
                    .to_owned()
            };
            let _ = write!(
                depth_decode,
                "
    {{
        int padded = column.origin[{axis}] + int((rest % {kernel_size}u) * {kernel_dilation}u);
        rest /= {kernel_size}u;
        if (padded < 0) return ACC(0);{undilate}
        if (coordinate >= {input_size}u) return ACC(0);
        offset += uint64_t(coordinate) * {input_stride}ul;
    }}"
            );
        }
        format!(
            "struct ConvolutionColumn {{ uint64_t offset; int origin[{rank}]; }};
ConvolutionColumn convolution_column(uint group, uint column_index) {{
    ConvolutionColumn column;
    uint image = column_index / {positions}u;
    uint rest = column_index % {positions}u;
    column.offset = uint64_t(image + group * {batch_offset}u) * {batch_stride}ul
        + uint64_t(group * {channel_offset}u) * {channel_stride}ul;{column_decode}
    return column;
}}
// Where C's element (row, column_index) of group `group` in task `task` goes, in elements from
// `push.c`, as a row part plus a column part: with one split, straight into the
// convolution's output layout [image][group][filter][position] (no copy afterwards); with
// split-K, into the partial sums' [task][row][column], which the host sums and moves.
uint64_t convolution_output_row(uint task, uint group, uint row) {{
    if (push.splits == 1u) return (uint64_t(group) * uint64_t(push.m) + uint64_t(row)) * {positions}ul;
    return (uint64_t(task) * uint64_t(push.m) + uint64_t(row)) * uint64_t(push.n);
}}
uint64_t convolution_output_column(uint column_index) {{
    if (push.splits == 1u) {{
        uint64_t image = uint64_t(column_index / {positions}u);
        return image * uint64_t(push.batches) * uint64_t(push.m) * {positions}ul
            + uint64_t(column_index % {positions}u);
    }}
    return uint64_t(column_index);
}}
ACC load_convolution_input(ConvolutionColumn column, uint depth) {{
    uint channel = depth / {kernel_positions}u;
    uint rest = depth % {kernel_positions}u;
    uint64_t offset = column.offset + uint64_t(channel) * {channel_stride}ul;{depth_decode}
    return load_element(push.b + offset * {bytes}ul);
}}
",
            positions = self.output_positions,
            batch_offset = self.group_batch_offset,
            batch_stride = self.input_batch_stride,
            channel_offset = self.group_channel_offset,
            channel_stride = self.input_channel_stride,
            kernel_positions = self.kernel_positions,
            bytes = storage_bytes(input),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gather(input_dilation: u32) -> ConvolutionGather {
        ConvolutionGather {
            kernel_positions: 9,
            output_positions: 3136,
            group_channel_offset: 0,
            group_batch_offset: 0,
            input_batch_stride: 200_704,
            input_channel_stride: 3136,
            axes: (0..2)
                .map(|axis| GatherAxis {
                    output_size: 56,
                    kernel_size: 3,
                    stride: 1,
                    kernel_dilation: 1,
                    input_dilation,
                    low_padding: -1 + axis,
                    input_size: 56,
                    input_stride: [56, 1][axis as usize],
                })
                .collect(),
        }
    }

    #[test]
    fn geometry_is_baked_in_as_constants() {
        let glsl = gather(1).functions(Elem::F32);
        // No run-time geometry: every divisor is a literal.
        assert!(!glsl.contains("p.v["));
        assert!(glsl.contains("column_index / 3136u"));
        assert!(glsl.contains("depth / 9u"));
        assert!(
            glsl.contains("- (-1)"),
            "negative padding keeps its sign: {glsl}"
        );
        // Undilated inputs skip the divisibility test; dilated ones keep it (null arm).
        assert!(!glsl.contains("% 1u != 0u"));
        assert!(gather(2).functions(Elem::F32).contains("% 2u != 0u"));
    }
}
