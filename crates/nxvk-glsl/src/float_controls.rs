//! Requesting denormal preservation in a compiled module: a SPIR-V patch applied per device.
//!
//! Vulkan lets a driver flush subnormal floats to zero unless the kernel declares the
//! `DenormPreserve` execution mode (SPV_KHR_float_controls, core in SPIR-V 1.4 / Vulkan 1.2),
//! and NVIDIA's driver does flush f32 subnormals. The mode may only be declared where the
//! device reports `shaderDenormPreserveFloat32` (lavapipe does not), so it cannot live in the
//! GLSL the catalog compiles once for every device, as SignedZeroInfNanPreserve does
//! (`spirv_execution_mode` in the shaders). Instead the device adds it to each module it
//! builds: the capability after the module's capabilities, the extension where the module's
//! SPIR-V version predates 1.4, and one `OpExecutionMode` per requested width after the entry
//! point's execution modes.

use crate::GlslError;
use crate::check::{OP_ENTRY_POINT, OP_EXECUTION_MODE, OP_EXECUTION_MODE_ID};
use crate::spirv_words::{instruction, instructions, literal_string};

const OP_EXTENSION: u16 = 10;
const OP_CAPABILITY: u16 = 17;
const CAPABILITY_DENORM_PRESERVE: u32 = 4464;
const EXECUTION_MODE_DENORM_PRESERVE: u32 = 4459;
const EXECUTION_MODE_DENORM_FLUSH_TO_ZERO: u32 = 4460;
const FLOAT_CONTROLS_EXTENSION: &str = "SPV_KHR_float_controls";

/// `words` (a module that passed [`check_module`](crate::check_module)) with the
/// `DenormPreserve` execution mode declared on its entry point for each of `widths` (16, 32,
/// 64). Widths the module already sets a denormal mode for are left as they are, so patching
/// twice changes nothing.
pub fn request_denorm_preserve(
    name: &str,
    words: &[u32],
    widths: &[u32],
) -> Result<Vec<u32>, GlslError> {
    let malformed = |problem: &str| GlslError::Malformed {
        name: name.to_owned(),
        problem: problem.to_owned(),
    };
    let mut last_capability = None;
    let mut has_capability = false;
    let mut has_extension = false;
    let mut entry_point = None;
    let mut modes_end = None;
    let mut declared_widths = Vec::new();
    for (opcode, start, end) in instructions(words) {
        match opcode {
            OP_CAPABILITY => {
                last_capability = Some(end);
                has_capability |= words.get(start + 1) == Some(&CAPABILITY_DENORM_PRESERVE);
            }
            OP_EXTENSION => {
                has_extension |= words[start + 1..end] == literal_string(FLOAT_CONTROLS_EXTENSION)
            }
            OP_ENTRY_POINT => {
                entry_point = entry_point.or(words.get(start + 2).copied());
                modes_end = Some(end);
            }
            OP_EXECUTION_MODE | OP_EXECUTION_MODE_ID => {
                modes_end = Some(end);
                let mode = words.get(start + 2).copied();
                let denormal_mode = mode == Some(EXECUTION_MODE_DENORM_PRESERVE)
                    || mode == Some(EXECUTION_MODE_DENORM_FLUSH_TO_ZERO);
                if denormal_mode && let Some(&width) = words.get(start + 3) {
                    declared_widths.push(width);
                }
            }
            _ => {}
        }
    }
    let (Some(capabilities_end), Some(entry_point), Some(modes_end)) =
        (last_capability, entry_point, modes_end)
    else {
        return Err(malformed(
            "no capability or entry point to declare DenormPreserve after",
        ));
    };
    let modes: Vec<u32> = widths
        .iter()
        .filter(|width| !declared_widths.contains(width))
        .flat_map(|&width| {
            instruction(
                OP_EXECUTION_MODE,
                &[entry_point, EXECUTION_MODE_DENORM_PRESERVE, width],
            )
        })
        .collect();
    if modes.is_empty() {
        return Ok(words.to_vec());
    }
    let mut header_additions = Vec::new();
    if !has_capability {
        header_additions.extend(instruction(OP_CAPABILITY, &[CAPABILITY_DENORM_PRESERVE]));
    }
    let before_1_4 = (words[1] >> 8) & 0xFFFF < 0x0104;
    if before_1_4 && !has_extension {
        header_additions.extend(instruction(
            OP_EXTENSION,
            &literal_string(FLOAT_CONTROLS_EXTENSION),
        ));
    }
    let mut patched = Vec::with_capacity(words.len() + header_additions.len() + modes.len());
    patched.extend_from_slice(&words[..capabilities_end]);
    patched.extend(header_additions);
    patched.extend_from_slice(&words[capabilities_end..modes_end]);
    patched.extend(modes);
    patched.extend_from_slice(&words[modes_end..]);
    Ok(patched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check_module, compile_compute};

    fn denorm_modes(words: &[u32]) -> Vec<u32> {
        instructions(words)
            .filter(|&(opcode, start, _)| {
                opcode == OP_EXECUTION_MODE && words[start + 2] == EXECUTION_MODE_DENORM_PRESERVE
            })
            .map(|(_, start, _)| words[start + 3])
            .collect()
    }

    fn capabilities(words: &[u32]) -> Vec<u32> {
        instructions(words)
            .filter(|&(opcode, _, _)| opcode == OP_CAPABILITY)
            .map(|(_, start, _)| words[start + 1])
            .collect()
    }

    #[test]
    fn declares_the_mode_once_per_width_and_stays_well_formed() {
        let (words, _) = compile_compute(
            "denorm",
            "layout(local_size_x = 1) in;\nlayout(buffer_reference) buffer B { float v; };\nlayout(push_constant) uniform P { B b; } p;\nvoid main() { p.b.v = p.b.v * 0.5; }\n",
        )
        .unwrap();
        // Null arm: the compiled module asks for nothing.
        assert!(denorm_modes(&words).is_empty());
        assert!(!capabilities(&words).contains(&CAPABILITY_DENORM_PRESERVE));

        let patched = request_denorm_preserve("denorm", &words, &[32]).unwrap();
        check_module("denorm", &patched).unwrap();
        assert_eq!(denorm_modes(&patched), [32]);
        let declared = capabilities(&patched);
        assert_eq!(
            declared
                .iter()
                .filter(|&&capability| capability == CAPABILITY_DENORM_PRESERVE)
                .count(),
            1
        );
        assert_eq!(patched.len(), words.len() + 2 + 4);
        // Patching again, or for more widths, never duplicates a width or the capability.
        let again = request_denorm_preserve("denorm", &patched, &[16, 32, 64]).unwrap();
        check_module("denorm", &again).unwrap();
        assert_eq!(denorm_modes(&again), [32, 16, 64]);
        assert_eq!(again.len(), patched.len() + 8);
        assert_eq!(
            request_denorm_preserve("denorm", &again, &[32]).unwrap(),
            again
        );
        assert_eq!(
            request_denorm_preserve("denorm", &words, &[]).unwrap(),
            words
        );
        assert!(request_denorm_preserve("denorm", &words[..5], &[32]).is_err());
    }

    #[test]
    fn a_pre_1_4_module_gets_the_extension() {
        let (mut words, _) =
            compile_compute("old", "layout(local_size_x = 1) in;\nvoid main() {}\n").unwrap();
        words[1] = 0x0001_0300;
        let patched = request_denorm_preserve("old", &words, &[32]).unwrap();
        let extension = instruction(OP_EXTENSION, &literal_string(FLOAT_CONTROLS_EXTENSION));
        assert!(
            patched
                .windows(extension.len())
                .any(|window| window == extension.as_slice())
        );
        check_module("old", &patched).unwrap();
    }
}
