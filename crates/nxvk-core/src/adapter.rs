//! Finding Vulkan devices: one instance per process, the physical devices it sees, and the
//! `NXVK_DEVICE` selector.
//!
//! Default preference is discrete > integrated > virtual > CPU, first in enumeration order
//! within a kind. `NXVK_DEVICE` is either an index into [`list_adapters`] or a case-insensitive
//! substring of the device name, driver name or driver info ("llvmpipe", "Mesa 25", "H200").

use crate::{Capabilities, Error, Result};
use std::sync::{Arc, OnceLock};
use vulkano::VulkanLibrary;
use vulkano::device::QueueFlags;
use vulkano::device::physical::PhysicalDevice;
use vulkano::instance::{Instance, InstanceCreateFlags, InstanceCreateInfo, InstanceExtensions};

/// The environment variable that picks a device.
pub const DEVICE_SELECTOR_ENV: &str = "NXVK_DEVICE";

/// A physical device that can run nxvk, with its probed capabilities.
#[derive(Debug, Clone)]
pub struct Adapter {
    /// Position in enumeration order, as `NXVK_DEVICE=<index>` uses it.
    pub index: usize,
    pub capabilities: Capabilities,
    pub(crate) physical: Arc<PhysicalDevice>,
    pub(crate) compute_queue_family: u32,
}

/// The process's Vulkan instance, created on first use.
fn instance() -> Result<Arc<Instance>> {
    static INSTANCE: OnceLock<std::result::Result<Arc<Instance>, String>> = OnceLock::new();
    INSTANCE
        .get_or_init(create_instance)
        .clone()
        .map_err(|reason| Error::NoDevice { reason })
}

fn create_instance() -> std::result::Result<Arc<Instance>, String> {
    let library = VulkanLibrary::new()
        .map_err(|error| format!("the Vulkan loader could not be opened: {error}"))?;
    // Portability enumeration lets MoltenVK (macOS) devices appear.
    let portable = library.supported_extensions().khr_portability_enumeration;
    let create_info = InstanceCreateInfo {
        application_name: Some("nxvk".into()),
        flags: if portable {
            InstanceCreateFlags::ENUMERATE_PORTABILITY
        } else {
            InstanceCreateFlags::empty()
        },
        enabled_extensions: InstanceExtensions {
            khr_portability_enumeration: portable,
            ..InstanceExtensions::empty()
        },
        ..InstanceCreateInfo::application_from_cargo_toml()
    };
    Instance::new(library, create_info).map_err(|error| format!("vkCreateInstance failed: {error}"))
}

/// The same physical device as `adapter`, found through a new Vulkan instance.
///
/// After a device hangs, its driver state may be stuck with it: lavapipe, for one, runs every
/// device of a physical device on one thread pool, which a never-ending shader keeps busy. A
/// fresh instance gets fresh driver state. Falls back to `adapter` if the device is not found.
pub(crate) fn reopen(adapter: &Adapter) -> Adapter {
    let fresh = create_instance()
        .ok()
        .and_then(|instance| adapters_of(&instance).ok())
        .and_then(|adapters| {
            adapters.into_iter().find(|candidate| {
                let (old, new) = (&adapter.capabilities, &candidate.capabilities);
                old.device_uuid == new.device_uuid
                    && old.driver_info == new.driver_info
                    && old.device_name == new.device_name
            })
        });
    fresh.unwrap_or_else(|| adapter.clone())
}

/// Every physical device that has a compute queue and the features nxvk needs
/// (Vulkan 1.2, buffer device addresses, timeline semaphores, 64-bit integers).
pub fn list_adapters() -> Result<Vec<Adapter>> {
    adapters_of(&instance()?)
}

fn adapters_of(instance: &Arc<Instance>) -> Result<Vec<Adapter>> {
    let physical_devices =
        instance
            .enumerate_physical_devices()
            .map_err(|error| Error::NoDevice {
                reason: format!("vkEnumeratePhysicalDevices failed: {error}"),
            })?;
    Ok(physical_devices
        .enumerate()
        .filter_map(|(index, physical)| {
            let compute_queue_family = physical
                .queue_family_properties()
                .iter()
                .position(|family| family.queue_flags.intersects(QueueFlags::COMPUTE))?
                as u32;
            let capabilities = Capabilities::probe(&physical);
            Some(Adapter {
                index,
                capabilities,
                physical,
                compute_queue_family,
            })
        })
        .collect())
}

impl Adapter {
    /// What the device lacks among nxvk's hard requirements, if anything.
    pub fn missing_requirements(&self) -> Option<String> {
        let capabilities = &self.capabilities;
        let mut missing = Vec::new();
        if capabilities.api_version < (1, 2, 0) {
            missing.push("Vulkan 1.2");
        }
        if !capabilities.buffer_device_address {
            missing.push("bufferDeviceAddress");
        }
        if !capabilities.timeline_semaphore {
            missing.push("timelineSemaphore");
        }
        if !capabilities.shader_int64 {
            missing.push("shaderInt64");
        }
        if !capabilities.scalar_block_layout {
            missing.push("scalarBlockLayout");
        }
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    fn matches(&self, selector: &str) -> bool {
        if let Ok(index) = selector.trim().parse::<usize>() {
            return index == self.index;
        }
        let needle = selector.to_lowercase();
        let capabilities = &self.capabilities;
        [
            &capabilities.device_name,
            &capabilities.driver_name,
            &capabilities.driver_info,
        ]
        .iter()
        .any(|text| text.to_lowercase().contains(&needle))
    }
}

/// Picks the adapter named by `selector`, or by `NXVK_DEVICE`, or the preferred one.
pub fn select_adapter(selector: Option<&str>) -> Result<Adapter> {
    let adapters = list_adapters()?;
    let from_env = std::env::var(DEVICE_SELECTOR_ENV).ok();
    let selector = selector
        .or(from_env.as_deref())
        .filter(|text| !text.trim().is_empty());
    let chosen = match selector {
        Some(selector) => adapters
            .iter()
            .find(|adapter| adapter.matches(selector))
            .ok_or_else(|| Error::DeviceNotFound {
                selector: selector.to_owned(),
                available: adapters
                    .iter()
                    .map(|adapter| format!("{}: {}", adapter.index, adapter.capabilities.summary()))
                    .collect(),
            })?,
        None => adapters
            .iter()
            .filter(|adapter| adapter.missing_requirements().is_none())
            .min_by_key(|adapter| (adapter.capabilities.device_kind, adapter.index))
            .or(adapters.first())
            .ok_or_else(|| Error::NoDevice {
                reason: "the Vulkan loader found no device with a compute queue".into(),
            })?,
    };
    if let Some(missing) = chosen.missing_requirements() {
        return Err(Error::UnsupportedDevice {
            device: chosen.capabilities.summary(),
            missing,
        });
    }
    Ok(chosen.clone())
}
