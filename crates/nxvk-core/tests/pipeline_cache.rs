//! The on-disk pipeline cache: saved when a device closes, loaded by the next one, and a
//! corrupt, truncated or foreign file is ignored, survived and replaced.

mod common;
use common::ADD_ONE;
use nxvk_core::{Context, ContextOptions, PipelineCacheLoad};
use std::path::Path;

fn open(cache_dir: &Path) -> Context {
    Context::with_options(ContextOptions {
        cache_dir: cache_dir.to_owned(),
        ..ContextOptions::default()
    })
    .unwrap()
}

/// Opens a device on `cache_dir`, builds a kernel, closes the device (saving the cache), and
/// returns what the device found on disk when it opened.
fn open_build_close(cache_dir: &Path) -> PipelineCacheLoad {
    let context = open(cache_dir);
    let device = context.device().unwrap();
    device.kernel_from_glsl("add_one", ADD_ONE, &[]).unwrap();
    let found = device.pipeline_cache_load().clone();
    drop(device);
    drop(context);
    found
}

fn cache_file(cache_dir: &Path) -> std::path::PathBuf {
    let pipelines = cache_dir.join("pipelines");
    let mut files: Vec<_> = std::fs::read_dir(&pipelines)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(
        files.len(),
        1,
        "one cache file per device and driver: {files:?}"
    );
    files.pop().unwrap()
}

#[test]
fn saved_cache_is_loaded_and_corruption_is_survived() {
    let folder = tempfile::tempdir().unwrap();
    assert_eq!(open_build_close(folder.path()), PipelineCacheLoad::Missing);
    let file = cache_file(folder.path());
    assert!(matches!(
        open_build_close(folder.path()),
        PipelineCacheLoad::Loaded { .. }
    ));

    let good = std::fs::read(&file).unwrap();
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x5a;
    let mut foreign = good.clone();
    foreign[8] ^= 0xff; // another device's UUID
    let corruptions: [(&str, Vec<u8>); 4] = [
        ("flipped payload byte", flipped),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("garbage", vec![0xab; 4096]),
        ("foreign device", foreign),
    ];
    for (what, bytes) in corruptions {
        std::fs::write(&file, &bytes).unwrap();
        let found = open_build_close(folder.path());
        assert!(
            matches!(found, PipelineCacheLoad::Rejected { .. }),
            "{what}: {found:?}"
        );
        // The device worked, and its save replaced the bad file with a loadable one.
        assert!(
            matches!(
                open_build_close(folder.path()),
                PipelineCacheLoad::Loaded { .. }
            ),
            "{what}: not replaced"
        );
    }
}

#[test]
fn runtime_spirv_is_content_addressed_on_disk() {
    let folder = tempfile::tempdir().unwrap();
    let first = open(folder.path());
    first
        .device()
        .unwrap()
        .kernel_from_glsl("add_one", ADD_ONE, &[])
        .unwrap();
    assert_eq!(first.counters().shader_compiles, 1);
    let spirv_files = std::fs::read_dir(folder.path().join("spirv"))
        .unwrap()
        .count();
    assert_eq!(spirv_files, 1);
    // A new context finds the SPIR-V on disk and skips glslang.
    let second = open(folder.path());
    second
        .device()
        .unwrap()
        .kernel_from_glsl("add_one", ADD_ONE, &[])
        .unwrap();
    assert_eq!(second.counters().shader_compiles, 0);
    // The same source twice in one device builds one pipeline.
    let device = second.device().unwrap();
    device.kernel_from_glsl("add_one", ADD_ONE, &[]).unwrap();
    assert_eq!(second.counters().pipeline_builds, 1);
    assert_eq!(second.counters().pipeline_cache_hits, 1);
}
