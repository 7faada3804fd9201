//! The plan cache: compile once, run many.
//!
//! Plans are keyed by the BLAKE3 hash of the graph's encoding (which holds the parameters'
//! dtypes and shapes), the input types and the planner options. A second run of the same graph
//! with new data finds its plan and does no planning, no code generation and no pipeline
//! build; [`FusionCounters`] (and the device's pipeline counters) prove it. Generated SPIR-V is
//! content-addressed on disk by nxvk-core, so a new process compiles no GLSL it compiled
//! before either. Plans hold the device's kernels, so a cache belongs to one device.

use crate::encoding::{decode, encode};
use crate::graph::{Graph, TensorType};
use crate::plan::{Plan, PlanOptions, plan};
use crate::replay::{REPLAY_BY_DEFAULT, ReplayStatus};
use nxvk_core::{Device, Result, Tensor};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// What the cache did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FusionCounters {
    /// Graphs planned (a cache miss: the graph was walked, decoded if encoded, and planned).
    pub traces: u64,
    /// GLSL sources generated for fused kernels.
    pub codegens: u64,
    /// Runs that found their plan.
    pub cache_hits: u64,
    /// Plans run (hits and misses).
    pub runs: u64,
    /// Fused dispatches that took the packet path (four elements per vector access).
    pub packet_dispatches: u64,
    /// GEMMs that applied their epilogue in the store (the rest of the epilogue stages ran
    /// their unfused kernel on the product).
    pub gemm_epilogues: u64,
    /// Runs that submitted their plan's recorded command buffer again (`replay.rs`).
    pub replays: u64,
    /// Runs of a replayable plan whose inputs were laid out otherwise (they ran stage by stage).
    pub replay_misses: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PlanKey {
    graph_hash: [u8; 32],
    inputs: Vec<TensorType>,
    options: PlanOptions,
}

/// Plans for one device, by graph and input types.
#[derive(Debug)]
pub struct PlanCache {
    device: Arc<Device>,
    options: PlanOptions,
    plans: Mutex<HashMap<PlanKey, Arc<Plan>>>,
    counters: Mutex<FusionCounters>,
    replay: bool,
}

fn input_types(inputs: &[&Tensor]) -> Vec<TensorType> {
    inputs
        .iter()
        .map(|tensor| TensorType::new(tensor.dtype(), tensor.shape()))
        .collect()
}

impl PlanCache {
    /// A cache with the planner options of the environment (`NXVK_KNOB_CSE`).
    pub fn new(device: &Arc<Device>) -> Self {
        PlanCache::with_options(device, PlanOptions::from_env())
    }

    /// Replay follows the device's `plan_replay` knob (`replay.rs`).
    pub fn with_options(device: &Arc<Device>, options: PlanOptions) -> Self {
        let replay = match device.knobs().variant("plan_replay") {
            Some(value) => value == "on",
            None => REPLAY_BY_DEFAULT,
        };
        PlanCache {
            device: device.clone(),
            options,
            plans: Mutex::new(HashMap::new()),
            counters: Mutex::new(FusionCounters::default()),
            replay,
        }
    }

    /// This cache with plan replay switched on or off, whatever the knob says.
    pub fn with_replay(mut self, replay: bool) -> Self {
        self.replay = replay;
        self
    }

    /// Where the plan of `graph` stands with replay (planned on first use).
    pub fn replay_status(&self, graph: &Graph) -> Result<ReplayStatus> {
        Ok(self.plan(graph)?.replay.status())
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    pub fn options(&self) -> PlanOptions {
        self.options
    }

    pub fn counters(&self) -> FusionCounters {
        *self.counters.lock()
    }

    pub(crate) fn count_packet_dispatch(&self) {
        self.counters.lock().packet_dispatches += 1;
    }

    pub(crate) fn count_gemm_epilogue(&self) {
        self.counters.lock().gemm_epilogues += 1;
    }

    pub(crate) fn count_replay(&self) {
        self.counters.lock().replays += 1;
    }

    pub(crate) fn count_replay_miss(&self) {
        self.counters.lock().replay_misses += 1;
    }

    /// Runs a found or new plan: through replay when this cache replays.
    fn run_plan(&self, plan: &Plan, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        self.counters.lock().runs += 1;
        if self.replay {
            crate::replay::run(plan, self, inputs)
        } else {
            plan.execute(self, inputs)
        }
    }

    /// The plan for `key`, built by `make` on a miss.
    fn plan_for(&self, key: PlanKey, make: impl FnOnce() -> Result<Graph>) -> Result<Arc<Plan>> {
        if let Some(plan) = self.plans.lock().get(&key) {
            self.counters.lock().cache_hits += 1;
            return Ok(plan.clone());
        }
        let planned = Arc::new(plan(Arc::new(make()?), &self.device, self.options)?);
        let mut counters = self.counters.lock();
        counters.traces += 1;
        counters.codegens += planned.generated_kernels as u64;
        drop(counters);
        self.plans.lock().insert(key, planned.clone());
        Ok(planned)
    }

    /// The plan of `graph` (planned and compiled on first use).
    pub fn plan(&self, graph: &Graph) -> Result<Arc<Plan>> {
        let key = PlanKey {
            graph_hash: *blake3::hash(&encode(graph)).as_bytes(),
            inputs: graph.parameters().to_vec(),
            options: self.options,
        };
        self.plan_for(key, || Ok(graph.clone()))
    }

    /// Runs `graph` on `inputs`, one tensor per output.
    pub fn run(&self, graph: &Graph, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let plan = self.plan(graph)?;
        self.run_plan(&plan, inputs)
    }

    /// Runs the graph encoded in `bytes` (what the NIF receives): a cached plan is found by
    /// the bytes' hash alone, without decoding them.
    pub fn run_encoded(&self, bytes: &[u8], inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let key = PlanKey {
            graph_hash: *blake3::hash(bytes).as_bytes(),
            inputs: input_types(inputs),
            options: self.options,
        };
        let plan = self.plan_for(key, || decode(bytes))?;
        self.run_plan(&plan, inputs)
    }
}
