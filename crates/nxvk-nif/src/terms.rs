//! Decoding and encoding the terms the NIFs exchange: shapes and axis lists as tuples or
//! lists, op names as atoms or strings, and maps with atom keys.

use crate::reply::Reply;
use rustler::types::tuple::{get_tuple, make_tuple};
use rustler::{Atom, Encoder, Env, Term};

/// The elements of a tuple (`{2, 3}`) or a list (`[2, 3]`) of integers.
pub fn tuple_or_list_items<'a>(what: &str, term: Term<'a>) -> Reply<Vec<Term<'a>>> {
    let items = if term.is_tuple() {
        get_tuple(term)
    } else {
        term.decode::<Vec<Term<'a>>>()
    };
    items.map_err(|_| format!("{what}: expected a tuple or list of integers"))
}

/// A list of non-negative integers given as a tuple (`{2, 3}`) or a list (`[2, 3]`).
pub fn decode_indices(what: &str, term: Term<'_>) -> Reply<Vec<usize>> {
    tuple_or_list_items(what, term)?
        .into_iter()
        .map(|item| {
            item.decode::<usize>()
                .map_err(|_| format!("{what}: expected non-negative integers, got {item:?}"))
        })
        .collect()
}

/// [`decode_indices`], or `None` for `nil` (an op's default axes).
pub fn decode_optional_indices(what: &str, term: Term<'_>) -> Reply<Option<Vec<usize>>> {
    if is_nil(term) {
        Ok(None)
    } else {
        decode_indices(what, term).map(Some)
    }
}

/// A non-negative integer, or `None` for `nil` (an op's default axis or length).
pub fn decode_optional_index(what: &str, term: Term<'_>) -> Reply<Option<usize>> {
    if is_nil(term) {
        Ok(None)
    } else {
        term.decode::<usize>()
            .map(Some)
            .map_err(|_| format!("{what}: expected a non-negative integer or nil, got {term:?}"))
    }
}

fn is_nil(term: Term<'_>) -> bool {
    term == rustler::types::atom::nil().to_term(term.get_env())
}

/// A shape as an Elixir tuple.
pub fn encode_shape<'a>(env: Env<'a>, shape: &[usize]) -> Term<'a> {
    let dimensions: Vec<Term<'a>> = shape.iter().map(|&size| size.encode(env)).collect();
    make_tuple(env, &dimensions)
}

/// A name given as an atom (`:add`) or a string (`"add"`).
pub fn decode_name(term: Term<'_>) -> Reply<String> {
    if term.is_atom() {
        term.atom_to_string()
            .map_err(|_| "expected an op name (atom or string)".to_owned())
    } else {
        term.decode::<String>()
            .map_err(|_| "expected an op name (atom or string)".to_owned())
    }
}

/// A map with atom keys, for device info and counters.
pub fn atom_map<'a>(env: Env<'a>, pairs: &[(&str, Term<'a>)]) -> Reply<Term<'a>> {
    let mut map = Term::map_new(env);
    for (key, value) in pairs {
        let key = Atom::from_str(env, key).map_err(|_| format!("bad map key {key}"))?;
        map = map
            .map_put(key, *value)
            .map_err(|_| format!("could not build a map entry for {key:?}"))?;
    }
    Ok(map)
}
