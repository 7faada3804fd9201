//! Capture and replay: a run's commands recorded once, into secondary command buffers of their
//! own, then executed again for later runs with new inputs and outputs.
//!
//! A capture logs what the calling thread records between [`Device::begin_capture`] and
//! [`Device::end_capture`]: each dispatch (pipeline, workgroups, push constants, parameter
//! block, declared accesses) and each fill. Anything that makes the run depend on the host
//! spoils it: a wait for the GPU (a read-back, a predicate), an upload, a copy, a timestamp, a
//! replay, or another thread recording meanwhile. Every buffer a capture touches is pinned:
//! the pool hands it to nobody else until the capture is dropped, so a later run cannot reuse
//! it.
//!
//! Which words of the commands are the addresses of the run's inputs and outputs is learnt,
//! not guessed: [`Replay::new`] compares two captures of the same work on different inputs and
//! outputs. A word that differs must be, in both runs, an address inside the same declared
//! buffer of that command at the same offset; it becomes a slot of that input or output, or,
//! inside an intermediate buffer, keeps the first run's address (the replay owns the first
//! run's intermediates). A word that is equal in both runs is not an input or output address,
//! because the second run's inputs and outputs are disjoint from the first's (both are
//! pinned). The two runs must also have the same commands and the same aliasing of buffers,
//! and neither may write an input or a buffer both share.
//!
//! The first run's commands are recorded once: each run of commands without a slot in push
//! constants into a secondary command buffer, their parameter blocks in one buffer whose slots
//! a replay rewrites with `vkCmdUpdateBuffer` in the stream's command buffer; a dispatch with a
//! slot in push constants (the catalog's eager kernels put addresses there) is recorded by each
//! replay, between the secondaries, and so are runs of fewer than `MIN_SECONDARY_COMMANDS`
//! dispatches between such dispatches (an executed secondary costs GPU time). Barriers come from one hazard tracking over the whole
//! sequence, and the stream puts one before the replay where earlier commands touch its
//! buffers. Fills of outputs (the tests' poison) are done on the new outputs first.

use crate::device::{Device, DeviceBuffer};
use crate::hazard::HazardTracker;
use crate::memory::{BufferPool, MemoryKind, RawBuffer};
use crate::pipeline::Pipeline;
use crate::stream::record_global_barrier;
use crate::{Error, Result};
use ash::vk;
use std::collections::HashMap;
use std::sync::Arc;
use std::thread::ThreadId;
use vulkano::VulkanObject;
use vulkano::command_buffer::CommandBufferLevel;
use vulkano::command_buffer::pool::{
    CommandBufferAllocateInfo, CommandPool, CommandPoolCreateInfo,
};

/// Largest write `vkCmdUpdateBuffer` takes.
const UPDATE_LIMIT: usize = 65_536;
/// Alignment of each parameter block in a replay's parameter buffer.
const PARAMS_ALIGNMENT: u64 = 16;

/// Buffers held out of the pool while a capture or replay needs them.
struct Pins {
    pool: Arc<BufferPool>,
    buffers: HashMap<u64, Arc<RawBuffer>>,
}

impl Pins {
    fn new(pool: Arc<BufferPool>) -> Self {
        Pins {
            pool,
            buffers: HashMap::new(),
        }
    }

    fn pin(&mut self, buffer: &Arc<RawBuffer>) {
        if !self.buffers.contains_key(&buffer.id) {
            self.pool.pin(buffer);
            self.buffers.insert(buffer.id, buffer.clone());
        }
    }

    fn bytes(&self) -> u64 {
        self.buffers.values().map(|buffer| buffer.size()).sum()
    }
}

impl Drop for Pins {
    fn drop(&mut self) {
        for buffer in self.buffers.values() {
            self.pool.unpin(buffer);
        }
    }
}

enum LoggedOp {
    Dispatch {
        pipeline: Arc<Pipeline>,
        groups: [u32; 3],
        /// As the caller gave them: the parameter block's address word is still zero.
        push: Vec<u8>,
        /// The parameter block and the byte offset of its address in `push`.
        params: Option<(Vec<u8>, usize)>,
    },
    Fill {
        word: u32,
    },
}

struct LoggedCommand {
    op: LoggedOp,
    /// (buffer, written) in the order the command declared them.
    accesses: Vec<(Arc<RawBuffer>, bool)>,
}

/// Why a capture cannot be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spoiled {
    pub reason: &'static str,
    /// True when the next capture of the same work may succeed (another thread recorded
    /// meanwhile), false when the work itself depends on the host.
    pub transient: bool,
}

/// What the stream logs while a capture runs.
pub(crate) struct CaptureLog {
    pub(crate) owner: ThreadId,
    commands: Vec<LoggedCommand>,
    spoiled: Option<Spoiled>,
    pins: Pins,
}

impl CaptureLog {
    pub(crate) fn new(pool: Arc<BufferPool>) -> Self {
        CaptureLog {
            owner: std::thread::current().id(),
            commands: Vec::new(),
            spoiled: None,
            pins: Pins::new(pool),
        }
    }

    /// Marks the capture unusable for replay; the first reason is kept.
    pub(crate) fn spoil(&mut self, reason: &'static str) {
        self.spoiled.get_or_insert(Spoiled {
            reason,
            transient: false,
        });
    }

    /// Marks the capture unusable because another thread recorded into the stream.
    pub(crate) fn spoil_by_other_thread(&mut self) {
        self.spoiled.get_or_insert(Spoiled {
            reason: "another thread recorded commands during the capture",
            transient: true,
        });
    }

    fn log(&mut self, op: LoggedOp, accesses: &[(&Arc<RawBuffer>, bool)]) {
        if self.spoiled.is_some() || self.owner != std::thread::current().id() {
            return;
        }
        for (buffer, _) in accesses {
            self.pins.pin(buffer);
        }
        let accesses = accesses
            .iter()
            .map(|&(buffer, written)| (buffer.clone(), written))
            .collect();
        self.commands.push(LoggedCommand { op, accesses });
    }

    pub(crate) fn log_dispatch(
        &mut self,
        pipeline: &Arc<Pipeline>,
        groups: [u32; 3],
        push: &[u8],
        params: Option<(&[u8], usize)>,
        accesses: &[(&Arc<RawBuffer>, bool)],
    ) {
        let op = LoggedOp::Dispatch {
            pipeline: pipeline.clone(),
            groups,
            push: push.to_vec(),
            params: params.map(|(bytes, offset)| (bytes.to_vec(), offset)),
        };
        self.log(op, accesses);
    }

    pub(crate) fn log_fill(&mut self, buffer: &Arc<RawBuffer>, word: u32) {
        self.log(LoggedOp::Fill { word }, &[(buffer, true)]);
    }
}

/// The commands one run recorded, for [`Replay::new`]; its buffers stay pinned while it lives.
pub struct Capture {
    commands: Vec<LoggedCommand>,
    pins: Pins,
}

impl Capture {
    /// Whether the captured commands use `buffer`.
    pub fn uses(&self, buffer: &DeviceBuffer) -> bool {
        self.pins.buffers.contains_key(&buffer.raw().id)
    }

    /// Bytes of the buffers this capture pinned besides `buffers`' inputs and outputs.
    pub fn intermediate_bytes(&self, buffers: RunBuffers<'_>) -> u64 {
        let roles = buffers.roles();
        self.pins
            .buffers
            .values()
            .filter(|buffer| !roles.contains_key(&buffer.id))
            .map(|buffer| buffer.size())
            .sum()
    }
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Capture")
            .field("commands", &self.commands.len())
            .field("pinned_bytes", &self.pins.bytes())
            .finish()
    }
}

/// Where a run's inputs and outputs are, as the caller saw them.
#[derive(Debug, Clone, Copy)]
pub struct RunBuffers<'a> {
    pub inputs: &'a [&'a DeviceBuffer],
    pub outputs: &'a [&'a DeviceBuffer],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Input(usize),
    Output(usize),
}

/// Where a replay's output buffer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutputSource {
    /// A new buffer.
    Fresh,
    /// The buffer of this input (an output that is a view of an input).
    Input(usize),
    /// The buffer of this earlier output.
    Earlier(usize),
}

impl RunBuffers<'_> {
    /// Each buffer's role by id: the first input or, for buffers no input has, the first
    /// output that holds it.
    fn roles(&self) -> HashMap<u64, Role> {
        let mut roles = HashMap::new();
        for (index, input) in self.inputs.iter().enumerate() {
            roles.entry(input.raw().id).or_insert(Role::Input(index));
        }
        for (index, output) in self.outputs.iter().enumerate() {
            roles.entry(output.raw().id).or_insert(Role::Output(index));
        }
        roles
    }

    fn output_sources(&self) -> Vec<OutputSource> {
        let roles = self.roles();
        self.outputs
            .iter()
            .enumerate()
            .map(|(index, output)| match roles[&output.raw().id] {
                Role::Input(input) => OutputSource::Input(input),
                Role::Output(earlier) if earlier < index => OutputSource::Earlier(earlier),
                Role::Output(_) => OutputSource::Fresh,
            })
            .collect()
    }
}

/// A word of a parameter block that holds an input's or output's address.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    role: Role,
    offset: u64,
}

/// A parameter block of the replay whose template needs slots written each run.
#[derive(Debug)]
struct ParamsPatch {
    offset: u64,
    template: Vec<u8>,
    slots: Vec<Slot>,
}

/// A dispatch whose push constants hold an input's or output's address: recorded afresh on
/// each replay, between the recorded parts.
pub(crate) struct LiveDispatch {
    pub(crate) pipeline: Arc<Pipeline>,
    pub(crate) groups: [u32; 3],
    /// The push constants with the parameter block's address in place; slots to fill.
    template: Vec<u8>,
    slots: Vec<Slot>,
    /// Whether its accesses need a barrier after the dispatch before it in the same part.
    pub(crate) barrier_before: bool,
}

/// One part of a replay, in order.
pub(crate) enum Segment {
    /// A secondary command buffer recorded once, executed again by each replay.
    Recorded(vk::CommandBuffer),
    /// Recorded by each replay into the stream's command buffer.
    Live(Vec<LiveDispatch>),
}

/// What a batch holding a replay keeps alive: the secondary command buffers (in a pool of
/// their own, so dropping them from any thread is safe), the parameter buffer, pipelines and
/// intermediates.
pub(crate) struct ReplayCommands {
    /// Not used after recording; the mutex only makes the pool shareable between threads.
    _command_pool: parking_lot::Mutex<CommandPool>,
    pub(crate) segments: Vec<Segment>,
    params: Option<Arc<RawBuffer>>,
    _pipelines: Vec<Arc<Pipeline>>,
    intermediates: Pins,
    held: Vec<Arc<RawBuffer>>,
    dispatches: u64,
    /// Barriers in the recorded parts.
    barriers: u64,
}

impl ReplayCommands {
    /// The intermediate buffers the replay writes.
    pub(crate) fn buffers(&self) -> impl Iterator<Item = &Arc<RawBuffer>> {
        self.held.iter()
    }

    /// The parameter buffer the replay reads, if it has parameter blocks.
    pub(crate) fn params(&self) -> impl Iterator<Item = &Arc<RawBuffer>> {
        self.params.iter()
    }

    pub(crate) fn dispatches(&self) -> u64 {
        self.dispatches
    }

    pub(crate) fn barriers(&self) -> u64 {
        self.barriers
    }
}

impl Drop for ReplayCommands {
    fn drop(&mut self) {
        if let Some(params) = self.params.take() {
            self.intermediates.pool.release(params);
        }
    }
}

/// A recorded command buffer that runs a captured run again on new inputs, into new outputs.
pub struct Replay {
    device: Arc<Device>,
    commands: Arc<ReplayCommands>,
    input_count: usize,
    /// Each output's buffer, by output position, and the bytes of a fresh one.
    outputs: Vec<(OutputSource, u64)>,
    patches: Vec<ParamsPatch>,
    /// Fills of outputs, done on the new outputs before the replay.
    output_fills: Vec<(usize, u32)>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Replay")
            .field("dispatches", &self.commands.dispatches)
            .field("patched_blocks", &self.patches.len())
            .field("intermediate_bytes", &self.commands.intermediates.bytes())
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Starts capturing the calling thread's commands for a [`Replay`]; false (and nothing
    /// changes) when a capture is already running on this device.
    pub fn begin_capture(&self) -> bool {
        self.stream.lock().begin_capture(self.pool.clone())
    }

    /// Ends the running capture: its commands, or why they cannot be replayed.
    pub fn end_capture(&self) -> std::result::Result<Capture, Spoiled> {
        let log = self.stream.lock().end_capture().ok_or(Spoiled {
            reason: "no capture was running",
            transient: true,
        })?;
        if let Some(reason) = log.spoiled {
            return Err(reason);
        }
        Ok(Capture {
            commands: log.commands,
            pins: log.pins,
        })
    }
}

/// The per-command pairing of two captures: each pair of declared buffers must play the same
/// role, and intermediate buffers must alias alike.
struct Pairing<'a> {
    first_roles: HashMap<u64, Role>,
    second_roles: HashMap<u64, Role>,
    forward: HashMap<u64, u64>,
    backward: HashMap<u64, u64>,
    first_ids: &'a HashMap<u64, Arc<RawBuffer>>,
}

impl Pairing<'_> {
    fn pair(
        &mut self,
        first: &(Arc<RawBuffer>, bool),
        second: &(Arc<RawBuffer>, bool),
    ) -> std::result::Result<Option<Role>, &'static str> {
        let ((a, a_written), (b, b_written)) = (first, second);
        if a_written != b_written {
            return Err("the two runs declared different accesses");
        }
        let role = self.first_roles.get(&a.id).copied();
        if role != self.second_roles.get(&b.id).copied() {
            return Err("the two runs used their inputs and outputs differently");
        }
        if matches!(role, Some(Role::Input(_))) && *a_written {
            return Err("the run writes one of its inputs");
        }
        if role.is_some() && self.first_ids.contains_key(&b.id) {
            return Err("the second run's inputs or outputs were used by the first");
        }
        if role.is_none() {
            if a.id == b.id && *a_written {
                return Err("the run writes a buffer both runs share");
            }
            if a.size() != b.size() {
                return Err("an intermediate buffer changed size between the runs");
            }
            let forward = *self.forward.entry(a.id).or_insert(b.id);
            let backward = *self.backward.entry(b.id).or_insert(a.id);
            if forward != b.id || backward != a.id {
                return Err("the two runs shared intermediate buffers differently");
            }
        }
        Ok(role)
    }
}

/// One declared buffer of a command in both runs, and its role.
struct PairedAccess<'a> {
    first: &'a Arc<RawBuffer>,
    role: Option<Role>,
    second: &'a Arc<RawBuffer>,
}

/// The slots of one argument block: every 8-byte word that differs between the runs must be an
/// address inside the same declared buffer, at the same offset, in both.
fn argument_slots(
    first: &[u8],
    second: &[u8],
    accesses: &[PairedAccess<'_>],
) -> std::result::Result<Vec<Slot>, &'static str> {
    const CHANGED: &str = "a kernel argument that is no buffer address changed between the runs";
    if first.len() != second.len() {
        return Err("the two runs passed arguments of different sizes");
    }
    let words = first.len() / 8;
    if first[words * 8..] != second[words * 8..] {
        return Err(CHANGED);
    }
    let mut slots = Vec::new();
    for word in 0..words {
        let range = word * 8..word * 8 + 8;
        let a = u64::from_le_bytes(first[range.clone()].try_into().expect("8 bytes"));
        let b = u64::from_le_bytes(second[range].try_into().expect("8 bytes"));
        if a == b {
            continue;
        }
        let inside = accesses.iter().find_map(|access| {
            let offset = a.checked_sub(access.first.address)?;
            (offset < access.first.size() && access.second.address.checked_add(offset) == Some(b))
                .then_some((access.role, offset))
        });
        match inside {
            Some((Some(role), offset)) => slots.push(Slot {
                at: word * 8,
                role,
                offset,
            }),
            Some((None, _)) => {}
            None => return Err(CHANGED),
        }
    }
    Ok(slots)
}

impl Replay {
    /// The replay of `first`, learnt by comparing it with `second`, a capture of the same
    /// work on other inputs and outputs; or why the work cannot be replayed.
    pub fn new(
        device: &Arc<Device>,
        first: Capture,
        first_buffers: RunBuffers<'_>,
        second: Capture,
        second_buffers: RunBuffers<'_>,
    ) -> std::result::Result<Replay, String> {
        let refuse = |reason: &str| reason.to_owned();
        if first.commands.len() != second.commands.len() {
            return Err(refuse(
                "the two runs recorded different numbers of commands",
            ));
        }
        let sources = first_buffers.output_sources();
        if sources != second_buffers.output_sources() {
            return Err(refuse("the two runs' outputs shared buffers differently"));
        }
        let mut pairing = Pairing {
            first_roles: first_buffers.roles(),
            second_roles: second_buffers.roles(),
            forward: HashMap::new(),
            backward: HashMap::new(),
            first_ids: &first.pins.buffers,
        };
        let mut patches = Vec::new();
        let mut output_fills = Vec::new();
        let mut kept = Vec::new();
        let mut params_bytes = 0u64;
        for (a, b) in first.commands.iter().zip(&second.commands) {
            if a.accesses.len() != b.accesses.len() {
                return Err(refuse("the two runs declared different accesses"));
            }
            let mut roles = Vec::with_capacity(a.accesses.len());
            for (x, y) in a.accesses.iter().zip(&b.accesses) {
                roles.push(pairing.pair(x, y)?);
            }
            let paired: Vec<PairedAccess<'_>> = a
                .accesses
                .iter()
                .zip(&roles)
                .zip(&b.accesses)
                .map(|(((first, _), &role), (second, _))| PairedAccess {
                    first,
                    role,
                    second,
                })
                .collect();
            match (&a.op, &b.op) {
                (
                    LoggedOp::Dispatch {
                        pipeline,
                        groups,
                        push,
                        params,
                    },
                    LoggedOp::Dispatch {
                        pipeline: other_pipeline,
                        groups: other_groups,
                        push: other_push,
                        params: other_params,
                    },
                ) => {
                    if pipeline.handle() != other_pipeline.handle() || groups != other_groups {
                        return Err(refuse("the two runs dispatched different kernels"));
                    }
                    let push_slots = argument_slots(push, other_push, &paired)?;
                    match (params, other_params) {
                        (None, None) => {}
                        (Some((bytes, at)), Some((other_bytes, other_at))) if at == other_at => {
                            let slots = argument_slots(bytes, other_bytes, &paired)?;
                            if !slots.is_empty() {
                                patches.push(ParamsPatch {
                                    offset: params_bytes,
                                    template: bytes.clone(),
                                    slots,
                                });
                            }
                            params_bytes += (bytes.len() as u64)
                                .max(1)
                                .next_multiple_of(PARAMS_ALIGNMENT);
                        }
                        _ => return Err(refuse("the two runs passed different arguments")),
                    }
                    kept.push((a, Some(push_slots)));
                }
                (LoggedOp::Fill { word }, LoggedOp::Fill { word: other_word })
                    if word == other_word =>
                {
                    match roles[0] {
                        Some(Role::Output(index)) => output_fills.push((index, *word)),
                        Some(Role::Input(_)) => return Err(refuse("the run fills an input")),
                        None => kept.push((a, None)),
                    }
                }
                _ => return Err(refuse("the two runs recorded different commands")),
            }
        }
        let first_roles = &pairing.first_roles;
        let mut intermediates = Pins::new(first.pins.pool.clone());
        for buffer in first.pins.buffers.values() {
            if !first_roles.contains_key(&buffer.id) {
                intermediates.pin(buffer);
            }
        }
        let commands = record(device, &kept, params_bytes, intermediates)
            .map_err(|error| error.to_string())?;
        let outputs = sources
            .into_iter()
            .zip(first_buffers.outputs)
            .map(|(source, output)| (source, output.size()))
            .collect();
        Ok(Replay {
            device: device.clone(),
            commands: Arc::new(commands),
            input_count: first_buffers.inputs.len(),
            outputs,
            patches,
            output_fills,
        })
    }

    /// Runs the captured work again on `inputs` (each laid out as in the first run), into new
    /// output buffers of the first run's sizes, returned by output position.
    pub fn run(&self, inputs: &[&Arc<DeviceBuffer>]) -> Result<Vec<Arc<DeviceBuffer>>> {
        const OP: &str = "replay";
        if inputs.len() != self.input_count {
            return Err(Error::BadOperands {
                op: OP,
                shapes: Vec::new(),
                dtypes: Vec::new(),
                detail: format!(
                    "{} input buffers for a replay of {}",
                    inputs.len(),
                    self.input_count
                ),
            });
        }
        let mut outputs: Vec<Arc<DeviceBuffer>> = Vec::with_capacity(self.outputs.len());
        for &(source, bytes) in &self.outputs {
            outputs.push(match source {
                OutputSource::Fresh => Arc::new(self.device.alloc(OP, bytes)?),
                OutputSource::Input(input) => inputs[input].clone(),
                OutputSource::Earlier(earlier) => outputs[earlier].clone(),
            });
        }
        let address = |slot: &Slot| match slot.role {
            Role::Input(index) => inputs[index].device_address() + slot.offset,
            Role::Output(index) => outputs[index].device_address() + slot.offset,
        };
        let params = self.commands.params.as_ref();
        let mut stream = self.device.stream.lock();
        let result = (|| {
            for patch in &self.patches {
                let params = params.expect("patches lie in the parameter buffer");
                let mut bytes = patch.template.clone();
                for slot in &patch.slots {
                    bytes[slot.at..slot.at + 8].copy_from_slice(&address(slot).to_le_bytes());
                }
                bytes.resize(bytes.len().next_multiple_of(4), 0);
                for (index, piece) in bytes.chunks(UPDATE_LIMIT).enumerate() {
                    let offset = patch.offset + (index * UPDATE_LIMIT) as u64;
                    stream.update(params, offset, piece)?;
                }
            }
            for &(index, word) in &self.output_fills {
                stream.fill(outputs[index].raw(), word)?;
            }
            let inputs: Vec<&Arc<RawBuffer>> = inputs.iter().map(|input| input.raw()).collect();
            let live_push = |dispatch: &LiveDispatch| {
                let mut push = dispatch.template.clone();
                for slot in &dispatch.slots {
                    push[slot.at..slot.at + 8].copy_from_slice(&address(slot).to_le_bytes());
                }
                push
            };
            let outputs: Vec<&Arc<RawBuffer>> = outputs.iter().map(|output| output.raw()).collect();
            stream.replay(&self.commands, &inputs, &outputs, live_push)
        })();
        drop(stream);
        self.device.guard(result)?;
        Ok(outputs)
    }
}

/// A command to record, with the slots of its push constants when it is a dispatch.
type KeptCommand<'a> = (&'a LoggedCommand, Option<Vec<Slot>>);

/// Fewest commands between two live dispatches worth a secondary command buffer: executed
/// secondaries cost GPU time on the H200 (mlp_step_f32_b256: 0.364 ms with one for every run
/// between GEMMs, 0.342 with the short runs recorded by each replay, 0.278 stage by stage).
const MIN_SECONDARY_COMMANDS: usize = 8;

/// For each command, whether each replay records it: dispatches with push-constant slots, and
/// dispatches in runs between them too short for a secondary (a run with a fill is always one).
fn recorded_per_replay(commands: &[KeptCommand<'_>]) -> Vec<bool> {
    let live = |(command, slots): &KeptCommand<'_>| {
        matches!(command.op, LoggedOp::Dispatch { .. })
            && slots.as_ref().is_some_and(|slots| !slots.is_empty())
    };
    let mut inline: Vec<bool> = commands.iter().map(live).collect();
    let mut start = 0;
    while start < commands.len() {
        if inline[start] {
            start += 1;
            continue;
        }
        let end = (start..commands.len())
            .find(|&index| inline[index])
            .unwrap_or(commands.len());
        let has_fill = commands[start..end]
            .iter()
            .any(|(command, _)| matches!(command.op, LoggedOp::Fill { .. }));
        let bounded = start > 0 || end < commands.len();
        if bounded && !has_fill && end - start < MIN_SECONDARY_COMMANDS {
            inline[start..end].fill(true);
        }
        start = end;
    }
    inline
}

/// Records `commands` once: runs of dispatches and fills without push-constant slots into
/// command buffers of their own pool, the others as live dispatches between them; parameter
/// blocks in one buffer of `params_bytes`; barriers where the accesses need them.
fn record(
    device: &Arc<Device>,
    commands: &[KeptCommand<'_>],
    params_bytes: u64,
    intermediates: Pins,
) -> Result<ReplayCommands> {
    let vk_device = device.vk_device.clone();
    let command_pool = CommandPool::new(
        vk_device.clone(),
        CommandPoolCreateInfo {
            queue_family_index: device.adapter.compute_queue_family,
            ..Default::default()
        },
    )
    .map_err(|error| Error::vulkan("create replay command pool", error))?;
    let params = match params_bytes {
        0 => None,
        bytes => Some(
            device
                .pool
                .acquire("replay parameters", MemoryKind::Params, bytes)?,
        ),
    };
    let mut replay = ReplayCommands {
        _command_pool: parking_lot::Mutex::new(command_pool),
        segments: Vec::new(),
        params,
        _pipelines: Vec::new(),
        intermediates,
        held: Vec::new(),
        dispatches: 0,
        barriers: 0,
    };
    let mut recorder = Recorder {
        device,
        open: None,
        hazards: HazardTracker::default(),
        bound: vk::Pipeline::null(),
    };
    let inline = recorded_per_replay(commands);
    let mut params_used = 0u64;
    let mut held: HashMap<u64, Arc<RawBuffer>> = HashMap::new();
    for ((command, push_slots), inline) in commands.iter().zip(inline) {
        for (buffer, _) in &command.accesses {
            if replay.intermediates.buffers.contains_key(&buffer.id) {
                held.entry(buffer.id).or_insert_with(|| buffer.clone());
            }
        }
        match &command.op {
            LoggedOp::Dispatch {
                pipeline,
                groups,
                push,
                params,
            } => {
                let mut push = push.clone();
                if let Some((bytes, at)) = params {
                    let address = replay.write_params(params_used, bytes)?;
                    push[*at..*at + 8].copy_from_slice(&address.to_le_bytes());
                    params_used += (bytes.len() as u64)
                        .max(1)
                        .next_multiple_of(PARAMS_ALIGNMENT);
                }
                replay.dispatches += 1;
                replay._pipelines.push(pipeline.clone());
                let slots = push_slots.clone().unwrap_or_default();
                if !inline {
                    let command_buffer = recorder.open(&mut replay)?;
                    let barrier = recorder.hazards(command);
                    replay.barriers += u64::from(barrier);
                    // SAFETY: recording; the pipeline is kept alive by the replay, the push
                    // constants were valid for the layout when first recorded, and every
                    // buffer the kernel addresses is pinned by the replay or passed to each run.
                    unsafe { recorder.dispatch(command_buffer, barrier, pipeline, *groups, &push) };
                } else {
                    recorder.close(&mut replay)?;
                    let live = LiveDispatch {
                        pipeline: pipeline.clone(),
                        groups: *groups,
                        template: push,
                        slots,
                        barrier_before: recorder.hazards(command),
                    };
                    match replay.segments.last_mut() {
                        Some(Segment::Live(dispatches)) => dispatches.push(live),
                        _ => replay.segments.push(Segment::Live(vec![live])),
                    }
                }
            }
            LoggedOp::Fill { word } => {
                let command_buffer = recorder.open(&mut replay)?;
                let barrier = recorder.hazards(command);
                replay.barriers += u64::from(barrier);
                let (target, _) = &command.accesses[0];
                // SAFETY: recording; the buffer is an intermediate the replay pins.
                unsafe { recorder.fill(command_buffer, barrier, target, *word) };
            }
        }
    }
    recorder.close(&mut replay)?;
    if let Some(params) = &replay.params {
        params.flush_from_host();
    }
    replay.held = held.into_values().collect();
    Ok(replay)
}

impl ReplayCommands {
    /// Copies a parameter block to `offset` of the replay's parameter buffer; its address.
    fn write_params(&self, offset: u64, bytes: &[u8]) -> Result<u64> {
        let buffer = self.params.as_ref().expect("sized for every block");
        let mapped = buffer.mapped().ok_or_else(|| Error::Vulkan {
            op: "replay parameters",
            detail: "parameter memory is not host-visible".into(),
        })?;
        // SAFETY: the buffer is host-visible, new to this replay and not yet used by the GPU;
        // the blocks were sized to fit (`params_bytes`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                mapped.as_ptr().cast::<u8>().add(offset as usize),
                bytes.len(),
            )
        };
        Ok(buffer.address + offset)
    }
}

/// Records the replay's parts: the open secondary command buffer, the bound pipeline, and one
/// barrier tracking over all parts, as if they were one command buffer (they run inside the
/// stream's, which orders the replay after earlier commands).
struct Recorder<'a> {
    device: &'a Arc<Device>,
    open: Option<vk::CommandBuffer>,
    hazards: HazardTracker,
    bound: vk::Pipeline,
}

const STAGES: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
);

impl Recorder<'_> {
    /// Whether `command` needs a barrier before it.
    fn hazards(&mut self, command: &LoggedCommand) -> bool {
        let ids = |written: bool| -> Vec<u64> {
            command
                .accesses
                .iter()
                .filter(|(_, write)| *write == written)
                .map(|(buffer, _)| buffer.id)
                .collect()
        };
        self.hazards.access(&ids(false), &ids(true))
    }

    /// The open secondary command buffer, begun if none is open.
    fn open(&mut self, replay: &mut ReplayCommands) -> Result<vk::CommandBuffer> {
        if let Some(command_buffer) = self.open {
            return Ok(command_buffer);
        }
        let command_buffer = replay
            ._command_pool
            .lock()
            .allocate_command_buffers(CommandBufferAllocateInfo {
                level: CommandBufferLevel::Secondary,
                command_buffer_count: 1,
                ..Default::default()
            })
            .map_err(|error| Error::vulkan("allocate replay command buffer", error))?
            .next()
            .ok_or_else(|| Error::Vulkan {
                op: "allocate replay command buffer",
                detail: "the pool returned none".into(),
            })?
            .handle();
        let fns = self.device.vk_device.fns();
        let inheritance = vk::CommandBufferInheritanceInfo::default();
        let begin_info = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE)
            .inheritance_info(&inheritance);
        // SAFETY: a new command buffer of a pool only this replay uses.
        let result = unsafe { (fns.v1_0.begin_command_buffer)(command_buffer, &begin_info) };
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan(
                "begin replay command buffer",
                vulkano::VulkanError::from(result),
            ));
        }
        // A secondary command buffer inherits no bound pipeline.
        self.bound = vk::Pipeline::null();
        self.open = Some(command_buffer);
        Ok(command_buffer)
    }

    /// Ends the open secondary command buffer, if any, as the replay's next part.
    fn close(&mut self, replay: &mut ReplayCommands) -> Result<()> {
        let Some(command_buffer) = self.open.take() else {
            return Ok(());
        };
        let fns = self.device.vk_device.fns();
        // SAFETY: recording, every command complete.
        let result = unsafe { (fns.v1_0.end_command_buffer)(command_buffer) };
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan(
                "end replay command buffer",
                vulkano::VulkanError::from(result),
            ));
        }
        replay.segments.push(Segment::Recorded(command_buffer));
        Ok(())
    }

    /// # Safety
    /// `command_buffer` is recording; the pipeline and every buffer it addresses outlive it.
    unsafe fn dispatch(
        &mut self,
        command_buffer: vk::CommandBuffer,
        barrier: bool,
        pipeline: &Arc<Pipeline>,
        groups: [u32; 3],
        push: &[u8],
    ) {
        let fns = self.device.vk_device.fns();
        // SAFETY: guaranteed by the caller.
        unsafe {
            if barrier {
                record_global_barrier(fns, command_buffer, STAGES);
            }
            if self.bound != pipeline.handle() {
                (fns.v1_0.cmd_bind_pipeline)(
                    command_buffer,
                    vk::PipelineBindPoint::COMPUTE,
                    pipeline.handle(),
                );
                self.bound = pipeline.handle();
            }
            if !push.is_empty() {
                (fns.v1_0.cmd_push_constants)(
                    command_buffer,
                    self.device.layout.handle(),
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    push.len() as u32,
                    push.as_ptr().cast(),
                );
            }
            (fns.v1_0.cmd_dispatch)(command_buffer, groups[0], groups[1], groups[2]);
        }
    }

    /// # Safety
    /// `command_buffer` is recording; `target` outlives it.
    unsafe fn fill(
        &mut self,
        command_buffer: vk::CommandBuffer,
        barrier: bool,
        target: &RawBuffer,
        word: u32,
    ) {
        let fns = self.device.vk_device.fns();
        // SAFETY: guaranteed by the caller.
        unsafe {
            if barrier {
                record_global_barrier(fns, command_buffer, STAGES);
            }
            (fns.v1_0.cmd_fill_buffer)(
                command_buffer,
                target.buffer.buffer().handle(),
                target.buffer.offset(),
                target.buffer.size() & !3,
                word,
            )
        };
    }
}
