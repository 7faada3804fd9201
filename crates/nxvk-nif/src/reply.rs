//! What a NIF returns: `{:ok, value}` or `{:error, message}`, never a panic.
//!
//! rustler 0.39 already catches a panic in a NIF body, but turns it into an `:nif_panicked`
//! exception that names nothing. [`guarded`] catches it first and returns
//! `{:error, "<nif>: panicked: <message>"}`, so callers handle a panic like any other error.

use std::any::Any;
use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// A NIF's result: rustler encodes `Ok(value)` as `{:ok, value}` and `Err(text)` as
/// `{:error, text}` (an Elixir string).
pub type Reply<T> = Result<T, String>;

/// The reply of a NIF that returns no value: `:ok` or `{:error, text}`.
#[derive(Debug)]
pub struct Done(pub Reply<()>);

impl rustler::Encoder for Done {
    fn encode<'a>(&self, env: rustler::Env<'a>) -> rustler::Term<'a> {
        match &self.0 {
            Ok(()) => rustler::types::atom::ok().encode(env),
            Err(text) => (rustler::types::atom::error(), text).encode(env),
        }
    }
}

/// Runs a NIF body, turning a panic into an error that names the NIF.
pub fn guarded<T>(nif: &'static str, body: impl FnOnce() -> Reply<T>) -> Reply<T> {
    // AssertUnwindSafe: a panicking body leaves no state half-updated that a later call reads;
    // nxvk-core's shared state sits behind parking_lot locks, which do not poison.
    catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(format!("{nif}: panicked: {}", panic_text(&*payload))))
}

/// nxvk's message for an error (its `Display` names the op, shapes and dtypes).
pub fn message(error: impl Display) -> String {
    error.to_string()
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Panics on purpose, so the tests can show that a panic comes back as an error and the VM
/// (and the next call) carries on. Not part of the public Elixir API. It unwinds with
/// `resume_unwind`, which skips the panic hook, so test logs carry no backtrace.
#[rustler::nif]
fn test_panic() -> Done {
    Done(guarded("test_panic", || {
        std::panic::resume_unwind(Box::new("test_panic was asked to panic"))
    }))
}
