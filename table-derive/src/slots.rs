//! `TableEntity::PROPERTY_SLOTS`: the properties a struct's `from_parts` takes, each with a
//! slot, so that a reader puts each in its slot as it meets it (see `table_core::typed`'s
//! `decode` module).
//!
//! Generated for a struct whose `from_parts` takes its properties itself (one with
//! `upgrade_from` reads through an `Entity` and keeps the default, no slots): the names,
//! unique and in ascending byte order (the order a reader reports faults in), and a `match`
//! from a name to its position among them. The generated code reads each property by that
//! position (its slot number), so both come from [`slot_names`].

use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// The slot names of the properties `names` (any order, repeats allowed): unique, ascending;
/// a property's slot is its position here.
pub fn slot_names<'s>(names: impl IntoIterator<Item = &'s str>) -> Vec<&'s str> {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The `PROPERTY_SLOTS` constant for the slot names `names` (from [`slot_names`]).
pub fn property_slots(p: &TokenStream, names: &[&str]) -> TokenStream {
    let arms = names.iter().enumerate().map(|(i, name)| {
        let i = Literal::usize_unsuffixed(i);
        quote!(#name => ::core::option::Option::Some(#i))
    });
    // A `static`, so that the constant is one address wherever it is used: a list laid out by
    // these slots is then recognised by that address (`PropertyBag::take_slot`).
    quote! {
        const PROPERTY_SLOTS: &'static #p::PropertySlots = {
            static __SLOTS: #p::PropertySlots = #p::PropertySlots {
                names: &[#(#names),*],
                slot: |__name| match __name {
                    #(#arms,)*
                    _ => ::core::option::Option::None,
                },
            };
            &__SLOTS
        };
    }
}
