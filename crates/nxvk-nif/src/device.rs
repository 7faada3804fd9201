//! The process-wide default context, device listing and selection, synchronisation and
//! counters.
//!
//! One context (one Vulkan device) serves every NIF call. It opens lazily on first use, on the
//! device `NXVK_DEVICE` names or the preferred one; `open_device` replaces it. Tensors made on
//! an earlier context keep their own device alive and stay usable until they are freed.

use crate::reply::{Done, Reply, guarded, message};
use crate::terms::atom_map;
use nxvk_core::{Capabilities, Context, Device, list_adapters};
use parking_lot::Mutex;
use rustler::{Encoder, Env, Term};
use std::sync::Arc;

static DEFAULT_CONTEXT: Mutex<Option<Context>> = Mutex::new(None);

/// The default context, opened on first use.
pub fn default_context() -> Reply<Context> {
    let mut slot = DEFAULT_CONTEXT.lock();
    if let Some(context) = slot.as_ref() {
        return Ok(context.clone());
    }
    let context = Context::new().map_err(message)?;
    *slot = Some(context.clone());
    Ok(context)
}

/// The default context's working device (rebuilt by nxvk-core after a loss).
pub fn default_device() -> Reply<Arc<Device>> {
    default_context()?.device().map_err(message)
}

/// A device's capabilities as a map with atom keys, plus `extra` entries.
fn capabilities_map<'a>(
    env: Env<'a>,
    capabilities: &Capabilities,
    extra: &[(&str, Term<'a>)],
) -> Reply<Term<'a>> {
    let (major, minor, patch) = capabilities.api_version;
    let subgroup = &capabilities.subgroup_operations;
    let subgroup_operations = atom_map(
        env,
        &[
            ("basic", subgroup.basic.encode(env)),
            ("vote", subgroup.vote.encode(env)),
            ("arithmetic", subgroup.arithmetic.encode(env)),
            ("ballot", subgroup.ballot.encode(env)),
            ("shuffle", subgroup.shuffle.encode(env)),
            ("shuffle_relative", subgroup.shuffle_relative.encode(env)),
            ("clustered", subgroup.clustered.encode(env)),
            ("quad", subgroup.quad.encode(env)),
            ("partitioned", subgroup.partitioned.encode(env)),
        ],
    )?;
    let mut pairs = vec![
        ("name", capabilities.device_name.encode(env)),
        (
            "kind",
            format!("{:?}", capabilities.device_kind)
                .to_lowercase()
                .encode(env),
        ),
        ("driver", capabilities.driver_name.encode(env)),
        ("driver_info", capabilities.driver_info.encode(env)),
        ("summary", capabilities.summary().encode(env)),
        ("vendor_id", capabilities.vendor_id.encode(env)),
        ("device_id", capabilities.device_id.encode(env)),
        (
            "api_version",
            format!("{major}.{minor}.{patch}").encode(env),
        ),
        ("shader_float64", capabilities.shader_float64.encode(env)),
        ("shader_int64", capabilities.shader_int64.encode(env)),
        ("shader_int16", capabilities.shader_int16.encode(env)),
        ("shader_int8", capabilities.shader_int8.encode(env)),
        ("shader_float16", capabilities.shader_float16.encode(env)),
        (
            "buffer_device_address",
            capabilities.buffer_device_address.encode(env),
        ),
        ("subgroup_size", capabilities.subgroup_size.encode(env)),
        ("subgroup_operations", subgroup_operations),
        (
            "max_shared_memory_bytes",
            capabilities.max_shared_memory_bytes.encode(env),
        ),
        (
            "max_storage_buffer_range",
            capabilities.max_storage_buffer_range.encode(env),
        ),
        (
            "max_push_constants_bytes",
            capabilities.max_push_constants_bytes.encode(env),
        ),
        (
            "max_memory_allocation_bytes",
            capabilities.max_memory_allocation_bytes.encode(env),
        ),
        (
            "device_local_heap_bytes",
            capabilities.device_local_heap_bytes.encode(env),
        ),
        (
            "cooperative_matrix_shapes",
            capabilities.cooperative_matrices.len().encode(env),
        ),
        (
            "bfloat16_cooperative_matrix",
            capabilities.bfloat16_cooperative_matrix.encode(env),
        ),
        (
            "workgroup_cooperative_matrices",
            capabilities.cooperative_matrix2.is_some().encode(env),
        ),
        ("unified_memory", capabilities.unified_memory.encode(env)),
    ];
    pairs.extend_from_slice(extra);
    atom_map(env, &pairs)
}

/// Every Vulkan device the loader sees, as capability maps plus `index` (as `NXVK_DEVICE`
/// counts) and `missing` (nil, or what nxvk needs that the device lacks). Dirty: the first
/// call creates the Vulkan instance and probes the devices.
#[rustler::nif(schedule = "DirtyIo")]
fn devices<'a>(env: Env<'a>) -> Reply<Vec<Term<'a>>> {
    guarded("devices", || {
        list_adapters()
            .map_err(message)?
            .iter()
            .map(|adapter| {
                let extra = [
                    ("index", adapter.index.encode(env)),
                    ("missing", adapter.missing_requirements().encode(env)),
                ];
                capabilities_map(env, &adapter.capabilities, &extra)
            })
            .collect()
    })
}

/// The default device's capabilities (opening it if needed).
#[rustler::nif(schedule = "DirtyIo")]
fn device_info<'a>(env: Env<'a>) -> Reply<Term<'a>> {
    guarded("device_info", || {
        capabilities_map(env, default_context()?.capabilities(), &[])
    })
}

/// Replaces the default context with one on the device `selector` names (an index or a
/// substring of name, driver or driver info); `nil` returns to `NXVK_DEVICE` / the preferred
/// device. Returns the new device's info.
#[rustler::nif(schedule = "DirtyIo")]
fn open_device<'a>(env: Env<'a>, selector: Option<String>) -> Reply<Term<'a>> {
    guarded("open_device", || {
        let context = match selector.as_deref() {
            Some(selector) => Context::with_selector(selector),
            None => Context::new(),
        }
        .map_err(message)?;
        let info = capabilities_map(env, context.capabilities(), &[])?;
        *DEFAULT_CONTEXT.lock() = Some(context);
        Ok(info)
    })
}

/// Submits recorded work and waits for the device to finish it.
#[rustler::nif(schedule = "DirtyIo")]
fn synchronize() -> Done {
    Done(guarded("synchronize", || {
        default_device()?.synchronize().map_err(message)
    }))
}

/// Frees the buffers the default device's pool keeps for reuse.
#[rustler::nif(schedule = "DirtyIo")]
fn trim_pool() -> Done {
    Done(guarded("trim_pool", || {
        default_device()?.trim_pool().map_err(message)
    }))
}

/// The default context's counters as a map; `host_fallbacks` is a list of
/// `%{op: name, dtype: name, count: n}`.
#[rustler::nif(schedule = "DirtyIo")]
fn counters<'a>(env: Env<'a>) -> Reply<Term<'a>> {
    guarded("counters", || {
        let snapshot = default_context()?.counters();
        let fallbacks = snapshot
            .host_fallbacks
            .iter()
            .map(|((op, dtype), count)| {
                atom_map(
                    env,
                    &[
                        ("op", op.encode(env)),
                        ("dtype", dtype.name().encode(env)),
                        ("count", count.encode(env)),
                    ],
                )
            })
            .collect::<Reply<Vec<Term<'a>>>>()?;
        atom_map(
            env,
            &[
                ("dispatches", snapshot.dispatches.encode(env)),
                ("barriers", snapshot.barriers.encode(env)),
                ("submits", snapshot.submits.encode(env)),
                ("bytes_uploaded", snapshot.bytes_uploaded.encode(env)),
                ("bytes_downloaded", snapshot.bytes_downloaded.encode(env)),
                ("pool_hits", snapshot.pool_hits.encode(env)),
                ("pool_misses", snapshot.pool_misses.encode(env)),
                ("pool_evictions", snapshot.pool_evictions.encode(env)),
                ("pipeline_builds", snapshot.pipeline_builds.encode(env)),
                (
                    "pipeline_cache_hits",
                    snapshot.pipeline_cache_hits.encode(env),
                ),
                ("shader_compiles", snapshot.shader_compiles.encode(env)),
                ("device_rebuilds", snapshot.device_rebuilds.encode(env)),
                ("device_bytes_live", snapshot.device_bytes_live.encode(env)),
                (
                    "host_fallbacks_total",
                    snapshot.total_host_fallbacks().encode(env),
                ),
                ("host_fallbacks", fallbacks.encode(env)),
            ],
        )
    })
}
