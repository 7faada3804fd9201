//! Marking every `fma()` exact: a SPIR-V patch applied to every compiled module.
//!
//! GLSL promises that `fma(a, b, c)` in a `precise` computation is one operation, but glslang
//! decorates only the arithmetic operators of a `precise` expression with NoContraction, not
//! the GLSL.std.450 `Fma` it calls. Without the decoration a driver may split the fma into a
//! multiply and an add: lavapipe (Mesa 22) did, which broke the exact remainders that the f32
//! division (`nx_div`) and the compensated transcendentals are built on. Every kernel wants
//! its fmas fused (GEMM accumulation only gets more accurate), so the compiler decorates all
//! of them, once, before the module leaves this crate.

use crate::spirv_words::{instruction, instructions, literal_string};

const OP_EXT_INST_IMPORT: u16 = 11;
const OP_EXT_INST: u16 = 12;
const OP_DECORATE: u16 = 71;
const DECORATION_NO_CONTRACTION: u32 = 42;
const GLSL_STD_450_FMA: u32 = 50;

/// The annotation section's instructions (decorations).
fn is_annotation(opcode: u16) -> bool {
    matches!(opcode, 71..=75 | 332 | 5632 | 5633)
}

/// The instructions of the sections before the annotations: capabilities, extensions,
/// imports, the memory model, entry points, execution modes and debug information.
fn precedes_annotations(opcode: u16) -> bool {
    matches!(opcode, 2..=8 | 10 | 11 | 14..=17 | 330 | 331)
}

/// `words` (a module as glslang wrote it) with `OpDecorate NoContraction` on the result of
/// every GLSL.std.450 `Fma` that lacks it. A module without fmas comes back unchanged.
pub(crate) fn decorate_fma_no_contraction(words: &[u32]) -> Vec<u32> {
    let glsl_std_450 = literal_string("GLSL.std.450");
    let mut import = None;
    let mut fma_results = Vec::new();
    let mut decorated = Vec::new();
    // New decorations go after the last annotation, else where the annotations would begin.
    let mut preamble_end = None;
    let mut annotations_end = None;
    let mut in_preamble = true;
    for (opcode, start, end) in instructions(words) {
        match opcode {
            OP_EXT_INST_IMPORT if words[start + 2..end] == glsl_std_450 => {
                import = Some(words[start + 1]);
            }
            OP_EXT_INST
                if Some(words[start + 3]) == import && words[start + 4] == GLSL_STD_450_FMA =>
            {
                fma_results.push(words[start + 2]);
            }
            OP_DECORATE if words.get(start + 2) == Some(&DECORATION_NO_CONTRACTION) => {
                decorated.push(words[start + 1]);
            }
            _ => {}
        }
        if is_annotation(opcode) {
            annotations_end = Some(end);
        }
        in_preamble &= precedes_annotations(opcode);
        if in_preamble {
            preamble_end = Some(end);
        }
    }
    let decorations: Vec<u32> = fma_results
        .iter()
        .filter(|result| !decorated.contains(result))
        .flat_map(|&result| instruction(OP_DECORATE, &[result, DECORATION_NO_CONTRACTION]))
        .collect();
    let Some(position) = annotations_end.or(preamble_end) else {
        return words.to_vec();
    };
    if decorations.is_empty() {
        return words.to_vec();
    }
    let mut patched = Vec::with_capacity(words.len() + decorations.len());
    patched.extend_from_slice(&words[..position]);
    patched.extend(decorations);
    patched.extend_from_slice(&words[position..]);
    patched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_module, compile_compute};

    /// The result ids decorated NoContraction and the result ids of Fma instructions.
    fn no_contraction_and_fmas(words: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let mut decorated = Vec::new();
        let mut fmas = Vec::new();
        for (opcode, start, _) in instructions(words) {
            if opcode == OP_DECORATE && words[start + 2] == DECORATION_NO_CONTRACTION {
                decorated.push(words[start + 1]);
            }
            if opcode == OP_EXT_INST && words[start + 4] == GLSL_STD_450_FMA {
                fmas.push(words[start + 2]);
            }
        }
        (decorated, fmas)
    }

    const SHADER: &str = "layout(local_size_x = 1) in;
layout(buffer_reference, scalar) buffer B { float v[]; };
layout(push_constant) uniform P { B b; } p;
void main() {
    precise float r = fma(p.b.v[0], p.b.v[1], p.b.v[2]);
    float s = fma(r, p.b.v[3], 1.0);
    precise float t = s * p.b.v[4];
    p.b.v[5] = t;
}
";

    #[test]
    fn every_fma_of_a_compiled_module_is_decorated_once() {
        let (words, _) = compile_compute("fma", SHADER).unwrap();
        let (decorated, fmas) = no_contraction_and_fmas(&words);
        assert_eq!(fmas.len(), 2);
        assert!(fmas.iter().all(|fma| decorated.contains(fma)));
        // Decorating again adds nothing.
        assert_eq!(decorate_fma_no_contraction(&words), words);
    }

    #[test]
    fn glslang_alone_leaves_the_fmas_undecorated() {
        // Null arm: the module before the patch, as glslang writes it, has undecorated fmas
        // (the patch would be dead code otherwise), and the patch is what decorates them.
        let raw = crate::compile::glslang_words("fma", SHADER).unwrap();
        let (decorated, fmas) = no_contraction_and_fmas(&raw);
        assert!(fmas.iter().all(|fma| !decorated.contains(fma)));
        let patched = decorate_fma_no_contraction(&raw);
        check_module("fma", &patched).unwrap();
        let (decorated, fmas) = no_contraction_and_fmas(&patched);
        assert!(fmas.iter().all(|fma| decorated.contains(fma)));
        assert_eq!(patched.len(), raw.len() + 3 * fmas.len());
    }

    #[test]
    fn a_module_without_fmas_is_unchanged() {
        let (words, _) =
            compile_compute("plain", "layout(local_size_x = 1) in;\nvoid main() {}\n").unwrap();
        assert_eq!(decorate_fma_no_contraction(&words), words);
    }
}
