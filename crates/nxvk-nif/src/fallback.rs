//! The host-fallback gate for ops that `Nx.Vulkan.Backend` runs on `Nx.BinaryBackend`.
//!
//! Elixir calls `host_fallback/4` before it moves an op's operands to the host. The call goes
//! through nxvk-core's one counted fallback (`Device::host_fallback`): it is counted by
//! (op, dtype) with every other fallback, and refused under the VM-wide strict mode. The
//! caller's per-process mode is applied on top: the stricter of the two wins, so a process
//! scope can refuse or warn where the VM allows, never allow where the VM refuses.
//!
//! nxvk-core counts fallbacks under `&'static str` op names. Names arriving from Elixir are
//! interned once each (a leaked string per distinct name): the set is bounded by the Nx
//! callbacks the backend names, and a name must look like one (a short snake_case word).
//! A process's `:warn` is left to the Elixir side, which logs through Logger.
//!
//! `op_path/3` tells Elixir where a catalog op would run, so a process scope can also refuse
//! the fallbacks the catalog takes inside an op (complex, sub-byte, f64 transcendentals).

use crate::device::{default_context, default_device};
use crate::ops::{binary_op_named, unary_op_named};
use crate::reduce::reduce_op_named;
use crate::reply::{Done, Reply, guarded, message};
use crate::tensor::decode_dtype;
use crate::terms::{decode_indices, decode_name};
use nxvk_core::{Error, Strict};
use nxvk_kernels::ops::{Path, binary_path, unary_path};
use parking_lot::Mutex;
use rustler::{Encoder, Env, Term};
use std::collections::BTreeSet;

static INTERNED_OP_NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// The longest op name accepted (Nx's longest callback name is well below it).
const MAX_OP_NAME_BYTES: usize = 48;

fn interned_op_name(name: &str) -> Reply<&'static str> {
    let looks_like_a_callback = !name.is_empty()
        && name.len() <= MAX_OP_NAME_BYTES
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_');
    if !looks_like_a_callback {
        return Err(format!(
            "host_fallback: `{name}` is not an op name (snake_case, at most {MAX_OP_NAME_BYTES} bytes)"
        ));
    }
    let mut interned = INTERNED_OP_NAMES.lock();
    if let Some(existing) = interned.get(name) {
        return Ok(existing);
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    interned.insert(leaked);
    Ok(leaked)
}

fn decode_process_mode<'a>(env: Env<'a>, term: Term<'a>) -> Reply<Option<Strict>> {
    let atom = |name: &str| rustler::Atom::from_str(env, name).map(|atom| atom.to_term(env));
    let is = |name: &str| atom(name).is_ok_and(|atom| atom == term);
    if is("nil") {
        Ok(None)
    } else if is("allow") {
        Ok(Some(Strict::Allow))
    } else if is("warn") {
        Ok(Some(Strict::Warn))
    } else if is("raise") {
        Ok(Some(Strict::Raise))
    } else {
        Err(format!(
            "host_fallback: expected mode :allow, :warn, :raise or nil, got {term:?}"
        ))
    }
}

/// `host_fallback(op, dtype, shapes, process_mode)`: counts one host fallback of `op` on
/// `dtype` and returns `:ok`, or `{:error, message}` when strict mode refuses it. `shapes` (a
/// list of shape tuples) only feeds the message.
#[rustler::nif(schedule = "DirtyCpu")]
fn host_fallback<'a>(
    env: Env<'a>,
    op: Term<'a>,
    dtype: String,
    shapes: Vec<Term<'a>>,
    process_mode: Term<'a>,
) -> Done {
    Done(guarded("host_fallback", || {
        let op = interned_op_name(&decode_name(op)?)?;
        let dtype = decode_dtype("host_fallback", &dtype)?;
        let shapes = shapes
            .into_iter()
            .map(|shape| decode_indices("host_fallback", shape))
            .collect::<Reply<Vec<Vec<usize>>>>()?;
        let process_mode = decode_process_mode(env, process_mode)?;
        let shape_slices: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        default_device()?
            .host_fallback(op, dtype, &shape_slices)
            .map_err(message)?;
        match process_mode {
            Some(Strict::Raise) => Err(message(Error::HostFallbackRefused { op, dtype, shapes })),
            // A process's `:warn` is logged by the Elixir side (once per op and dtype per
            // process, through Logger), where it can name the calling process.
            Some(Strict::Warn | Strict::Allow) | None => Ok(()),
        }
    }))
}

rustler::atoms! { gpu, host }

/// `op_path(kind, name, dtypes)`: where a catalog op on operands of `dtypes` runs on the
/// default device, `:gpu` or `{:host, dtype}` (its counted fallback, under that dtype). `kind`
/// is `:binary`, `:unary` or `:reduce`. The answer comes from nxvk-kernels' own planners, so a
/// per-process strict scope can refuse a catalog fallback before the op runs. Dirty: the
/// first call of the VM may open the device.
#[rustler::nif(schedule = "DirtyCpu")]
fn op_path<'a>(
    env: Env<'a>,
    kind: Term<'a>,
    name: Term<'a>,
    dtypes: Vec<String>,
) -> Reply<Term<'a>> {
    guarded("op_path", || {
        let kind = decode_name(kind)?;
        let name = decode_name(name)?;
        let dtypes = dtypes
            .iter()
            .map(|dtype| decode_dtype("op_path", dtype))
            .collect::<Reply<Vec<_>>>()?;
        let context = default_context()?;
        let capabilities = context.capabilities();
        let path = match (kind.as_str(), dtypes.as_slice()) {
            ("binary", &[left, right]) => {
                binary_path(binary_op_named(&name)?, left, right, capabilities).map_err(message)?
            }
            ("unary", &[input]) => {
                unary_path(unary_op_named(&name)?, input, capabilities).map_err(message)?
            }
            ("reduce", &[input]) => {
                let op = reduce_op_named(&name)?;
                if nxvk_kernels::reduce::runs_on_gpu(op, input, capabilities) {
                    Path::Gpu
                } else {
                    Path::Fallback(input)
                }
            }
            _ => {
                return Err(format!(
                    "op_path: expected :binary with two dtypes, or :unary or :reduce with one; got {kind} with {}",
                    dtypes.len()
                ));
            }
        };
        Ok(match path {
            Path::Gpu => gpu().encode(env),
            Path::Fallback(dtype) => (host(), dtype.name()).encode(env),
        })
    })
}
