//! The tiled GEMM's register block written out for 8-byte accumulators (f64, s64, u64):
//! the same interleaved block as the template's loops (`dot_codegen.rs`: output (i, j) of an
//! invocation at row `block_m + i * tile_m / thread_m`, column `block_n + j * tile_n /
//! thread_n`), but every accumulator, operand value and address part a named variable and the
//! loops over the block unrolled here, so no driver has to unroll them to keep the block in
//! registers.
//!
//! Why only for 8-byte accumulators (docs/BENCHMARKS.md, tenth session, H200): with the
//! template's loops, blocks of 32 or more doubles spilled (dgemm 4096 at 1.0-1.1 TFLOP/s), so
//! f64 was held to 4x4 blocks (dgemm 8192: 15.3 TFLOP/s); written out, 8x8 blocks run
//! (17.5 at 4096) and dgemm 8192 reaches 18.1. For f32 the written-out block ran slower than
//! the loops (sgemm 8192: 33.2 against 37.9), so 4-byte accumulators keep them.

use crate::dot_codegen::TileConfig;
use std::fmt::Write as _;

/// The register block of one configuration, for accumulators of GLSL type `accumulator`.
pub(crate) struct RegisterBlock {
    thread_m: u32,
    thread_n: u32,
    /// Invocations along M and N: an invocation's rows (columns) are this far apart.
    threads_m: u32,
    threads_n: u32,
    accumulator: &'static str,
}

impl RegisterBlock {
    pub(crate) fn new(config: TileConfig, accumulator: &'static str) -> RegisterBlock {
        RegisterBlock {
            thread_m: config.thread_m,
            thread_n: config.thread_n,
            threads_m: config.tile_m / config.thread_m,
            threads_n: config.tile_n / config.thread_n,
            accumulator,
        }
    }

    /// Statements declaring every accumulator `s<i>_<j>` as zero.
    pub(crate) fn zero_accumulators(&self) -> String {
        let mut text = String::new();
        let accumulator = self.accumulator;
        for i in 0..self.thread_m {
            for j in 0..self.thread_n {
                let _ = writeln!(text, "        {accumulator} s{i}_{j} = {accumulator}(0);");
            }
        }
        text
    }

    /// One K index `kk` of the product: the invocation's values of A and B read from shared
    /// memory, then every accumulator updated by `multiply_add` (a GLSL expression of
    /// `a_value`, `b_value` and `sum`).
    pub(crate) fn product_step(&self, multiply_add: &str) -> String {
        let mut text = String::new();
        let accumulator = self.accumulator;
        for i in 0..self.thread_m {
            let row = i * self.threads_m;
            let _ = writeln!(
                text,
                "                {accumulator} a{i} = a_tile[kk][block_m + {row}u];"
            );
        }
        for j in 0..self.thread_n {
            let column = j * self.threads_n;
            let _ = writeln!(
                text,
                "                {accumulator} b{j} = b_tile[kk][block_n + {column}u];"
            );
        }
        for i in 0..self.thread_m {
            for j in 0..self.thread_n {
                let sum = format!("s{i}_{j}");
                let update = multiply_add
                    .replace("a_value", &format!("a{i}"))
                    .replace("b_value", &format!("b{j}"))
                    .replace("sum", &sum);
                let _ = writeln!(text, "                {sum} = {update};");
            }
        }
        text
    }

    /// The store of every output in range. `row_part` and `column_part` are GLSL expressions
    /// of `row` and `COLUMN` whose sum is the element offset of C's element; `stored` is the
    /// value stored for accumulator `SUM` at (`row`, `COLUMN`); each output's names replace
    /// `SUM` and `COLUMN`, and `output_bytes` is the size of C's elements.
    pub(crate) fn store(
        &self,
        row_part: &str,
        column_part: &str,
        stored: &str,
        output_bytes: u32,
    ) -> String {
        let mut text = String::new();
        for j in 0..self.thread_n {
            let offset = j * self.threads_n;
            let part = column_part.replace("COLUMN", &format!("column{j}"));
            let _ = writeln!(
                text,
                "        uint column{j} = tile_n0 + block_n + {offset}u;
        uint64_t column_part{j} = {part};"
            );
        }
        for i in 0..self.thread_m {
            let offset = i * self.threads_m;
            let _ = writeln!(
                text,
                "        {{
            uint row = tile_m0 + block_m + {offset}u;
            if (row < push.m) {{
                uint64_t row_part = {row_part};"
            );
            for j in 0..self.thread_n {
                let value = stored
                    .replace("SUM", &format!("s{i}_{j}"))
                    .replace("COLUMN", &format!("column{j}"));
                let _ = writeln!(
                    text,
                    "                if (column{j} < push.n) Output(push.c + (row_part + column_part{j}) * {output_bytes}ul).v = {value};"
                );
            }
            let _ = writeln!(text, "            }}\n        }}");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> RegisterBlock {
        let config = TileConfig {
            tile_m: 128,
            tile_n: 64,
            tile_k: 8,
            thread_m: 8,
            thread_n: 4,
        };
        RegisterBlock::new(config, "double")
    }

    /// The written-out block owns the template loops' outputs: rows `tile_m / thread_m`
    /// apart, columns `tile_n / thread_n` apart.
    #[test]
    fn the_block_is_the_interleaved_one() {
        let product = block().product_step("fma(a_value, b_value, sum)");
        assert!(
            product.contains("double a7 = a_tile[kk][block_m + 112u];"),
            "{product}"
        );
        assert!(
            product.contains("double b3 = b_tile[kk][block_n + 48u];"),
            "{product}"
        );
        assert!(product.contains("s7_3 = fma(a7, b3, s7_3);"), "{product}");
        assert_eq!(product.matches("= fma(").count(), 32);
        let store = block().store("ROW_PART", "uint64_t(COLUMN)", "SUM", 8);
        assert!(
            store.contains("uint row = tile_m0 + block_m + 112u;"),
            "{store}"
        );
        assert!(
            store.contains("uint64_t column_part3 = uint64_t(column3);"),
            "{store}"
        );
        assert!(store.contains(".v = s7_3;"), "{store}");
        assert_eq!(store.matches("Output(").count(), 32);
        assert_eq!(
            block().zero_accumulators().matches("= double(0);").count(),
            32
        );
    }
}
