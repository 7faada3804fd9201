//! The one error type of nxvk-core. Messages name the op, shapes and dtypes involved.

use crate::DType;
use std::path::PathBuf;
use std::time::Duration;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    // --- Device discovery ---
    /// No Vulkan loader or driver could be opened, or no device supports compute.
    #[error("no usable Vulkan device: {reason}")]
    NoDevice { reason: String },
    /// `NXVK_DEVICE` (or an explicit selector) matched no device.
    #[error("no Vulkan device matches `{selector}`; available: {available:?}")]
    DeviceNotFound {
        selector: String,
        available: Vec<String>,
    },
    /// The device lacks a feature nxvk cannot work without.
    #[error("device `{device}` cannot run nxvk: it lacks {missing}")]
    UnsupportedDevice { device: String, missing: String },

    // --- Bad input ---
    /// A view (reshape, broadcast, slice, ...) that the layout does not allow.
    #[error("{op}: invalid view of a tensor of shape {shape:?}: {detail}")]
    InvalidView {
        op: &'static str,
        shape: Vec<usize>,
        detail: String,
    },
    /// Operand shapes or dtypes that the op does not accept.
    #[error("{op}: operands of shapes {shapes:?} and dtypes [{}]: {detail}", dtype_names(.dtypes))]
    BadOperands {
        op: &'static str,
        shapes: Vec<Vec<usize>>,
        dtypes: Vec<DType>,
        detail: String,
    },
    /// An op with no implementation (GPU or host) for these dtypes yet.
    #[error("{op}: not supported for {dtype}: {detail}")]
    Unsupported {
        op: &'static str,
        dtype: DType,
        detail: String,
    },
    /// A kernel whose module uses a shader feature the device lacks.
    #[error("kernel `{kernel}` needs {feature}, which device `{device}` lacks")]
    KernelNeedsFeature {
        kernel: String,
        feature: &'static str,
        device: String,
    },
    /// Host data whose length does not fit the tensor it should fill.
    #[error(
        "{op}: {actual} bytes given for a {dtype} tensor of shape {shape:?}, which needs {expected}"
    )]
    ByteLength {
        op: &'static str,
        dtype: DType,
        shape: Vec<usize>,
        expected: u64,
        actual: u64,
    },
    /// A typed read or write whose element type differs from the tensor's dtype.
    #[error("{op}: the tensor holds {actual}, not {expected}")]
    DTypeMismatch {
        op: &'static str,
        expected: DType,
        actual: DType,
    },
    /// A tensor used with a context other than the one that made it, or made before a device
    /// was lost and rebuilt.
    #[error("{op}: the tensor lives on another device, or on one that was lost since")]
    ForeignTensor { op: &'static str },

    // --- Device errors ---
    /// An allocation larger than the memory the device has (or will give).
    #[error("{op}: out of device memory: {requested} bytes requested, {available} available")]
    OutOfDeviceMemory {
        op: &'static str,
        requested: u64,
        available: u64,
    },
    /// GPU work did not complete in time; the device is rebuilt on next use.
    #[error(
        "{op}: GPU work did not finish within {waited:?}; the device will be rebuilt on next use"
    )]
    Timeout { op: &'static str, waited: Duration },
    /// The driver reported the device lost; it is rebuilt on next use.
    #[error("{op}: the Vulkan device was lost; it will be rebuilt on next use")]
    DeviceLost { op: &'static str },
    /// Any other Vulkan failure.
    #[error("{op}: Vulkan error: {detail}")]
    Vulkan { op: &'static str, detail: String },

    // --- Policy ---
    /// Strict mode refused a host fallback.
    #[error(
        "{op}: no GPU path for {dtype} with shapes {shapes:?}, and strict mode refuses host fallbacks (NXVK_STRICT=raise)"
    )]
    HostFallbackRefused {
        op: &'static str,
        dtype: DType,
        shapes: Vec<Vec<usize>>,
    },

    // --- Toolchain and files ---
    #[error(transparent)]
    Shader(#[from] nxvk_glsl::GlslError),
    /// A cache file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    /// Maps a Vulkan error from `op` onto the variants callers can act on.
    pub(crate) fn vulkan(op: &'static str, error: impl Into<VulkanFailure>) -> Self {
        use vulkano::VulkanError;
        match error.into() {
            VulkanFailure::Runtime(VulkanError::DeviceLost) => Error::DeviceLost { op },
            VulkanFailure::Runtime(VulkanError::OutOfDeviceMemory)
            | VulkanFailure::Runtime(VulkanError::OutOfHostMemory) => Error::OutOfDeviceMemory {
                op,
                requested: 0,
                available: 0,
            },
            VulkanFailure::Runtime(other) => Error::Vulkan {
                op,
                detail: other.to_string(),
            },
            VulkanFailure::Validation(detail) => Error::Vulkan { op, detail },
        }
    }

    /// True for the errors after which the device must be rebuilt.
    pub fn is_device_fatal(&self) -> bool {
        matches!(self, Error::Timeout { .. } | Error::DeviceLost { .. })
    }
}

/// A Vulkan error as vulkano reports it: from the driver, or from vulkano's own validation.
#[derive(Debug)]
pub(crate) enum VulkanFailure {
    Runtime(vulkano::VulkanError),
    Validation(String),
}

impl From<vulkano::VulkanError> for VulkanFailure {
    fn from(error: vulkano::VulkanError) -> Self {
        VulkanFailure::Runtime(error)
    }
}

impl From<vulkano::Validated<vulkano::VulkanError>> for VulkanFailure {
    fn from(error: vulkano::Validated<vulkano::VulkanError>) -> Self {
        match error {
            vulkano::Validated::Error(inner) => VulkanFailure::Runtime(inner),
            vulkano::Validated::ValidationError(detail) => {
                VulkanFailure::Validation(detail.to_string())
            }
        }
    }
}

impl From<Box<vulkano::ValidationError>> for VulkanFailure {
    fn from(error: Box<vulkano::ValidationError>) -> Self {
        VulkanFailure::Validation(error.to_string())
    }
}

fn dtype_names(dtypes: &[DType]) -> String {
    dtypes
        .iter()
        .map(|dtype| dtype.name())
        .collect::<Vec<_>>()
        .join(", ")
}
