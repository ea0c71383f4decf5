//! `#[derive(TableEntity)]` and `#[derive(PropertyValue)]` for the Azure Table Storage SDK.
//!
//! Every attribute is documented, with a worked example, on the `TableEntity` trait of
//! `table_core::typed` (re-exported by `table_client`). The expansion runs in stages, one
//! module each: `attr` parses `#[table(...)]` and decides each field's role, `ast` builds a
//! view of the input with the facts later stages need computed once, `valid` checks the rules
//! as a catalogue, `expand` generates code from the resolved view (with `bound` inferring
//! where-clause bounds per field), and `fallback` stubs the impl when there are errors. `ctxt`
//! collects errors so that one compile reports them all.
//!
//! The names and grammar shared with the runtime (system property names, key specs and their
//! widths, key characters, date formats, property name rules) are read from table-core, which
//! this crate depends on at the exact same version; see `table_core::typed::grammar`.

mod ast;
mod attr;
mod bound;
mod case;
mod ctxt;
mod expand;
mod fallback;
mod slots;
mod symbol;
mod template;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Implements `TableEntity` for a struct with named fields (a table row), or for an enum whose
/// variants each wrap one such struct (rows of several types in one table, told apart by
/// their `entity_type`). See the trait's documentation for the attributes.
#[proc_macro_derive(TableEntity, attributes(table))]
pub fn derive_table_entity(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive_entity(&input).into()
}

/// Implements `PropertyValue` and `KeyValue` for a unit-only enum, stored as the variant's
/// name (`#[table(rename = "...")]` on a variant, `#[table(rename_all = "...")]` on the enum).
#[proc_macro_derive(PropertyValue, attributes(table))]
pub fn derive_property_value(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive_value(&input).into()
}
