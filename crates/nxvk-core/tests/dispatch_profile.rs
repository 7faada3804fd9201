//! `Device::profile_dispatches` times each dispatch recorded inside it, in order, counts the
//! ones beyond its capacity, and leaves later dispatches untimed.

mod common;
use common::{add_one, add_one_kernel, private_device};
use nxvk_core::{DType, PROFILED_DISPATCHES, Tensor};

#[test]
fn each_dispatch_inside_the_profile_is_timed_and_named() {
    let device = private_device();
    if device.capabilities().timestamp_period_ns.is_none() {
        eprintln!("skipped: the device's compute queue cannot write timestamps");
        return;
    }
    let kernel = add_one_kernel(&device);
    let input = Tensor::from_slice(&device, &[256], &[0.0f32; 256]).unwrap();
    let output = Tensor::empty(&device, DType::F32, &[256]).unwrap();
    let profile = device
        .profile_dispatches(|| {
            add_one(&device, &kernel, &input, &output);
            add_one(&device, &kernel, &output, &input);
            Ok(())
        })
        .unwrap();
    assert_eq!(profile.dispatches.len(), 2, "{profile:?}");
    assert_eq!(profile.untimed, 0);
    assert!(profile.dispatches.iter().all(|d| d.kernel == kernel.name()));
    let totals = profile.by_kernel();
    assert_eq!(totals.len(), 1);
    assert_eq!(totals[0].1, 2);
    assert_eq!(input.to_vec::<f32>().unwrap(), vec![2.0f32; 256]);

    // Null arm: a dispatch after the profile is not in it, and a later profile starts empty.
    add_one(&device, &kernel, &input, &output);
    let empty = device.profile_dispatches(|| Ok(())).unwrap();
    assert!(empty.dispatches.is_empty(), "{empty:?}");
}

#[test]
fn dispatches_beyond_the_capacity_are_counted_untimed() {
    let device = private_device();
    if device.capabilities().timestamp_period_ns.is_none() {
        eprintln!("skipped: the device's compute queue cannot write timestamps");
        return;
    }
    let kernel = add_one_kernel(&device);
    let a = Tensor::from_slice(&device, &[4], &[0.0f32; 4]).unwrap();
    let b = Tensor::empty(&device, DType::F32, &[4]).unwrap();
    let extra = 3;
    let profile = device
        .profile_dispatches(|| {
            for step in 0..PROFILED_DISPATCHES as usize + extra {
                let (from, to) = if step % 2 == 0 { (&a, &b) } else { (&b, &a) };
                add_one(&device, &kernel, from, to);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(profile.dispatches.len(), PROFILED_DISPATCHES as usize);
    assert_eq!(profile.untimed, extra);
}

/// Profiles taken from several threads at once each finish with their own dispatches (they
/// used to replace each other's recorder, and one could then wait forever on its timestamps).
#[test]
fn concurrent_profiles_wait_for_each_other() {
    let device = private_device();
    if device.capabilities().timestamp_period_ns.is_none() {
        eprintln!("skipped: the device's compute queue cannot write timestamps");
        return;
    }
    let kernel = add_one_kernel(&device);
    let profiles: Vec<_> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let input = Tensor::from_slice(&device, &[64], &[0.0f32; 64]).unwrap();
                    let output = Tensor::empty(&device, DType::F32, &[64]).unwrap();
                    device.profile_dispatches(|| {
                        add_one(&device, &kernel, &input, &output);
                        Ok(())
                    })
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect()
    });
    for profile in profiles {
        let profile = profile.unwrap();
        assert_eq!(profile.dispatches.len(), 1, "{profile:?}");
    }
}
