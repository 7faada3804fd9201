//! Plan replay: a plan's commands recorded once and executed again on later runs.
//!
//! The first two runs of a plan are captured (nxvk-core's `capture` module; the second on
//! copies of the inputs the first used, so fixed weights and outputs fed back still change
//! address); comparing them shows which argument words hold the inputs' and outputs'
//! addresses, and the first run's commands are recorded once. From the third run on, a run
//! whose inputs are laid out as in the first one (same strides and offsets, addresses equal
//! modulo 64) is a replay: new output buffers, the address words rewritten, the recorded parts
//! executed in the stream's command buffer, and no stage walk, parameter building or recording
//! of the recorded parts on the host. Anything else runs the plan as usual. A plan whose runs
//! cannot be replayed (it reads a predicate back, or uploads large constants) is refused after
//! [`CAPTURE_ATTEMPTS`] captures, with the reason kept for [`PlanCache::replay_status`].
//!
//! A replay holds the first run's intermediate buffers for as long as the plan lives, and
//! captured runs do not reuse buffers by liveness; plans whose intermediates exceed
//! [`MAX_INTERMEDIATE_BYTES`] are not replayed. The `plan_replay` knob (`NXVK_KNOB_PLAN_REPLAY`,
//! `on` or `off`) switches replay; its default is [`REPLAY_BY_DEFAULT`].

use crate::plan::Plan;
use crate::plan_cache::PlanCache;
use nxvk_core::{
    Capture, DType, Device, DeviceBuffer, Error, Layout, Replay, Result, RunBuffers, Spoiled,
    Tensor,
};
use parking_lot::Mutex;
use std::sync::Arc;

/// Captures a plan gets before it is refused for good.
pub const CAPTURE_ATTEMPTS: u32 = 3;
/// Most bytes of intermediate buffers one plan's replay may hold.
pub const MAX_INTERMEDIATE_BYTES: u64 = 256 << 20;
/// Whether plans replay when `NXVK_KNOB_PLAN_REPLAY` is not set. Off: on the H200 replay cut
/// `small_mlp_us@plan` to 0.28x of its wall time but made `mlp_step_f32_b256` 1.23x slower on
/// the GPU (docs/BENCHMARKS.md, fourteenth session), so it is opt-in until that is understood.
pub const REPLAY_BY_DEFAULT: bool = false;

/// Where a plan stands with replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayStatus {
    /// Not captured yet, or between captures.
    Learning,
    /// Later runs with the captured layouts replay.
    Ready,
    /// Never replayed, and why.
    Refused(String),
}

/// How a run's tensors were laid out, to check a later run against and to rebuild outputs.
#[derive(Debug)]
struct RunLayout {
    inputs: Vec<(Layout, u64)>,
    outputs: Vec<(Layout, DType)>,
}

/// The largest address alignment a kernel choice depends on (a packet of four c128): inputs
/// equal modulo it have every alignment property the first run's kernels were chosen by.
const ADDRESS_ALIGNMENT: u64 = 64;

impl RunLayout {
    fn of(inputs: &[&Tensor], outputs: &[Tensor]) -> Self {
        RunLayout {
            inputs: inputs
                .iter()
                .map(|input| {
                    let alignment = input.buffer().device_address() % ADDRESS_ALIGNMENT;
                    (input.layout().clone(), alignment)
                })
                .collect(),
            outputs: outputs
                .iter()
                .map(|output| (output.layout().clone(), output.dtype()))
                .collect(),
        }
    }

    fn admits(&self, inputs: &[&Tensor]) -> bool {
        inputs.len() == self.inputs.len()
            && inputs
                .iter()
                .zip(&self.inputs)
                .all(|(input, (layout, alignment))| {
                    input.layout() == layout
                        && input.buffer().device_address() % ADDRESS_ALIGNMENT == *alignment
                })
    }
}

/// A captured run: its commands and the tensors it read and wrote (held so that the buffers
/// stay the same ones until the comparison).
struct CapturedRun {
    capture: Capture,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

fn buffers(tensors: &[Tensor]) -> Vec<&DeviceBuffer> {
    tensors.iter().map(|tensor| &**tensor.buffer()).collect()
}

enum State {
    Learning {
        first: Option<CapturedRun>,
        attempts: u32,
    },
    Ready {
        replay: Replay,
        layout: RunLayout,
    },
    Refused(String),
    /// A run is capturing; concurrent runs of the plan run normally.
    Capturing,
}

/// A plan's replay state.
pub(crate) struct PlanReplay {
    state: Mutex<State>,
}

impl std::fmt::Debug for PlanReplay {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PlanReplay")
            .field("status", &self.status())
            .finish()
    }
}

impl Default for PlanReplay {
    fn default() -> Self {
        PlanReplay {
            state: Mutex::new(State::Learning {
                first: None,
                attempts: 0,
            }),
        }
    }
}

impl PlanReplay {
    pub(crate) fn status(&self) -> ReplayStatus {
        match &*self.state.lock() {
            State::Learning { .. } | State::Capturing => ReplayStatus::Learning,
            State::Ready { .. } => ReplayStatus::Ready,
            State::Refused(reason) => ReplayStatus::Refused(reason.clone()),
        }
    }
}

/// Runs `plan` on `inputs`: replayed when it can be, captured while replay is being learnt,
/// executed stage by stage otherwise.
pub(crate) fn run(plan: &Plan, cache: &PlanCache, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let state = &plan.replay.state;
    let mut guard = state.lock();
    let (first, attempts) = match &mut *guard {
        State::Ready { replay, layout } => {
            let admitted = layout.admits(inputs)
                && inputs
                    .iter()
                    .all(|input| Arc::ptr_eq(input.device(), cache.device()));
            if !admitted {
                drop(guard);
                cache.count_replay_miss();
                return plan.execute(cache, inputs);
            }
            let buffers: Vec<&Arc<DeviceBuffer>> =
                inputs.iter().map(|input| input.buffer()).collect();
            let outputs = replay.run(&buffers)?;
            cache.count_replay();
            return outputs
                .into_iter()
                .zip(&layout.outputs)
                .map(|(buffer, (layout, dtype))| Tensor::from_parts(buffer, layout.clone(), *dtype))
                .collect();
        }
        State::Refused(_) | State::Capturing => {
            drop(guard);
            return plan.execute(cache, inputs);
        }
        State::Learning { first, attempts } => (first.take(), *attempts),
    };
    let device = cache.device().clone();
    // The comparison tells an input's address words by their change, so the second run reads
    // copies of the inputs the first run used too (the same weights each run, or an output
    // fed back). Copies hold the same values: the run's results are the same.
    let copies = match &first {
        Some(first) => copies_of_reused(&device, &first.capture, inputs)?,
        None => Vec::new(),
    };
    let inputs: Vec<&Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(index, &input)| copies.get(index).and_then(Option::as_ref).unwrap_or(input))
        .collect();
    if !device.begin_capture() {
        *guard = State::Learning { first, attempts };
        drop(guard);
        return plan.execute(cache, &inputs);
    }
    *guard = State::Capturing;
    drop(guard);
    let inputs = &inputs[..];
    let result = plan.execute(cache, inputs);
    let capture = device.end_capture();
    let (next, outputs) = match result {
        Ok(outputs) => {
            let next = learn(&device, first, attempts + 1, capture, inputs, &outputs);
            (next, Ok(outputs))
        }
        Err(Error::OutOfDeviceMemory { .. }) => {
            // Captured runs keep every intermediate: run it as usual, and never capture again.
            drop(first);
            drop(capture);
            let reason = "a captured run ran out of device memory".to_owned();
            (State::Refused(reason), plan.execute(cache, inputs))
        }
        Err(error) => (State::Learning { first, attempts }, Err(error)),
    };
    *state.lock() = next;
    outputs
}

/// For each input the capture used, a copy in a new buffer with the same layout.
fn copies_of_reused(
    device: &Arc<Device>,
    capture: &Capture,
    inputs: &[&Tensor],
) -> Result<Vec<Option<Tensor>>> {
    inputs
        .iter()
        .map(|input| {
            if !capture.uses(input.buffer()) {
                return Ok(None);
            }
            let buffer = device.alloc("replay input copy", input.buffer().size())?;
            device.copy_buffer(input.buffer(), &buffer)?;
            Tensor::from_parts(Arc::new(buffer), input.layout().clone(), input.dtype()).map(Some)
        })
        .collect()
}

/// The state after a captured run.
fn learn(
    device: &Arc<Device>,
    first: Option<CapturedRun>,
    attempts: u32,
    capture: std::result::Result<Capture, Spoiled>,
    inputs: &[&Tensor],
    outputs: &[Tensor],
) -> State {
    let give_up = |reason: String, first: Option<CapturedRun>| {
        if attempts >= CAPTURE_ATTEMPTS {
            State::Refused(reason)
        } else {
            State::Learning { first, attempts }
        }
    };
    let capture = match capture {
        Ok(capture) => capture,
        // Not the plan's fault: the attempt does not count.
        Err(spoiled) if spoiled.transient => {
            return State::Learning {
                first,
                attempts: attempts - 1,
            };
        }
        Err(spoiled) => return give_up(spoiled.reason.to_owned(), first),
    };
    let run = CapturedRun {
        capture,
        inputs: inputs.iter().map(|&input| input.clone()).collect(),
        outputs: outputs.to_vec(),
    };
    let intermediate_bytes = run.capture.intermediate_bytes(RunBuffers {
        inputs: &buffers(&run.inputs),
        outputs: &buffers(&run.outputs),
    });
    if intermediate_bytes > MAX_INTERMEDIATE_BYTES {
        return State::Refused(format!(
            "its intermediates take {intermediate_bytes} bytes (at most {MAX_INTERMEDIATE_BYTES})"
        ));
    }
    let Some(first) = first else {
        return State::Learning {
            first: Some(run),
            attempts,
        };
    };
    let layout = RunLayout::of(&first.inputs.iter().collect::<Vec<_>>(), &first.outputs);
    if !layout.admits(inputs) {
        return give_up(
            "the runs' inputs were laid out differently".into(),
            Some(run),
        );
    }
    let replay = Replay::new(
        device,
        first.capture,
        RunBuffers {
            inputs: &buffers(&first.inputs),
            outputs: &buffers(&first.outputs),
        },
        run.capture,
        RunBuffers {
            inputs: &buffers(&run.inputs),
            outputs: &buffers(&run.outputs),
        },
    );
    match replay {
        Ok(replay) => State::Ready { replay, layout },
        Err(reason) => give_up(reason, None),
    }
}
