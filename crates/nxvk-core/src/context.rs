//! A context: one physical device, opened lazily, rebuilt after a loss.
//!
//! Several contexts (several devices, or the same one twice) may be open in one process. The
//! context hands out the current [`Device`]; when that device times out or is lost, the next
//! call to [`Context::device`] builds a fresh one and counts a rebuild. Tensors of the failed
//! device return errors; they are never silently moved.

use crate::adapter::{Adapter, select_adapter};
use crate::counters::{CounterSnapshot, Counters};
use crate::device::Device;
use crate::{Capabilities, Knobs, Result};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Context {
    shared: Arc<ContextShared>,
}

#[derive(Debug)]
struct ContextShared {
    capabilities: Capabilities,
    adapter: Mutex<Adapter>,
    counters: Arc<Counters>,
    knobs: Knobs,
    cache_dir: PathBuf,
    raw_device_creation: bool,
    current: Mutex<Option<Arc<Device>>>,
}

/// Options for opening a context; `Default` reads the environment.
#[derive(Debug, Clone)]
pub struct ContextOptions {
    /// Index or name/driver substring; `None` uses `NXVK_DEVICE` or the default preference.
    pub selector: Option<String>,
    pub knobs: Knobs,
    /// Folder for the pipeline and SPIR-V caches.
    pub cache_dir: PathBuf,
    /// Create the device with raw Vulkan calls even where it offers none of the features newer
    /// than vulkano (`newer_features.rs`), which otherwise decide: for tests of that path on
    /// drivers without them.
    pub raw_device_creation: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions {
            selector: None,
            knobs: Knobs::from_env(),
            cache_dir: crate::cache_dir::default_cache_dir(),
            raw_device_creation: false,
        }
    }
}

impl Context {
    /// The device `NXVK_DEVICE` names, or the preferred one.
    pub fn new() -> Result<Context> {
        Context::with_options(ContextOptions::default())
    }

    /// The device `selector` names (an index, or a substring of name or driver).
    pub fn with_selector(selector: &str) -> Result<Context> {
        Context::with_options(ContextOptions {
            selector: Some(selector.to_owned()),
            ..ContextOptions::default()
        })
    }

    pub fn with_options(options: ContextOptions) -> Result<Context> {
        Context::from_adapter(select_adapter(options.selector.as_deref())?, options)
    }

    /// A context on a specific adapter from [`crate::list_adapters`].
    pub fn from_adapter(adapter: Adapter, options: ContextOptions) -> Result<Context> {
        if let Some(missing) = adapter.missing_requirements() {
            return Err(crate::Error::UnsupportedDevice {
                device: adapter.capabilities.summary(),
                missing,
            });
        }
        let context = Context {
            shared: Arc::new(ContextShared {
                capabilities: adapter.capabilities.clone(),
                adapter: Mutex::new(adapter),
                counters: Arc::new(Counters::default()),
                knobs: options.knobs,
                cache_dir: options.cache_dir,
                raw_device_creation: options.raw_device_creation,
                current: Mutex::new(None),
            }),
        };
        context.device()?;
        Ok(context)
    }

    pub fn capabilities(&self) -> &Capabilities {
        &self.shared.capabilities
    }

    /// The working device, rebuilt first if the last one failed.
    pub fn device(&self) -> Result<Arc<Device>> {
        let mut current = self.shared.current.lock();
        if let Some(device) = current.as_ref() {
            if !device.has_failed() {
                return Ok(device.clone());
            }
            // Leaked on purpose: dropping a device waits for its queue, whose work never ends.
            std::mem::forget(current.take());
            Counters::add(&self.shared.counters.device_rebuilds, 1);
            let mut adapter = self.shared.adapter.lock();
            *adapter = crate::adapter::reopen(&adapter);
        }
        let adapter = self.shared.adapter.lock().clone();
        let device = Device::open(
            adapter,
            self.shared.counters.clone(),
            self.shared.knobs.clone(),
            self.shared.cache_dir.clone(),
            self.shared.raw_device_creation,
        )?;
        *current = Some(device.clone());
        Ok(device)
    }

    /// Counters over every device generation of this context.
    pub fn counters(&self) -> CounterSnapshot {
        self.shared.counters.snapshot()
    }
}
