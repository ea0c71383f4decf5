//! `TableEntity::PROPERTY_SLOTS`: the properties a struct's `from_parts` takes, each with a
//! slot, so that a reader puts each in its slot as it meets it (see `table_core::typed`'s
//! `decode` module).
//!
//! Generated for a struct whose `from_parts` takes its properties itself (one with
//! `upgrade_from` reads through an `Entity` and keeps the default, no slots): the names,
//! unique and in ascending byte order (the order a reader reports faults in), and a `match`
//! from a name to its position among them.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// The `PROPERTY_SLOTS` constant for the properties `names` (any order, repeats allowed).
pub fn property_slots<'s>(p: &TokenStream, names: impl IntoIterator<Item = &'s str>) -> TokenStream {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    let arms = names.iter().enumerate().map(|(i, name)| {
        let i = Literal::usize_unsuffixed(i);
        quote!(#name => ::core::option::Option::Some(#i))
    });
    quote! {
        const PROPERTY_SLOTS: &'static #p::PropertySlots = &#p::PropertySlots {
            names: &[#(#names),*],
            slot: |__name| match __name {
                #(#arms,)*
                _ => ::core::option::Option::None,
            },
        };
    }
}
