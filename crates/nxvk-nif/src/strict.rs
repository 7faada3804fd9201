//! Strict mode from Elixir: `:allow`, `:warn` or `:raise` for the whole VM (nxvk-core's
//! process-wide override), or `nil` to return to `NXVK_STRICT`. `Nx.Vulkan.with_strict/2`
//! builds its scope on these two calls.

use crate::reply::{Reply, guarded};
use nxvk_core::Strict;
use rustler::{Atom, Env, Term};

rustler::atoms! { allow, warn, raise }

fn to_atom(mode: Strict) -> Atom {
    match mode {
        Strict::Allow => allow(),
        Strict::Warn => warn(),
        Strict::Raise => raise(),
    }
}

#[rustler::nif]
fn set_strict<'a>(env: Env<'a>, mode: Term<'a>) -> Reply<Atom> {
    guarded("set_strict", || {
        let previous = nxvk_core::strict();
        let requested = if mode == rustler::types::atom::nil().to_term(env) {
            None
        } else if mode == allow().to_term(env) {
            Some(Strict::Allow)
        } else if mode == warn().to_term(env) {
            Some(Strict::Warn)
        } else if mode == raise().to_term(env) {
            Some(Strict::Raise)
        } else {
            return Err(format!(
                "set_strict: expected :allow, :warn, :raise or nil, got {mode:?}"
            ));
        };
        nxvk_core::set_strict(requested);
        Ok(to_atom(previous))
    })
}

/// The strict mode in force now.
#[rustler::nif]
fn strict() -> Reply<Atom> {
    guarded("strict", || Ok(to_atom(nxvk_core::strict())))
}
