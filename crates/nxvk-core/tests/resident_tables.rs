//! Resident tables: built and uploaded once per key, found afterwards without building; the
//! least recently used table is evicted past the budget while the one just requested stays;
//! a handle outlives its table's eviction with its contents intact; and a handle's memory
//! never goes back to the pool.

use nxvk_core::{Context, RESIDENT_TABLE_BYTES};
use std::cell::Cell;

/// `bytes` bytes of a pattern that differs per `seed`.
fn pattern(bytes: u64, seed: u8) -> Vec<u8> {
    (0..bytes)
        .map(|index| (index as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn tables_are_built_once_and_evicted_least_recently_used_first() {
    let context = Context::new().unwrap();
    let device = context.device().unwrap();
    // Two tables that do not fit the budget together.
    let large = RESIDENT_TABLE_BYTES * 5 / 8;
    let builds = Cell::new(0);
    let request = |key: &str, seed: u8| {
        device
            .resident_table("test", key, || {
                builds.set(builds.get() + 1);
                pattern(large, seed)
            })
            .unwrap()
    };

    let first = request("first", 1);
    assert_eq!(builds.get(), 1);
    let before = context.counters();
    let again = request("first", 1);
    let after = context.counters();
    assert_eq!(builds.get(), 1, "a second request rebuilt the table");
    assert_eq!(after.bytes_uploaded, before.bytes_uploaded);
    assert_eq!(after.resident_table_hits, before.resident_table_hits + 1);
    assert_eq!(again.device_address(), first.device_address());

    // A handle of a resident table is not pooled memory.
    let pooled = device.pool_cached_bytes();
    drop(again);
    assert_eq!(device.pool_cached_bytes(), pooled);

    // The second table pushes the first out; the second, just requested, stays.
    let second = request("second", 2);
    assert_eq!(builds.get(), 2);
    request("second", 2);
    assert_eq!(builds.get(), 2, "the table just requested was evicted");
    let rebuilt = request("first", 1);
    assert_eq!(
        builds.get(),
        3,
        "the least recently used table was not evicted"
    );
    assert_ne!(rebuilt.device_address(), first.device_address());

    // The evicted table's old handle still reads its contents.
    let contents = device.download(&first, 0, large).unwrap();
    assert!(
        contents == pattern(large, 1),
        "an evicted table lost its contents"
    );
    // Null arm: the comparison tells two tables apart.
    let other = device.download(&second, 0, large).unwrap();
    assert!(other != pattern(large, 1));
}
