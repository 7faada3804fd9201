//! The command stream: one queue, one command buffer being recorded, batches in flight.
//!
//! Work is recorded, not executed: dispatches and copies go into the current command buffer
//! with the barriers [`HazardTracker`] asks for. The buffer is submitted when the host needs a
//! result (a read-back or [`Stream::wait_idle`]), or when it holds `submit_threshold`
//! dispatches. Each submission signals the stream's timeline semaphore with its sequence
//! number; waiting spins briefly on the counter (a blocking wait costs tens of microseconds on
//! some drivers) and then blocks with the configured timeout, which is an error, never a hang.
//! Resources a batch uses are kept alive until its sequence number completes.
//!
//! Commands are recorded through vulkano's handles with the raw entry points: with device
//! addresses there are no descriptor sets for vulkano to track, and its checked recording
//! would cost more than the dispatch itself (DESIGN.md, decision 5: under 5 us a dispatch).

use crate::capture::{CaptureLog, ReplayCommands, Segment};
use crate::counters::Counters;
use crate::hazard::HazardTracker;
use crate::memory::{BufferPool, RawBuffer};
use crate::pipeline::Pipeline;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};
use vulkano::VulkanObject;
use vulkano::command_buffer::pool::{
    CommandBufferAllocateInfo, CommandPool, CommandPoolAlloc, CommandPoolCreateFlags,
    CommandPoolCreateInfo,
};
use vulkano::device::{Device as VkDevice, Queue};
use vulkano::pipeline::PipelineLayout;
use vulkano::sync::semaphore::{Semaphore, SemaphoreCreateInfo, SemaphoreType, SemaphoreWaitInfo};

use ash::vk;

/// How long a wait spins on the timeline counter without giving up the CPU.
const SPIN: Duration = Duration::from_micros(100);
/// How long a wait then keeps polling, yielding the CPU between polls, before it blocks in the
/// driver. A blocking wait can wake up late (the H200 moved 0.7 GB/s down in 16 MiB chunks
/// that each blocked), so short and medium GPU work is polled and only long work sleeps.
const POLL_BEFORE_BLOCKING: Duration = Duration::from_millis(20);

/// A buffer access of one recorded command.
#[derive(Debug, Clone, Copy)]
pub enum Access<'a> {
    Read(&'a Arc<RawBuffer>),
    Write(&'a Arc<RawBuffer>),
}

/// What a batch holds until the GPU is done with it.
#[derive(Default)]
struct Resources {
    /// Buffers the commands use; released to nobody, only kept alive.
    keep_alive: Vec<Arc<RawBuffer>>,
    /// Staging and parameter buffers owned by the batch; returned to the pool when it completes.
    recycle: Vec<Arc<RawBuffer>>,
    pipelines: Vec<Arc<Pipeline>>,
    /// Replays recorded into the batch (their command buffers, parameters and buffers).
    replays: Vec<Arc<ReplayCommands>>,
}

struct Recording {
    command_buffer: CommandPoolAlloc,
    sequence: u64,
    commands: u32,
    resources: Resources,
    bound_pipeline: vk::Pipeline,
    /// Current parameter chunk and how many of its bytes are used.
    params: Option<(Arc<RawBuffer>, u64)>,
}

struct Batch {
    sequence: u64,
    command_buffer: CommandPoolAlloc,
    resources: Resources,
}

pub(crate) struct Stream {
    device: Arc<VkDevice>,
    queue: Arc<Queue>,
    /// The stream's own pool: Vulkan command pools must not be used from two threads at once,
    /// and the stream is only used under its mutex.
    command_pool: CommandPool,
    /// Reset command buffers ready for reuse.
    spare_command_buffers: Vec<CommandPoolAlloc>,
    layout: Arc<PipelineLayout>,
    timeline: Arc<Semaphore>,
    counters: Arc<Counters>,
    submit_threshold: u32,
    timeout: Duration,
    recording: Option<Recording>,
    next_sequence: u64,
    completed: u64,
    in_flight: VecDeque<Batch>,
    hazards: HazardTracker,
    /// The commands being captured for replay, if a capture runs (`capture.rs`).
    capture: Option<CaptureLog>,
}

const PARAMS_CHUNK_BYTES: u64 = 64 * 1024;
const PARAMS_ALIGNMENT: u64 = 16;

impl Stream {
    pub(crate) fn new(
        queue: Arc<Queue>,
        layout: Arc<PipelineLayout>,
        counters: Arc<Counters>,
        submit_threshold: u32,
        timeout: Duration,
    ) -> Result<Self> {
        let device = queue.device().clone();
        let timeline = Semaphore::new(
            device.clone(),
            SemaphoreCreateInfo {
                semaphore_type: SemaphoreType::Timeline,
                initial_value: 0,
                ..Default::default()
            },
        )
        .map_err(|error| Error::vulkan("create timeline semaphore", error))?;
        let command_pool = CommandPool::new(
            device.clone(),
            CommandPoolCreateInfo {
                flags: CommandPoolCreateFlags::RESET_COMMAND_BUFFER
                    | CommandPoolCreateFlags::TRANSIENT,
                queue_family_index: queue.queue_family_index(),
                ..Default::default()
            },
        )
        .map_err(|error| Error::vulkan("create command pool", error))?;
        Ok(Stream {
            command_pool,
            spare_command_buffers: Vec::new(),
            device,
            queue,
            layout,
            timeline: Arc::new(timeline),
            counters,
            submit_threshold,
            timeout,
            recording: None,
            next_sequence: 1,
            completed: 0,
            in_flight: VecDeque::new(),
            hazards: HazardTracker::default(),
            capture: None,
        })
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The sequence number the next recorded command will complete with.
    pub(crate) fn recording_sequence(&self) -> u64 {
        self.recording
            .as_ref()
            .map_or(self.next_sequence, |recording| recording.sequence)
    }

    fn recording(&mut self) -> Result<&mut Recording> {
        if self.recording.is_none() {
            let command_buffer = match self.spare_command_buffers.pop() {
                Some(command_buffer) => command_buffer,
                None => self
                    .command_pool
                    .allocate_command_buffers(CommandBufferAllocateInfo {
                        command_buffer_count: 1,
                        ..Default::default()
                    })
                    .map_err(|error| Error::vulkan("allocate command buffer", error))?
                    .next()
                    .ok_or_else(|| Error::Vulkan {
                        op: "allocate command buffer",
                        detail: "the pool returned none".into(),
                    })?,
            };
            let begin_info = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            // SAFETY: the command buffer comes from this stream's pool, is in the initial state
            // (new, or reset when its batch retired) and is used only under the stream's lock.
            let result = unsafe {
                (self.device.fns().v1_0.begin_command_buffer)(command_buffer.handle(), &begin_info)
            };
            if result != vk::Result::SUCCESS {
                return Err(Error::vulkan(
                    "begin command buffer",
                    vulkano::VulkanError::from(result),
                ));
            }
            let sequence = self.next_sequence;
            self.next_sequence += 1;
            // Earlier batches may still write what this one reads: one barrier orders this
            // command buffer after everything submitted before it on the queue.
            self.hazards.clear();
            Counters::add(&self.counters.barriers, 1);
            let fns = self.device.fns();
            // SAFETY: the command buffer is in the recording state and owned by this stream.
            unsafe {
                record_global_barrier(
                    fns,
                    command_buffer.handle(),
                    vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                )
            };
            self.recording = Some(Recording {
                command_buffer,
                sequence,
                commands: 0,
                resources: Resources::default(),
                bound_pipeline: vk::Pipeline::null(),
                params: None,
            });
        }
        Ok(self.recording.as_mut().expect("just created"))
    }

    /// Records the barrier a command's accesses need and keeps its buffers alive.
    fn track(&mut self, accesses: &[Access<'_>]) -> Result<()> {
        if let Some(capture) = &mut self.capture
            && capture.owner != std::thread::current().id()
        {
            capture.spoil_by_other_thread();
        }
        // Open the command buffer first: opening one resets the tracker, which must not forget
        // this command's accesses (the H200 lost increments of a dependent chain that way).
        self.recording()?;
        let mut reads = smallvec::SmallVec::<[u64; 8]>::new();
        let mut writes = smallvec::SmallVec::<[u64; 4]>::new();
        for access in accesses {
            match access {
                Access::Read(buffer) => reads.push(buffer.id),
                Access::Write(buffer) => writes.push(buffer.id),
            }
        }
        let needs_barrier = self.hazards.access(&reads, &writes);
        if needs_barrier {
            Counters::add(&self.counters.barriers, 1);
        }
        let device = self.device.clone();
        let fns = device.fns();
        let recording = self.recording()?;
        if needs_barrier {
            // SAFETY: the command buffer is recording; the barrier references no resources.
            unsafe {
                record_global_barrier(
                    fns,
                    recording.command_buffer.handle(),
                    vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                )
            };
        }
        let sequence = recording.sequence;
        for access in accesses {
            let (Access::Read(buffer) | Access::Write(buffer)) = access;
            buffer.mark_used(sequence);
            recording.resources.keep_alive.push(Arc::clone(buffer));
        }
        Ok(())
    }

    /// Records one dispatch of `pipeline` with `push_constants`, after any barrier it needs.
    pub(crate) fn dispatch(
        &mut self,
        pipeline: &Arc<Pipeline>,
        group_counts: [u32; 3],
        push_constants: &[u8],
        accesses: &[Access<'_>],
    ) -> Result<()> {
        self.track(accesses)?;
        let device = self.device.clone();
        let fns = device.fns();
        let layout = self.layout.handle();
        let recording = self.recording()?;
        let handle = recording.command_buffer.handle();
        // SAFETY: the command buffer is recording; the pipeline and layout are alive (the batch
        // keeps the pipeline); push constants fit the layout's range (checked by the caller);
        // every buffer the kernel addresses is kept alive by `track` and ordered by barriers.
        unsafe {
            if recording.bound_pipeline != pipeline.handle() {
                (fns.v1_0.cmd_bind_pipeline)(
                    handle,
                    vk::PipelineBindPoint::COMPUTE,
                    pipeline.handle(),
                );
                recording.bound_pipeline = pipeline.handle();
                recording.resources.pipelines.push(pipeline.clone());
            }
            if !push_constants.is_empty() {
                (fns.v1_0.cmd_push_constants)(
                    handle,
                    layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    push_constants.len() as u32,
                    push_constants.as_ptr().cast(),
                );
            }
            (fns.v1_0.cmd_dispatch)(handle, group_counts[0], group_counts[1], group_counts[2]);
        }
        Counters::add(&self.counters.dispatches, 1);
        self.after_command()
    }

    /// Records a buffer-to-buffer copy of `bytes` bytes.
    pub(crate) fn copy(
        &mut self,
        source: &Arc<RawBuffer>,
        source_offset: u64,
        target: &Arc<RawBuffer>,
        target_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.track(&[Access::Read(source), Access::Write(target)])?;
        let device = self.device.clone();
        let fns = device.fns();
        let recording = self.recording()?;
        let region = vk::BufferCopy {
            src_offset: source.buffer.offset() + source_offset,
            dst_offset: target.buffer.offset() + target_offset,
            size: bytes,
        };
        // SAFETY: both buffers are alive for the batch (tracked above) and the region lies
        // inside them (checked by the callers, which size staging buffers to the copy).
        unsafe {
            (fns.v1_0.cmd_copy_buffer)(
                recording.command_buffer.handle(),
                source.buffer.buffer().handle(),
                target.buffer.buffer().handle(),
                1,
                &region,
            )
        };
        self.after_command()
    }

    /// Records a fill of a whole buffer with a repeated 32-bit word.
    pub(crate) fn fill(&mut self, target: &Arc<RawBuffer>, word: u32) -> Result<()> {
        self.track(&[Access::Write(target)])?;
        let device = self.device.clone();
        let fns = device.fns();
        let recording = self.recording()?;
        // SAFETY: the buffer is alive for the batch; WHOLE_SIZE fills it to its end.
        unsafe {
            (fns.v1_0.cmd_fill_buffer)(
                recording.command_buffer.handle(),
                target.buffer.buffer().handle(),
                target.buffer.offset(),
                target.buffer.size() & !3,
                word,
            )
        };
        self.after_command()
    }

    /// Copies `bytes` into the current batch's parameter memory and returns its device address.
    pub(crate) fn params(&mut self, pool: &BufferPool, bytes: &[u8]) -> Result<u64> {
        let size = (bytes.len() as u64)
            .max(1)
            .next_multiple_of(PARAMS_ALIGNMENT);
        let recording = self.recording()?;
        let fits = recording
            .params
            .as_ref()
            .is_some_and(|(chunk, used)| used + size <= chunk.size());
        if !fits {
            let chunk = pool.acquire(
                "kernel parameters",
                crate::memory::MemoryKind::Params,
                size.max(PARAMS_CHUNK_BYTES),
            )?;
            if let Some((old, _)) = recording.params.replace((chunk, 0)) {
                old.flush_from_host();
                recording.resources.recycle.push(old);
            }
        }
        let (chunk, used) = recording.params.as_mut().expect("set above");
        let mapped = chunk.mapped().ok_or_else(|| Error::Vulkan {
            op: "kernel parameters",
            detail: "parameter memory is not host-visible".into(),
        })?;
        // SAFETY: the chunk is host-visible, owned by this batch and not yet submitted, so the
        // GPU cannot read it; `used + len <= size` was checked above.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                mapped.as_ptr().cast::<u8>().add(*used as usize),
                bytes.len(),
            )
        };
        let address = chunk.address + *used;
        *used += size;
        Ok(address)
    }

    /// Hands a staging buffer to the current batch, to be pooled again once it completes.
    pub(crate) fn recycle_after_batch(&mut self, buffer: Arc<RawBuffer>) -> Result<()> {
        self.recording()?.resources.recycle.push(buffer);
        Ok(())
    }

    fn after_command(&mut self) -> Result<()> {
        let recording = self
            .recording
            .as_mut()
            .expect("a command was just recorded");
        recording.commands += 1;
        if recording.commands >= self.submit_threshold {
            self.submit()?;
        }
        Ok(())
    }

    /// Submits the current command buffer, if any, without waiting.
    pub(crate) fn submit(&mut self) -> Result<()> {
        let Some(mut recording) = self.recording.take() else {
            return Ok(());
        };
        if let Some((chunk, _)) = recording.params.take() {
            chunk.flush_from_host();
            recording.resources.recycle.push(chunk);
        }
        let fns = self.device.fns();
        // SAFETY: recording; makes every write of the batch visible to host reads after the
        // timeline wait.
        unsafe {
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            (fns.v1_0.cmd_pipeline_barrier)(
                recording.command_buffer.handle(),
                vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                1,
                &barrier,
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
            );
        }
        // SAFETY: the command buffer is recording and every command in it is complete.
        let result = unsafe { (fns.v1_0.end_command_buffer)(recording.command_buffer.handle()) };
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan(
                "end command buffer",
                vulkano::VulkanError::from(result),
            ));
        }
        let command_buffer = recording.command_buffer;
        let signal_value = recording.sequence;
        let command_buffer_handle = command_buffer.handle();
        let semaphore_handle = self.timeline.handle();
        let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default()
            .signal_semaphore_values(std::slice::from_ref(&signal_value));
        let submit_info = vk::SubmitInfo::default()
            .command_buffers(std::slice::from_ref(&command_buffer_handle))
            .signal_semaphores(std::slice::from_ref(&semaphore_handle))
            .push_next(&mut timeline_info);
        let result = self.queue.with(|_guard| {
            // SAFETY: the queue is locked (external synchronisation); the command buffer and
            // semaphore are alive until the batch completes (held in `in_flight`); the signal
            // value is larger than any earlier one.
            unsafe {
                (fns.v1_0.queue_submit)(self.queue.handle(), 1, &submit_info, vk::Fence::null())
            }
        });
        if result != vk::Result::SUCCESS {
            return Err(Error::vulkan(
                "queue submit",
                vulkano::VulkanError::from(result),
            ));
        }
        Counters::add(&self.counters.submits, 1);
        self.in_flight.push_back(Batch {
            sequence: recording.sequence,
            command_buffer,
            resources: recording.resources,
        });
        Ok(())
    }

    /// Starts logging the calling thread's commands for replay; false when a capture runs.
    pub(crate) fn begin_capture(&mut self, pool: Arc<BufferPool>) -> bool {
        if self.capture.is_some() {
            return false;
        }
        self.capture = Some(CaptureLog::new(pool));
        true
    }

    /// The running capture's log, if any.
    pub(crate) fn capture_log(&mut self) -> Option<&mut CaptureLog> {
        self.capture.as_mut()
    }

    /// Ends the running capture and returns its log.
    pub(crate) fn end_capture(&mut self) -> Option<CaptureLog> {
        self.capture.take()
    }

    /// Records a write of `bytes` (a multiple of 4, at most 65536) into `target` at `offset`,
    /// carried in the command buffer itself.
    pub(crate) fn update(
        &mut self,
        target: &Arc<RawBuffer>,
        offset: u64,
        bytes: &[u8],
    ) -> Result<()> {
        self.track(&[Access::Write(target)])?;
        let device = self.device.clone();
        let fns = device.fns();
        let recording = self.recording()?;
        // SAFETY: the buffer is alive for the batch (tracked above); the caller keeps the
        // range inside it and the size within vkCmdUpdateBuffer's limits.
        unsafe {
            (fns.v1_0.cmd_update_buffer)(
                recording.command_buffer.handle(),
                target.buffer.buffer().handle(),
                target.buffer.offset() + offset,
                bytes.len() as u64,
                bytes.as_ptr().cast(),
            )
        };
        self.after_command()
    }

    /// Records a replay of `commands` into the current command buffer: its recorded parts
    /// executed as secondary command buffers, its live dispatches recorded now with the push
    /// constants `live_push` gives them. The replay reads `inputs` and its parameter buffer
    /// and writes `outputs` and its intermediates: one barrier before it where earlier
    /// commands touch any of them; its own barriers order it inside.
    pub(crate) fn replay(
        &mut self,
        commands: &Arc<ReplayCommands>,
        inputs: &[&Arc<RawBuffer>],
        outputs: &[&Arc<RawBuffer>],
        live_push: impl Fn(&crate::capture::LiveDispatch) -> Vec<u8>,
    ) -> Result<()> {
        if let Some(capture) = &mut self.capture {
            if capture.owner == std::thread::current().id() {
                capture.spoil("a replay ran during the capture");
            } else {
                capture.spoil_by_other_thread();
            }
        }
        let reads: Vec<Access<'_>> = inputs
            .iter()
            .copied()
            .chain(commands.params())
            .map(Access::Read)
            .collect();
        let writes = outputs
            .iter()
            .copied()
            .chain(commands.buffers())
            .map(Access::Write);
        let accesses: Vec<Access<'_>> = reads.into_iter().chain(writes).collect();
        self.track(&accesses)?;
        let device = self.device.clone();
        let fns = device.fns();
        let layout = self.layout.handle();
        let recording = self.recording()?;
        let handle = recording.command_buffer.handle();
        let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
        let mut barriers = commands.barriers();
        for segment in &commands.segments {
            // SAFETY: the command buffer is recording; the secondary command buffers, their
            // pipelines and every buffer the replay addresses are kept alive by `commands`
            // (held by the batch below) and the tracked accesses.
            unsafe {
                match segment {
                    Segment::Recorded(secondary) => {
                        (fns.v1_0.cmd_execute_commands)(handle, 1, secondary);
                        // Executing secondaries leaves no pipeline bound in the primary.
                        recording.bound_pipeline = vk::Pipeline::null();
                    }
                    Segment::Live(dispatches) => {
                        for dispatch in dispatches {
                            if dispatch.barrier_before {
                                record_global_barrier(fns, handle, stages);
                                barriers += 1;
                            }
                            if recording.bound_pipeline != dispatch.pipeline.handle() {
                                (fns.v1_0.cmd_bind_pipeline)(
                                    handle,
                                    vk::PipelineBindPoint::COMPUTE,
                                    dispatch.pipeline.handle(),
                                );
                                recording.bound_pipeline = dispatch.pipeline.handle();
                            }
                            let push = live_push(dispatch);
                            (fns.v1_0.cmd_push_constants)(
                                handle,
                                layout,
                                vk::ShaderStageFlags::COMPUTE,
                                0,
                                push.len() as u32,
                                push.as_ptr().cast(),
                            );
                            let [x, y, z] = dispatch.groups;
                            (fns.v1_0.cmd_dispatch)(handle, x, y, z);
                        }
                    }
                }
            }
        }
        recording.resources.replays.push(commands.clone());
        recording.commands += commands.dispatches() as u32;
        let full = recording.commands >= self.submit_threshold;
        Counters::add(&self.counters.replays, 1);
        Counters::add(&self.counters.barriers, barriers);
        Counters::add(&self.counters.dispatches, commands.dispatches());
        Counters::add(&self.counters.replayed_dispatches, commands.dispatches());
        if full {
            self.submit()?;
        }
        Ok(())
    }

    /// Waits until batch `sequence` has completed (submitting it first if it is still being
    /// recorded), then releases the resources of every completed batch.
    pub(crate) fn wait_for(
        &mut self,
        pool: &BufferPool,
        op: &'static str,
        sequence: u64,
    ) -> Result<()> {
        if let Some(capture) = &mut self.capture {
            capture.spoil("the run waited for the GPU");
        }
        if sequence <= self.completed {
            return Ok(());
        }
        if self
            .recording
            .as_ref()
            .is_some_and(|recording| recording.sequence <= sequence)
        {
            self.submit()?;
        }
        let sequence = sequence.min(self.next_sequence - 1);
        let start = Instant::now();
        loop {
            let value = self.counter_value(op)?;
            if value >= sequence {
                break;
            }
            let waited = start.elapsed();
            if waited >= POLL_BEFORE_BLOCKING {
                let remaining = self.timeout.saturating_sub(waited);
                let wait = self.timeline.wait(
                    SemaphoreWaitInfo {
                        value: sequence,
                        ..Default::default()
                    },
                    Some(remaining),
                );
                match wait {
                    Ok(()) => break,
                    Err(vulkano::Validated::Error(vulkano::VulkanError::Timeout)) => {
                        return Err(Error::Timeout {
                            op,
                            waited: start.elapsed(),
                        });
                    }
                    Err(error) => return Err(Error::vulkan(op, error)),
                }
            }
            if waited < SPIN {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        self.retire(pool, sequence);
        Ok(())
    }

    /// Submits everything and waits for all of it.
    pub(crate) fn wait_idle(&mut self, pool: &BufferPool, op: &'static str) -> Result<()> {
        self.submit()?;
        let last = self.next_sequence - 1;
        self.wait_for(pool, op, last)
    }

    /// Releases batches that have completed, without waiting.
    pub(crate) fn poll(&mut self, pool: &BufferPool) -> Result<()> {
        let value = self.counter_value("poll")?;
        self.retire(pool, value);
        Ok(())
    }

    pub(crate) fn completed(&self) -> u64 {
        self.completed
    }

    fn counter_value(&self, op: &'static str) -> Result<u64> {
        // SAFETY: the semaphore is a timeline semaphore of this device.
        unsafe { self.timeline.counter_value_unchecked() }.map_err(|error| Error::vulkan(op, error))
    }

    fn retire(&mut self, pool: &BufferPool, completed: u64) {
        self.completed = self.completed.max(completed);
        while self
            .in_flight
            .front()
            .is_some_and(|batch| batch.sequence <= self.completed)
        {
            let batch = self.in_flight.pop_front().expect("checked");
            for buffer in batch.resources.recycle {
                pool.release(buffer);
            }
            // SAFETY: the batch has completed, so the GPU no longer uses its command buffer.
            let result = unsafe {
                (self.device.fns().v1_0.reset_command_buffer)(
                    batch.command_buffer.handle(),
                    vk::CommandBufferResetFlags::empty(),
                )
            };
            if result == vk::Result::SUCCESS {
                self.spare_command_buffers.push(batch.command_buffer);
            }
        }
    }

    /// Records a timestamp into `query_pool` at `index` (after all earlier commands).
    pub(crate) fn write_timestamp(&mut self, query_pool: vk::QueryPool, index: u32) -> Result<()> {
        if let Some(capture) = &mut self.capture {
            capture.spoil("a timestamp was written during the capture");
        }
        let device = self.device.clone();
        let fns = device.fns();
        let recording = self.recording()?;
        // SAFETY: recording; the query pool outlives the batch (owned by the caller, which
        // waits for the batch before reading or dropping it).
        unsafe {
            (fns.v1_0.cmd_reset_query_pool)(
                recording.command_buffer.handle(),
                query_pool,
                index,
                1,
            );
            (fns.v1_0.cmd_write_timestamp)(
                recording.command_buffer.handle(),
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                query_pool,
                index,
            );
        }
        Ok(())
    }
}

/// Records a barrier that makes all earlier compute and transfer writes visible to all later
/// compute and transfer accesses.
///
/// # Safety
/// `command_buffer` must be in the recording state, from the device whose `fns` these are.
pub(crate) unsafe fn record_global_barrier(
    fns: &vulkano::device::DeviceFunctions,
    command_buffer: vk::CommandBuffer,
    stages: vk::PipelineStageFlags,
) {
    let barrier = vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(
            vk::AccessFlags::SHADER_READ
                | vk::AccessFlags::SHADER_WRITE
                | vk::AccessFlags::TRANSFER_READ
                | vk::AccessFlags::TRANSFER_WRITE,
        );
    // SAFETY: guaranteed by the caller.
    unsafe {
        (fns.v1_0.cmd_pipeline_barrier)(
            command_buffer,
            stages,
            stages,
            vk::DependencyFlags::empty(),
            1,
            &barrier,
            0,
            std::ptr::null(),
            0,
            std::ptr::null(),
        )
    };
}
