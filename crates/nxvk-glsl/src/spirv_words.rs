//! Reading and writing SPIR-V words: the instruction stream, literal strings, new
//! instructions. Shared by the module patches (`float_controls`, `fma_contraction`).

/// One instruction: its opcode, and its start and end word.
pub(crate) fn instructions(words: &[u32]) -> impl Iterator<Item = (u16, usize, usize)> + '_ {
    let mut position = 5;
    std::iter::from_fn(move || {
        let word = *words.get(position)?;
        let length = (word >> 16) as usize;
        if length == 0 || position + length > words.len() {
            return None;
        }
        let start = position;
        position += length;
        Some((word as u16, start, position))
    })
}

/// A SPIR-V literal string: UTF-8, nul-terminated, padded to whole little-endian words.
pub(crate) fn literal_string(text: &str) -> Vec<u32> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.resize(text.len() / 4 * 4 + 4, 0);
    bytes
        .chunks_exact(4)
        .map(|chunk| u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

pub(crate) fn instruction(opcode: u16, operands: &[u32]) -> Vec<u32> {
    let mut words = vec![((operands.len() as u32 + 1) << 16) | u32::from(opcode)];
    words.extend_from_slice(operands);
    words
}
