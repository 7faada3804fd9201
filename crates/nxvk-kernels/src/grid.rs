//! Workgroup counts of grid-stride kernels: one invocation per task, up to the device's limit
//! along x; past it each invocation loops over the remaining tasks.

use nxvk_core::Device;

/// Workgroups of `workgroup_size` invocations for `tasks` tasks (zero for none).
pub(crate) fn grid_stride_workgroups(device: &Device, tasks: u64, workgroup_size: u32) -> u32 {
    let max_groups = device.capabilities().max_workgroup_count[0];
    tasks
        .div_ceil(u64::from(workgroup_size))
        .min(u64::from(max_groups)) as u32
}
