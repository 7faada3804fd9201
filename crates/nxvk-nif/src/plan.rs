//! Compiled graphs: `Nx.Vulkan.Compiler` hands an expression encoded in nxvk-fusion's binary
//! format (`nxvk_fusion::encoding`) and its inputs; nxvk-fusion plans, generates and runs the
//! fused kernels.
//!
//! The NIF keeps one [`PlanCache`] per device for the life of the VM, so a graph is planned
//! once per input signature and every later call (from any process) finds its plan by the
//! bytes' hash without decoding them. The caches are never dropped: a plan cache is small
//! next to the device it serves, and there is one per device the VM used.

use crate::device::default_device;
use crate::reply::{Reply, guarded, message};
use crate::tensor::{TensorArc, wrap};
use crate::terms::atom_map;
use nxvk_core::{Device, Tensor};
use nxvk_fusion::PlanCache;
use parking_lot::Mutex;
use rustler::{Binary, Encoder, Env, Term};
use std::sync::Arc;

static PLAN_CACHES: Mutex<Vec<Arc<PlanCache>>> = Mutex::new(Vec::new());

/// The plan cache of `device`, made on first use.
fn plan_cache_for(device: &Arc<Device>) -> Arc<PlanCache> {
    let mut caches = PLAN_CACHES.lock();
    if let Some(cache) = caches
        .iter()
        .find(|cache| Arc::ptr_eq(cache.device(), device))
    {
        return Arc::clone(cache);
    }
    let cache = Arc::new(PlanCache::new(device));
    caches.push(Arc::clone(&cache));
    cache
}

/// `plan_run(graph, inputs)`: the outputs of the encoded graph on `inputs` (one per
/// parameter, in order), on the inputs' device (the default device when there are none).
/// Dirty: it may plan, compile kernels and record GPU work.
#[rustler::nif(schedule = "DirtyCpu")]
fn plan_run<'a>(graph: Binary<'a>, inputs: Vec<TensorArc>) -> Reply<Vec<TensorArc>> {
    guarded("plan_run", || {
        let tensors: Vec<&Tensor> = inputs.iter().map(|input| &input.tensor).collect();
        let device = match tensors.first() {
            Some(first) => Arc::clone(first.device()),
            None => default_device()?,
        };
        plan_cache_for(&device)
            .run_encoded(graph.as_slice(), &tensors)
            .map(|outputs| outputs.into_iter().map(wrap).collect())
            .map_err(message)
    })
}

/// `plan_counters()`: the default device's fusion counters, `%{traces: n, codegens: n,
/// cache_hits: n, runs: n}`.
#[rustler::nif(schedule = "DirtyCpu")]
fn plan_counters<'a>(env: Env<'a>) -> Reply<Term<'a>> {
    guarded("plan_counters", || {
        let counters = plan_cache_for(&default_device()?).counters();
        atom_map(
            env,
            &[
                ("traces", counters.traces.encode(env)),
                ("codegens", counters.codegens.encode(env)),
                ("cache_hits", counters.cache_hits.encode(env)),
                ("runs", counters.runs.encode(env)),
            ],
        )
    })
}
