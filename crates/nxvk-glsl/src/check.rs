//! A structural check of SPIR-V modules before they are cached or handed to a driver.
//!
//! The glslang crate ships no validator, and Debian's `spirv-val` is too old for the
//! cooperative-matrix capabilities, so this walks the instruction stream itself: a driver fed a
//! truncated or garbled module may crash rather than fail. It is not a full validator; the
//! driver's `vkCreateShaderModule` and vulkano's parse are the second line.

use crate::GlslError;

const MAGIC: u32 = 0x0723_0203;
const OP_CAPABILITY: u16 = 17;
const CAPABILITY_FLOAT64: u32 = 10;
const OP_DECORATE: u16 = 71;
const DECORATION_SPEC_ID: u32 = 1;
pub(crate) const OP_ENTRY_POINT: u16 = 15;
pub(crate) const OP_EXECUTION_MODE: u16 = 16;
pub(crate) const OP_EXECUTION_MODE_ID: u16 = 331;
const OP_FUNCTION_END: u16 = 56;
const EXECUTION_MODEL_GL_COMPUTE: u32 = 5;
const EXECUTION_MODE_LOCAL_SIZE: u32 = 17;
const EXECUTION_MODE_LOCAL_SIZE_ID: u32 = 38;

/// What the check learned about a well-formed compute module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    /// SPIR-V version as (major, minor).
    pub version: (u8, u8),
    /// The compute entry point's workgroup size, when given as literals.
    pub local_size: Option<[u32; 3]>,
    /// Whether the module declares the Float64 capability (which needs shaderFloat64).
    pub float64: bool,
    /// Every capability the module declares, by its SPIR-V number, in module order.
    pub capabilities: Vec<u32>,
    /// The `constant_id`s of its specialization constants, in module order.
    pub specialization_ids: Vec<u32>,
}

/// Checks that `words` is a complete SPIR-V module with one GLCompute entry point named `main`
/// and a workgroup size, that every instruction's word count stays inside the module, and that
/// the module ends with `OpFunctionEnd` (so a module cut at an instruction boundary fails too).
pub fn check_module(name: &str, words: &[u32]) -> Result<ModuleInfo, GlslError> {
    let malformed = |problem: String| GlslError::Malformed {
        name: name.to_owned(),
        problem,
    };
    if words.len() < 5 {
        return Err(malformed(format!(
            "{} words, shorter than the header",
            words.len()
        )));
    }
    if words[0] != MAGIC {
        return Err(malformed(format!("magic number {:#010x}", words[0])));
    }
    let version = ((words[1] >> 16) as u8, (words[1] >> 8) as u8);
    if version.0 != 1 || version.1 > 6 {
        return Err(malformed(format!(
            "unknown SPIR-V version {}.{}",
            version.0, version.1
        )));
    }
    if words[3] == 0 {
        return Err(malformed("id bound is zero".into()));
    }
    let mut compute_entry = None;
    let mut local_size = None;
    let mut has_local_size_id = false;
    let mut capabilities = Vec::new();
    let mut specialization_ids = Vec::new();
    let mut last_opcode = 0;
    let mut position = 5;
    while position < words.len() {
        let word_count = (words[position] >> 16) as usize;
        let opcode = words[position] as u16;
        if word_count == 0 || position + word_count > words.len() {
            return Err(malformed(format!(
                "instruction at word {position} (opcode {opcode}) has word count {word_count}"
            )));
        }
        let operands = &words[position + 1..position + word_count];
        match opcode {
            OP_CAPABILITY => capabilities.extend(operands.first()),
            OP_DECORATE if operands.get(1) == Some(&DECORATION_SPEC_ID) => {
                specialization_ids.extend(operands.get(2));
            }
            OP_ENTRY_POINT if operands.first() == Some(&EXECUTION_MODEL_GL_COMPUTE) => {
                let entry_name = operands.get(2..).map(literal_string).unwrap_or_default();
                if entry_name == "main" {
                    compute_entry = operands.get(1).copied();
                }
            }
            OP_EXECUTION_MODE
                if operands.get(1) == Some(&EXECUTION_MODE_LOCAL_SIZE)
                    && operands.len() == 5
                    && Some(operands[0]) == compute_entry =>
            {
                local_size = Some([operands[2], operands[3], operands[4]]);
            }
            OP_EXECUTION_MODE_ID if operands.get(1) == Some(&EXECUTION_MODE_LOCAL_SIZE_ID) => {
                has_local_size_id = true;
            }
            _ => {}
        }
        last_opcode = opcode;
        position += word_count;
    }
    if last_opcode != OP_FUNCTION_END {
        return Err(malformed(
            "the module does not end with a complete function".into(),
        ));
    }
    if compute_entry.is_none() {
        return Err(malformed("no GLCompute entry point named `main`".into()));
    }
    if local_size.is_none() && !has_local_size_id {
        return Err(malformed(
            "the entry point declares no workgroup size".into(),
        ));
    }
    Ok(ModuleInfo {
        version,
        local_size,
        float64: capabilities.contains(&CAPABILITY_FLOAT64),
        capabilities,
        specialization_ids,
    })
}

/// Decodes a nul-terminated SPIR-V literal string (UTF-8 packed little-endian into words).
fn literal_string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words
        .iter()
        .flat_map(|word| word.to_le_bytes())
        .take_while(|&byte| byte != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile_compute;

    const COPY_BODY: &str = "layout(local_size_x = 64) in;
layout(buffer_reference, scalar) buffer Floats { float values[]; };
layout(push_constant, scalar) uniform Push { Floats source; Floats target; uint count; } push;
void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index < push.count) push.target.values[index] = push.source.values[index];
}
";

    #[test]
    fn a_compiled_shader_passes_with_its_workgroup_size() {
        let (_, info) = compile_compute("copy", COPY_BODY).unwrap();
        assert_eq!(info.local_size, Some([64, 1, 1]));
        assert_eq!(info.version, (1, 5));
        assert!(!info.float64);
    }

    #[test]
    fn a_shader_computing_in_f64_declares_float64() {
        let body = COPY_BODY.replace("float", "double");
        let (_, info) = compile_compute("copy_f64", &body).unwrap();
        assert!(info.float64, "{body}");
    }

    #[test]
    fn specialization_ids_are_listed() {
        let body = COPY_BODY.replace(
            "void main() {",
            "layout(constant_id = 7) const bool FLAG = false;\nlayout(constant_id = 3) const uint WIDTH = 1u;\nvoid main() {\n    if (FLAG && WIDTH > 2u) return;",
        );
        let (_, info) = compile_compute("spec", &body).unwrap();
        let mut ids = info.specialization_ids.clone();
        ids.sort_unstable();
        assert_eq!(ids, [3, 7], "{body}");
        // Null arm: the plain shader declares none.
        let (_, plain) = compile_compute("copy", COPY_BODY).unwrap();
        assert!(plain.specialization_ids.is_empty());
        assert!(plain.capabilities.contains(&1), "Shader capability");
    }

    #[test]
    fn truncated_and_garbled_modules_are_rejected() {
        let (words, _) = compile_compute("copy", COPY_BODY).unwrap();
        // Null arm: cutting the module mid-instruction must fail the check.
        let truncated = &words[..words.len() - 1];
        assert!(matches!(
            check_module("t", truncated),
            Err(GlslError::Malformed { .. })
        ));
        let mut bad_magic = words.clone();
        bad_magic[0] ^= 1;
        assert!(check_module("m", &bad_magic).is_err());
        let mut zero_count = words.clone();
        zero_count[5] &= 0xffff;
        assert!(check_module("z", &zero_count).is_err());
        assert!(check_module("short", &words[..3]).is_err());
    }

    #[test]
    fn a_syntax_error_names_the_shader_and_line() {
        let error = compile_compute(
            "broken",
            "layout(local_size_x = 1) in;\nvoid main() { nope; }\n",
        )
        .unwrap_err();
        let message = error.to_string();
        assert!(message.contains("broken"), "{message}");
        assert!(message.contains("nope"), "{message}");
    }
}
