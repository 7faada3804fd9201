//! Tensors: a device buffer shared by views, a layout and a dtype.
//!
//! Views (reshape, squeeze, broadcast, transpose, unit-step slice) share the buffer and change
//! only the layout. Upload writes a contiguous tensor; read-back of a strided view downloads
//! the span it covers and gathers on the host (the catalog's copy kernel materialises views on
//! the device when that is cheaper).

use crate::device::{Device, DeviceBuffer};
use crate::{DType, Element, Error, Layout, Result};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Tensor {
    buffer: Arc<DeviceBuffer>,
    layout: Layout,
    dtype: DType,
}

impl Tensor {
    /// A contiguous tensor with undefined contents.
    pub fn empty(device: &Arc<Device>, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let bytes = storage_bytes("empty", dtype, shape)?;
        let buffer = device.alloc("empty", bytes)?;
        Ok(Tensor {
            buffer: Arc::new(buffer),
            layout: Layout::contiguous(shape),
            dtype,
        })
    }

    /// A contiguous tensor filled with zero bits.
    pub fn zeros(device: &Arc<Device>, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let tensor = Tensor::empty(device, dtype, shape)?;
        device.fill(&tensor.buffer, 0)?;
        Ok(tensor)
    }

    /// A tensor from host bytes in Nx's binary layout for `dtype` (row-major).
    pub fn from_bytes(
        device: &Arc<Device>,
        dtype: DType,
        shape: &[usize],
        bytes: &[u8],
    ) -> Result<Tensor> {
        let expected = storage_bytes("from_bytes", dtype, shape)?;
        if bytes.len() as u64 != expected {
            return Err(Error::ByteLength {
                op: "from_bytes",
                dtype,
                shape: shape.to_vec(),
                expected,
                actual: bytes.len() as u64,
            });
        }
        let tensor = Tensor::empty(device, dtype, shape)?;
        device.upload(&tensor.buffer, 0, bytes)?;
        Ok(tensor)
    }

    /// A tensor from typed host data.
    pub fn from_slice<T: Element>(
        device: &Arc<Device>,
        shape: &[usize],
        data: &[T],
    ) -> Result<Tensor> {
        // SAFETY: `Element` types are plain numbers without padding, so their memory is
        // exactly their little-endian bytes on the little-endian hosts nxvk supports.
        let bytes = unsafe {
            std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
        };
        Tensor::from_bytes(device, T::DTYPE, shape, bytes)
    }

    /// A tensor over an existing buffer with a given layout.
    pub fn from_parts(buffer: Arc<DeviceBuffer>, layout: Layout, dtype: DType) -> Result<Tensor> {
        let span = layout.element_span();
        if dtype.storage_bytes(span.end as u64) > buffer.size() {
            return Err(Error::InvalidView {
                op: "from_parts",
                shape: layout.shape().to_vec(),
                detail: format!(
                    "elements up to {} do not fit a {}-byte buffer",
                    span.end,
                    buffer.size()
                ),
            });
        }
        Ok(Tensor {
            buffer,
            layout,
            dtype,
        })
    }

    pub fn device(&self) -> &Arc<Device> {
        self.buffer.device()
    }

    pub fn buffer(&self) -> &Arc<DeviceBuffer> {
        &self.buffer
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    pub fn n_elements(&self) -> usize {
        self.layout.n_elements()
    }

    /// Device address of the element at the layout's offset, for byte-sized dtypes.
    pub fn device_address(&self) -> Option<u64> {
        let element_bytes = self.dtype.byte_size()?;
        Some(self.buffer.device_address() + self.layout.offset() as u64 * element_bytes)
    }

    fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor {
            buffer: self.buffer.clone(),
            layout,
            dtype: self.dtype,
        }
    }

    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.reshape(shape)?))
    }

    pub fn squeeze(&self, axes: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.squeeze(axes)?))
    }

    pub fn broadcast(&self, shape: &[usize], axes: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.broadcast(shape, axes)?))
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.broadcast_to(shape)?))
    }

    pub fn transpose(&self, permutation: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.transpose(permutation)?))
    }

    pub fn slice(&self, starts: &[usize], lengths: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout.slice(starts, lengths)?))
    }

    /// The elements in row-major order, in Nx's binary layout for the dtype. When sub-byte
    /// elements do not fill the last byte, its unused low bits are zero.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let span = self.layout.element_span();
        if span.is_empty() {
            return Ok(Vec::new());
        }
        let bits = u64::from(self.dtype.bits());
        let first_byte = span.start as u64 * bits / 8;
        let end_byte = (span.end as u64 * bits).div_ceil(8);
        let raw = self
            .device()
            .download(&self.buffer, first_byte, end_byte - first_byte)?;
        if self.layout.is_contiguous() && (span.start as u64 * bits).is_multiple_of(8) {
            let length = self.dtype.storage_bytes(self.n_elements() as u64) as usize;
            let mut bytes = raw;
            bytes.truncate(length);
            clear_padding_bits(&mut bytes, self.n_elements() as u64 * bits);
            return Ok(bytes);
        }
        Ok(gather(&raw, first_byte * 8, &self.layout, self.dtype))
    }

    /// The elements as typed values in row-major order.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DTypeMismatch {
                op: "to_vec",
                expected: T::DTYPE,
                actual: self.dtype,
            });
        }
        let bytes = self.to_bytes()?;
        let count = bytes.len() / std::mem::size_of::<T>();
        let mut values = Vec::<T>::with_capacity(count);
        // SAFETY: `values` has capacity for `count` elements, `bytes` holds exactly that many
        // elements' bytes, and every bit pattern is a valid `Element` value.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                values.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            );
            values.set_len(count);
        }
        Ok(values)
    }
}

/// Bytes a contiguous `dtype` tensor of `shape` needs, or an error when the count overflows
/// (a shape from untrusted input must not panic or wrap).
fn storage_bytes(op: &'static str, dtype: DType, shape: &[usize]) -> Result<u64> {
    shape
        .iter()
        .try_fold(u64::from(dtype.bits()), |bits, &size| {
            bits.checked_mul(size as u64)
        })
        .map(|bits| bits.div_ceil(8))
        .ok_or_else(|| Error::InvalidView {
            op,
            shape: shape.to_vec(),
            detail: format!("{dtype} elements of this shape overflow 64-bit sizes"),
        })
}

/// Zeroes the bits after the first `used_bits` of the last byte.
fn clear_padding_bits(bytes: &mut [u8], used_bits: u64) {
    let used_in_last = (used_bits % 8) as u32;
    if let (Some(last), true) = (bytes.last_mut(), used_in_last != 0) {
        *last &= !(0xffu8 >> used_in_last);
    }
}

/// Packs the elements a strided layout selects, reading from `raw` which starts at bit
/// `raw_start_bit` of the buffer. Sub-byte elements use Nx's order (most significant first).
fn gather(raw: &[u8], raw_start_bit: u64, layout: &Layout, dtype: DType) -> Vec<u8> {
    let bits = u64::from(dtype.bits());
    let mut out = vec![0u8; dtype.storage_bytes(layout.n_elements() as u64) as usize];
    if let Some(size) = dtype.byte_size() {
        let size = size as usize;
        for (position, element) in layout.element_indices().enumerate() {
            let source = (element as u64 * bits - raw_start_bit) as usize / 8;
            out[position * size..(position + 1) * size]
                .copy_from_slice(&raw[source..source + size]);
        }
        return out;
    }
    let mask = (1u8 << bits) - 1;
    for (position, element) in layout.element_indices().enumerate() {
        let source_bit = element as u64 * bits - raw_start_bit;
        let shift = 8 - bits - source_bit % 8;
        let value = (raw[(source_bit / 8) as usize] >> shift) & mask;
        let target_bit = position as u64 * bits;
        out[(target_bit / 8) as usize] |= value << (8 - bits - target_bit % 8);
    }
    out
}
