//! `cargo xtask bench`: nxvk-core's benchmarks, one JSON line per workload in the format of
//! the peers' README (`{"name","value","unit","better","impl"}`).
//!
//! Until the kernel catalog carries them, the kernels here are the core's own test kernels
//! (a vectorised add, a sigmoid). GPU-side workloads are timed with GPU timestamps (median of
//! 20 after 3 warm-up runs), host-visible ones (chains, round trips, transfers) with the wall
//! clock, as the torch peer times them. `--quick` shrinks the large workloads (and renames them
//! by size) so lavapipe can run them as a regression check.

use nxvk_core::{BufferAccess, Context, DType, Device, Kernel, Result, Tensor};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ADD_VEC4: &str = "layout(local_size_x = 256) in;
layout(constant_id = 0) const uint UNROLL = 1;
layout(buffer_reference, scalar) buffer Vec4s { vec4 values[]; };
layout(push_constant, scalar) uniform Push { Vec4s a; Vec4s b; Vec4s c; uint count; } push;
void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint index = gl_GlobalInvocationID.x;
    for (; index + (UNROLL - 1) * stride < push.count; index += UNROLL * stride) {
        vec4 sums[UNROLL];
        for (uint u = 0; u < UNROLL; u++) {
            sums[u] = push.a.values[index + u * stride] + push.b.values[index + u * stride];
        }
        for (uint u = 0; u < UNROLL; u++) {
            push.c.values[index + u * stride] = sums[u];
        }
    }
    for (; index < push.count; index += stride) {
        push.c.values[index] = push.a.values[index] + push.b.values[index];
    }
}
";

const SIGMOID: &str = "layout(local_size_x = 256) in;
layout(buffer_reference, scalar) buffer Floats { float values[]; };
layout(push_constant, scalar) uniform Push { Floats source; Floats target; uint count; } push;
void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index < push.count) {
        push.target.values[index] = 1.0 / (1.0 + exp(-push.source.values[index]));
    }
}
";

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let quick = arguments.iter().any(|argument| argument == "--quick");
    let only: Vec<String> = arguments
        .iter()
        .position(|argument| argument == "--only")
        .and_then(|index| arguments.get(index + 1))
        .map(|list| list.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let context = Context::new().expect("a Vulkan device");
    eprintln!("{{\"device\": {:?}}}", context.capabilities().summary());
    let device = context.device().expect("device");
    let bench = Bench { device, quick };

    let add_elements = if quick { 1 << 22 } else { 1 << 28 };
    let add_name = if quick {
        "add_f32_4M".to_owned()
    } else {
        "add_f32_256M".to_owned()
    };
    let transfer_name =
        |direction: &str| format!("{direction}_f32_{}", if quick { "4M" } else { "256M" });
    let workloads: Vec<(String, Workload)> = vec![
        (
            add_name.clone(),
            Box::new(move |bench| bench.add(add_elements, 4)),
        ),
        (
            format!("{add_name}@unroll1"),
            Box::new(move |bench| bench.add(add_elements, 1)),
        ),
        (
            format!("{add_name}@unroll2"),
            Box::new(move |bench| bench.add(add_elements, 2)),
        ),
        (
            "small_op_chain_us".into(),
            Box::new(|bench| bench.small_op_chain(false)),
        ),
        (
            "small_op_chain_us@record_only".into(),
            Box::new(|bench| bench.small_op_chain(true)),
        ),
        (
            "small_roundtrip_us".into(),
            Box::new(|bench| bench.small_roundtrip()),
        ),
        (
            "small_roundtrip_us@sync_only".into(),
            Box::new(|bench| bench.sync_only(false)),
        ),
        (
            "small_roundtrip_us@submit_only".into(),
            Box::new(|bench| bench.sync_only(true)),
        ),
        (
            transfer_name("upload"),
            Box::new(move |bench| bench.upload(add_elements)),
        ),
        (
            transfer_name("download"),
            Box::new(move |bench| bench.download(add_elements)),
        ),
    ];
    for (name, workload) in workloads {
        if !only.is_empty()
            && !only
                .iter()
                .any(|wanted| name == *wanted || name.starts_with(&format!("{wanted}@")))
        {
            continue;
        }
        match workload(&bench) {
            Ok(record) => println!(
                "{{\"name\": \"{name}\", \"value\": {:.4}, \"unit\": \"{}\", \"better\": \"{}\", \"impl\": \"nxvk\"}}",
                record.value, record.unit, record.better
            ),
            Err(error) => println!(
                "{{\"name\": \"{name}\", \"error\": {:?}, \"impl\": \"nxvk\"}}",
                error.to_string()
            ),
        }
    }
    eprintln!("{{\"counters\": {:?}}}", context.counters());
}

/// One benchmark: runs on the bench's device and returns its figure.
type Workload = Box<dyn Fn(&Bench) -> Result<Record>>;

struct Record {
    value: f64,
    unit: &'static str,
    better: &'static str,
}

struct Bench {
    device: Arc<Device>,
    quick: bool,
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn push_bytes(addresses: &[u64], count: u32) -> Vec<u8> {
    let mut push: Vec<u8> = addresses
        .iter()
        .flat_map(|address| address.to_le_bytes())
        .collect();
    push.extend_from_slice(&count.to_le_bytes());
    push.resize(push.len().next_multiple_of(8), 0);
    push
}

impl Bench {
    fn add(&self, elements: usize, unroll: u32) -> Result<Record> {
        let device = &self.device;
        let kernel = device.kernel_from_glsl(
            "bench_add_vec4",
            ADD_VEC4,
            &[(0, nxvk_core::SpecValue::U32(unroll))],
        )?;
        let a = Tensor::from_slice(device, &[elements], &vec![1.0f32; elements])?;
        let b = Tensor::from_slice(device, &[elements], &vec![2.0f32; elements])?;
        let c = Tensor::empty(device, DType::F32, &[elements])?;
        let vec4_count = (elements / 4) as u32;
        let push = push_bytes(
            &[
                a.device_address().unwrap(),
                b.device_address().unwrap(),
                c.device_address().unwrap(),
            ],
            vec4_count,
        );
        let workgroups = vec4_count
            .div_ceil(256)
            .min(device.capabilities().max_workgroup_count[0]);
        let run = || {
            device.dispatch(
                &kernel,
                [workgroups, 1, 1],
                &push,
                &[
                    BufferAccess::Read(a.buffer()),
                    BufferAccess::Read(b.buffer()),
                    BufferAccess::Write(c.buffer()),
                ],
            )
        };
        let time = self.gpu_median(run)?;
        let check = c.slice(&[elements - 1], &[1])?.to_vec::<f32>()?;
        assert_eq!(check, vec![3.0], "the add kernel wrote the last element");
        Ok(Record {
            value: 3.0 * elements as f64 * 4.0 / time.as_secs_f64() / 1e9,
            unit: "GB/s",
            better: "higher",
        })
    }

    fn gpu_median(&self, run: impl Fn() -> Result<()>) -> Result<Duration> {
        let (warm, repeats) = if self.quick { (1, 5) } else { (3, 20) };
        for _ in 0..warm {
            self.device.gpu_time(&run)?;
        }
        let samples = (0..repeats)
            .map(|_| self.device.gpu_time(&run))
            .collect::<Result<Vec<_>>>()?;
        Ok(median(samples))
    }

    fn sigmoid(&self, kernel: &Kernel, source: &Tensor) -> Result<Tensor> {
        let target = Tensor::empty(&self.device, DType::F32, source.shape())?;
        let count = source.n_elements() as u32;
        let push = push_bytes(
            &[
                source.device_address().unwrap(),
                target.device_address().unwrap(),
            ],
            count,
        );
        self.device.dispatch(
            kernel,
            [count.div_ceil(256), 1, 1],
            &push,
            &[
                BufferAccess::Read(source.buffer()),
                BufferAccess::Write(target.buffer()),
            ],
        )?;
        Ok(target)
    }

    /// 1000 dependent sigmoids on f32[1024], each into a new tensor, one sync at the end.
    /// With `record_only`, the time until the last dispatch is recorded (the host's share).
    fn small_op_chain(&self, record_only: bool) -> Result<Record> {
        let kernel = self
            .device
            .kernel_from_glsl("bench_sigmoid", SIGMOID, &[])?;
        let x = Tensor::from_slice(&self.device, &[1024], &[0.5f32; 1024])?;
        let chain = || -> Result<Duration> {
            let start = Instant::now();
            let mut y = x.clone();
            for _ in 0..1000 {
                y = self.sigmoid(&kernel, &y)?;
            }
            let recorded = start.elapsed();
            self.device.synchronize()?;
            Ok(if record_only {
                recorded
            } else {
                start.elapsed()
            })
        };
        chain()?;
        let samples = (0..5).map(|_| chain()).collect::<Result<Vec<_>>>()?;
        Ok(Record {
            value: median(samples).as_secs_f64() * 1e6 / 1000.0,
            unit: "us/op",
            better: "lower",
        })
    }

    /// One sigmoid on f32[1024] and its result back on the host.
    fn small_roundtrip(&self) -> Result<Record> {
        let kernel = self
            .device
            .kernel_from_glsl("bench_sigmoid", SIGMOID, &[])?;
        let x = Tensor::from_slice(&self.device, &[1024], &[0.5f32; 1024])?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let values = self.sigmoid(&kernel, &x)?.to_vec::<f32>()?;
            let elapsed = start.elapsed();
            assert!((values[0] - 0.622_459_3).abs() < 1e-6);
            Ok(elapsed)
        };
        for _ in 0..20 {
            once()?;
        }
        let samples = (0..200).map(|_| once()).collect::<Result<Vec<_>>>()?;
        Ok(Record {
            value: median(samples).as_secs_f64() * 1e6,
            unit: "us",
            better: "lower",
        })
    }

    /// The floor under a round trip: one tiny fill, submit, and wait; no kernel, no copy back.
    /// With `submit_only`, the host time until the submission returns, without the wait.
    fn sync_only(&self, submit_only: bool) -> Result<Record> {
        let scratch = self.device.alloc("bench", 256)?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            self.device.fill(&scratch, 0)?;
            self.device.flush()?;
            let submitted = start.elapsed();
            self.device.synchronize()?;
            Ok(if submit_only {
                submitted
            } else {
                start.elapsed()
            })
        };
        for _ in 0..20 {
            once()?;
        }
        let samples = (0..200).map(|_| once()).collect::<Result<Vec<_>>>()?;
        Ok(Record {
            value: median(samples).as_secs_f64() * 1e6,
            unit: "us",
            better: "lower",
        })
    }

    fn upload(&self, elements: usize) -> Result<Record> {
        let data = vec![1.5f32; elements];
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let tensor = Tensor::from_slice(&self.device, &[elements], &data)?;
            self.device.synchronize()?;
            let elapsed = start.elapsed();
            drop(tensor);
            Ok(elapsed)
        };
        once()?;
        let samples = (0..5).map(|_| once()).collect::<Result<Vec<_>>>()?;
        Ok(Record {
            value: elements as f64 * 4.0 / median(samples).as_secs_f64() / 1e9,
            unit: "GB/s",
            better: "higher",
        })
    }

    fn download(&self, elements: usize) -> Result<Record> {
        let tensor = Tensor::from_slice(&self.device, &[elements], &vec![1.5f32; elements])?;
        self.device.synchronize()?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let values = tensor.to_vec::<f32>()?;
            let elapsed = start.elapsed();
            assert_eq!(values.len(), elements);
            Ok(elapsed)
        };
        once()?;
        let samples = (0..5).map(|_| once()).collect::<Result<Vec<_>>>()?;
        Ok(Record {
            value: elements as f64 * 4.0 / median(samples).as_secs_f64() / 1e9,
            unit: "GB/s",
            better: "higher",
        })
    }
}
