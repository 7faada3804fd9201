//! Two Vulkan drivers in one process: Mesa 22 lavapipe and Mesa 25 lavapipe, each a context of
//! its own, told apart by driver info, running work side by side.
//!
//! `NXVK_TEST_ICDS` (set by `cargo xtask test`) lists the two ICD files; without it the test
//! looks where `cargo xtask setup` puts them.

mod common;
use common::{add_one, add_one_kernel};
use nxvk_core::{Context, ContextOptions, DType, Tensor, list_adapters};
use std::path::PathBuf;

fn icd_files() -> Vec<PathBuf> {
    if let Ok(list) = std::env::var("NXVK_TEST_ICDS") {
        return std::env::split_paths(&list).collect();
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    vec![
        PathBuf::from("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"),
        workspace.join("target/nxvk-drivers/mesa-backports/lvp_icd.json"),
    ]
}

#[test]
fn both_drivers_from_one_process() {
    let files = icd_files();
    for file in &files {
        assert!(
            file.is_file(),
            "{} is missing: run `cargo xtask setup`",
            file.display()
        );
    }
    let joined = std::env::join_paths(&files).unwrap();
    // SAFETY: this binary has one test, and it sets the variable before anything reads it
    // (the Vulkan loader reads it when the instance is created, below).
    unsafe {
        std::env::set_var("VK_ICD_FILENAMES", &joined);
        std::env::remove_var("VK_DRIVER_FILES");
        std::env::remove_var("VK_ADD_DRIVER_FILES");
    }
    let adapters = list_adapters().unwrap();
    let mut driver_infos: Vec<String> = adapters
        .iter()
        .map(|a| a.capabilities.driver_info.clone())
        .collect();
    driver_infos.sort();
    driver_infos.dedup();
    assert!(
        driver_infos.len() >= 2,
        "two different drivers expected, found {driver_infos:?}"
    );

    let contexts: Vec<Context> = adapters
        .into_iter()
        .map(|adapter| Context::from_adapter(adapter, ContextOptions::default()).unwrap())
        .collect();
    // Interleave work on both devices, then read both back (counting from after each device
    // opened: opening runs the fma probe's dispatch).
    let mut results = Vec::new();
    let mut baselines = Vec::new();
    for (index, context) in contexts.iter().enumerate() {
        let device = context.device().unwrap();
        baselines.push(context.counters().dispatches);
        let source = Tensor::from_slice(&device, &[3], &[index as f32, 10.0, 20.0]).unwrap();
        let target = Tensor::empty(&device, DType::F32, &[3]).unwrap();
        add_one(&device, &add_one_kernel(&device), &source, &target);
        results.push((index, target));
    }
    for (index, target) in results {
        assert_eq!(
            target.to_vec::<f32>().unwrap(),
            vec![index as f32 + 1.0, 11.0, 21.0]
        );
        assert_eq!(contexts[index].counters().dispatches - baselines[index], 1);
    }
    // A tensor of one device is refused by the other.
    let first = contexts[0].device().unwrap();
    let second = contexts[1].device().unwrap();
    let foreign = Tensor::from_slice(&first, &[1], &[1.0f32]).unwrap();
    let target = Tensor::empty(&second, DType::F32, &[1]).unwrap();
    let error = second
        .dispatch(
            &add_one_kernel(&second),
            [1, 1, 1],
            &[0; 24],
            &[
                nxvk_core::BufferAccess::Read(foreign.buffer()),
                nxvk_core::BufferAccess::Write(target.buffer()),
            ],
        )
        .unwrap_err();
    assert!(
        matches!(error, nxvk_core::Error::ForeignTensor { op: "dispatch" }),
        "{error}"
    );
}
