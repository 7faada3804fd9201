//! Prints the op x dtype coverage matrix of the catalog on the selected device: `gpu`,
//! `fallback` (counted host path; `fallback!` when missing from `fallback_allowlist.txt`),
//! `unsupported` (Nx defines it, nxvk cannot run it yet) or `-` (Nx rejects the op there).
//!
//! `--json` prints one JSON object instead; `--strict` exits with [`EXIT_UNLISTED_FALLBACK`]
//! when a fallback cell is not on the allowlist.
//!
//! `cargo run -p nxvk-kernels --example coverage -- [--json] [--strict]`

use nxvk_core::{Context, DType};
use nxvk_kernels::coverage::{Cell, Row, coverage};
use std::process::ExitCode;

/// Exit code when `--strict` finds a fallback cell missing from the allowlist.
const EXIT_UNLISTED_FALLBACK: u8 = 2;
/// Exit code when no device could be opened.
const EXIT_NO_DEVICE: u8 = 3;

fn json(rows: &[Row]) -> String {
    let body: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .cells
                .iter()
                .map(|(dtype, cell)| format!("\"{dtype}\":\"{}\"", cell.label()))
                .collect();
            format!(
                "\"{}\":{{\"arity\":{},\"cells\":{{{}}}}}",
                row.op,
                row.arity,
                cells.join(",")
            )
        })
        .collect();
    let fallbacks = rows
        .iter()
        .flat_map(|row| &row.cells)
        .filter(|(_, cell)| matches!(cell, Cell::Fallback { .. }))
        .count();
    // `fallbacks` is the field nxvk-fleet's coverage job counts.
    format!(
        "{{\"fallbacks\":{fallbacks},\"ops\":{{{}}}}}",
        body.join(",")
    )
}

fn table(rows: &[Row]) -> String {
    let width = rows.iter().map(|row| row.op.len()).max().unwrap_or(0);
    let mut text = format!("{:width$}", "op");
    for dtype in DType::ALL {
        text.push_str(&format!(" {:>11}", dtype.name()));
    }
    text.push('\n');
    for row in rows {
        text.push_str(&format!("{:width$}", row.op));
        for (_, cell) in &row.cells {
            let label = match cell {
                Cell::Fallback { allowlisted: false } => "fallback!",
                other => other.label(),
            };
            text.push_str(&format!(" {label:>11}"));
        }
        text.push('\n');
    }
    text
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let wants = |flag: &str| arguments.iter().any(|argument| argument == flag);
    let device = match Context::new().and_then(|context| context.device()) {
        Ok(device) => device,
        Err(error) => {
            eprintln!("coverage: {error}");
            return ExitCode::from(EXIT_NO_DEVICE);
        }
    };
    let rows = coverage(device.capabilities());
    if wants("--json") {
        println!("{}", json(&rows));
    } else {
        println!("device: {}", device.capabilities().summary());
        print!("{}", table(&rows));
    }
    let unlisted: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            row.cells
                .iter()
                .filter(|(_, cell)| matches!(cell, Cell::Fallback { allowlisted: false }))
                .map(move |(dtype, _)| format!("{} {dtype}", row.op))
        })
        .collect();
    if wants("--strict") && !unlisted.is_empty() {
        eprintln!(
            "fallbacks not on fallback_allowlist.txt: {}",
            unlisted.join(", ")
        );
        return ExitCode::from(EXIT_UNLISTED_FALLBACK);
    }
    ExitCode::SUCCESS
}
