//! Code generation, from what `valid` accepted and `ast::Checked` resolved; every path is fully
//! qualified through the `__private` module of the facade (or of the `crate = "..."`
//! override), no method is called on a user type, and everything sits in
//! `const _: () = { ... };` except the index handle types, declared beside the struct (with
//! its visibility, `#[doc(hidden)]`) so that its associated constants can name them.
//!
//! A struct's expansion is assembled from one function per generated part, each `match`ing on
//! the field roles decided while parsing.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};
use table_core::KeyName;
use table_core::keys::KeySpec;
use table_core::typed::grammar;

use crate::ast::{Checked, Entities, Field, Input, Key, Struct, TyKind, ValueEnum};
use crate::attr::{Container, IndexKind, Role};
use crate::bound::{InferredBounds, ParamsInScope};
use crate::ctxt::Ctxt;
use crate::fallback;
use crate::slots;
use crate::template::{Piece, Spec};
use crate::valid;

/// What `#[derive(TableEntity)]` expands, once accepted.
enum Accepted<'s, 'a> {
    Struct(Checked<'s, 'a>),
    Entities(&'s Entities<'a>),
}

/// `#[derive(TableEntity)]`.
pub fn derive_entity(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = Input::from_syn(&cx, input);
    let accepted = match &parsed {
        Some(Input::Struct(s)) => {
            valid::check_struct(&cx, s);
            Checked::resolve(s).map(Accepted::Struct)
        }
        Some(Input::Entities(e)) => {
            valid::check_entities(&cx, e);
            Some(Accepted::Entities(e))
        }
        None => None,
    };
    let p = private_path(parsed.as_ref().map(Input::attrs));
    match cx.check(accepted) {
        Ok(Accepted::Struct(c)) => {
            let (declared, body) = expand_struct(&p, &c);
            quote!(#declared const _: () = { #body };)
        }
        Ok(Accepted::Entities(e)) => {
            let body = expand_entities(&p, e);
            quote!(const _: () = { #body };)
        }
        Err(errors) => {
            let stub = fallback::entity(&p, input);
            quote!(#errors #stub)
        }
    }
}

/// `#[derive(PropertyValue)]`.
pub fn derive_value(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = ValueEnum::from_syn(&cx, input);
    if let Some(e) = &parsed {
        valid::check_value_enum(&cx, e);
    }
    let p = private_path(parsed.as_ref().map(|e| &e.attrs));
    match cx.check(parsed.as_ref()) {
        Ok(e) => {
            let body = expand_value_enum(&p, e);
            quote!(const _: () = { #body };)
        }
        Err(errors) => {
            let stub = fallback::value(&p, input);
            quote!(#errors #stub)
        }
    }
}

/// `::table_client::__private`, or `<crate>::__private` with `#[table(crate = "...")]`.
fn private_path(attrs: Option<&Container>) -> TokenStream {
    match attrs.and_then(|a| a.crate_path.get()) {
        Some(path) => quote!(#path::__private),
        None => quote!(::table_client::__private),
    }
}

fn spec_tokens(p: &TokenStream, spec: &Spec) -> TokenStream {
    match spec {
        Spec::Codec(KeySpec::Plain) => quote!(#p::KeySpec::Plain),
        Spec::Codec(KeySpec::ZeroPad(width)) => {
            let width = Literal::usize_unsuffixed(*width);
            quote!(#p::KeySpec::ZeroPad(#width))
        }
        Spec::Codec(KeySpec::Ticks) => quote!(#p::KeySpec::Ticks),
        Spec::Codec(KeySpec::InvertedTicks) => quote!(#p::KeySpec::InvertedTicks),
        Spec::Codec(KeySpec::Ordered) => quote!(#p::KeySpec::Ordered),
        Spec::Codec(KeySpec::Date(format)) => quote!(#p::KeySpec::Date(#format)),
        Spec::Date(format) => quote!(#p::KeySpec::Date(#format)),
    }
}

fn key_name_tokens(p: &TokenStream, key: KeyName) -> TokenStream {
    match key {
        KeyName::PartitionKey => quote!(#p::KeyName::PartitionKey),
        KeyName::RowKey => quote!(#p::KeyName::RowKey),
    }
}

/// The name of the `KeyTemplate` constant of a primary key.
fn primary_const(key: KeyName) -> Ident {
    match key {
        KeyName::PartitionKey => format_ident!("__PARTITION_KEY"),
        KeyName::RowKey => format_ident!("__ROW_KEY"),
    }
}

/// The names of index `i`'s `KeyTemplate` constants: (partition key, row key).
fn index_consts(i: usize, own_partition: bool) -> (Ident, Ident) {
    let pk = if own_partition {
        format_ident!("__INDEX_{i}_PARTITION_KEY")
    } else {
        primary_const(KeyName::PartitionKey)
    };
    (pk, format_ident!("__INDEX_{i}_ROW_KEY"))
}

/// How a key field is taken by a generated constructor: `(parameter type, pushed type, value
/// of the parameter as pushed)`. Small `Copy` types are taken by value, strings as `&str`.
fn key_param(f: &Field<'_>) -> (TokenStream, TokenStream, TokenStream) {
    let (param, ty) = (f.ident, f.ty);
    match f.kind {
        TyKind::String => (quote!(&str), quote!(str), quote!(#param)),
        TyKind::Int | TyKind::Bool | TyKind::DateTime | TyKind::Uuid => {
            (quote!(#ty), quote!(#ty), quote!(&#param))
        }
        _ => (quote!(&#ty), quote!(#ty), quote!(#param)),
    }
}

/// `field: Type` parameters, one per distinct field of `fields`.
fn key_params(fields: &[&Field<'_>]) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let ident = f.ident;
            let (param_ty, _, _) = key_param(f);
            quote!(#ident: #param_ty)
        })
        .collect()
}

/// Statements pushing `fields` into the builder `__b`, from the parameters named after them.
fn push_params(p: &TokenStream, fields: &[&Field<'_>]) -> TokenStream {
    let pushes = fields.iter().map(|f| {
        let (_, push_ty, value) = key_param(f);
        quote!(let __b = #p::KeyBuilder::push::<#push_ty>(__b, #value)?;)
    });
    quote!(#(#pushes)*)
}

/// A block evaluating to `Result<CheckedKey>`: the key of `konst` built from the fields of
/// `self`.
fn build_from_self(p: &TokenStream, konst: &Ident, key: &Key<'_, '_>) -> TokenStream {
    let pushes = key.fields.iter().map(|f| {
        let (ident, ty) = (f.ident, f.ty);
        quote!(let __b = #p::KeyBuilder::push::<#ty>(__b, &self.#ident)?;)
    });
    quote!({
        let __b = #p::KeyTemplate::builder(&#konst);
        #(#pushes)*
        #p::KeyBuilder::finish_checked(__b)
    })
}

/// The items declared beside the struct (its index handle types), and the body of the
/// `const _` block.
fn expand_struct(p: &TokenStream, c: &Checked<'_, '_>) -> (TokenStream, TokenStream) {
    let s = c.input;
    let ident = &s.original.ident;
    let (entity_bounds, inherent_bounds) = bounds(p, c);
    let entity_generics = entity_bounds.augment(&s.original.generics);
    let (impl_generics, ty_generics, where_clause) = entity_generics.split_for_impl();
    let inherent_generics = inherent_bounds.augment(&s.original.generics);
    let (inherent_impl, _, inherent_where) = inherent_generics.split_for_impl();

    let templates = key_templates(p, c);
    let (discriminator_consts, check_discriminator) = discriminator(p, s);
    let (prepare, write_through, property_count) = write_through(p, s);
    let decodes = key_only_decodes(p, c);
    let slot_names = slots::slot_names(read_properties(s));
    let reads = property_reads(p, s, &slot_names);
    let inits = field_inits(p, s);
    let upgrades = upgrades(p, s);
    let upgrade_asserts = upgrade_asserts(p, s);
    let select = select_fn(s);
    // An older version's row is read as the older type, from an `Entity`: such types keep the
    // default `from_parts` and `read_through`, which build one, and need no slots.
    let from_parts = match s.attrs.upgrade_from.get() {
        Some(_) => quote!(),
        None => {
            let slots = slots::property_slots(p, &slot_names);
            quote! {
                #slots

                fn from_parts(mut __parts: #p::ReadEntity<'_>) -> #p::Result<Self> {
                    Self::__table_read(&mut __parts)
                }

                fn read_through<__R: #p::EntityReader + ?::core::marker::Sized>(
                    __reader: &mut __R,
                ) -> #p::Result<Self> {
                    Self::__table_read(__reader)
                }
            }
        }
    };
    let build_pk = build_from_self(p, &primary_const(KeyName::PartitionKey), &c.partition_key);
    let build_rk = build_from_self(p, &primary_const(KeyName::RowKey), &c.row_key);
    let (index_defs, indexes) = index_items(p, c);
    let (handles, handle_impls) = index_handles(p, c, &entity_generics);
    let handle_consts = index_handle_consts(c);
    let columns = filter_columns(p, c);
    let encrypted = encrypted_properties(c.input);
    let constructors = key_helpers(
        p,
        Owner::Entity,
        &KeyConst { key: &c.partition_key, konst: primary_const(KeyName::PartitionKey) },
        &KeyConst { key: &c.row_key, konst: primary_const(KeyName::RowKey) },
    );

    let body = quote! {
        #templates
        #upgrade_asserts

        #index_defs

        #[automatically_derived]
        impl #impl_generics #p::TableEntity for #ident #ty_generics #where_clause {
            #discriminator_consts
            #encrypted

            fn to_entity(&self) -> #p::Result<#p::Entity> {
                Self::__table_prepare(self).map(|__prepared| #p::written_entity(self, __prepared, #property_count))
            }

            fn prepare_write(&self) -> #p::Result<::core::option::Option<#p::PreparedWrite>> {
                Self::__table_prepare(self).map(::core::option::Option::Some)
            }

            #write_through

            fn from_entity(mut __entity: #p::Entity) -> #p::Result<Self> {
                #upgrades
                Self::__table_read(&mut __entity)
            }

            #from_parts

            fn partition_key(&self) -> #p::Result<::std::string::String> {
                Self::__table_partition_key(self).map(#p::CheckedKey::into_string)
            }

            fn row_key(&self) -> #p::Result<::std::string::String> {
                Self::__table_row_key(self).map(#p::CheckedKey::into_string)
            }

            #select

            fn key_templates() -> ::core::option::Option<#p::KeyTemplates> {
                ::core::option::Option::Some(#p::KeyTemplates { partition_key: &__PARTITION_KEY, row_key: &__ROW_KEY })
            }

            #indexes
        }

        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            /// One reading of the fields, for `from_entity` (over the entity's map),
            /// `from_parts` (over a reader's list) and `read_through` (straight from what a
            /// reader read): the same checks, with faults reported in the same order.
            fn __table_read<__R: #p::EntityReader + ?::core::marker::Sized>(
                __entity: &mut __R,
            ) -> #p::Result<Self> {
                #check_discriminator
                #(#decodes)*
                #(#reads)*
                ::core::result::Result::Ok(Self { #(#inits),* })
            }

            /// The `PartitionKey`, for `partition_key` and `__table_prepare` (which writes it
            /// without checking it again).
            fn __table_partition_key(&self) -> #p::Result<#p::CheckedKey> #build_pk

            /// The `RowKey`, as `__table_partition_key`.
            fn __table_row_key(&self) -> #p::Result<#p::CheckedKey> #build_rk

            #prepare
        }

        #[automatically_derived]
        impl #inherent_impl #ident #ty_generics #inherent_where {
            #(#columns)*

            #(#handle_consts)*

            #constructors
        }

        #handle_impls
    };
    (handles, body)
}

/// The bounds of the `TableEntity` impl (every trait the generated code uses on a field) and
/// of the inherent impl (the filter columns and key constructors).
fn bounds(p: &TokenStream, c: &Checked<'_, '_>) -> (InferredBounds, InferredBounds) {
    let params = ParamsInScope::new(&c.input.original.generics);
    let (mut entity, mut inherent) = (InferredBounds::default(), InferredBounds::default());
    for f in &c.input.fields {
        match f.attrs.role {
            Role::Stored => {
                entity.insert(&params, f.ty, quote!(#p::Property));
                inherent.insert(&params, f.ty, quote!(#p::Property));
            }
            Role::Json => {
                entity.insert(&params, f.ty, quote!(#p::serde::Serialize));
                entity.insert(&params, f.ty, quote!(#p::serde::de::DeserializeOwned));
            }
            Role::Skip => entity.insert(&params, f.ty, quote!(::core::default::Default)),
            Role::KeyOnly => entity.insert(&params, f.ty, quote!(#p::KeyValue)),
            // Their types are checked to be concrete (`Option<DateTime<Utc>>`, `Option<ETag>`).
            Role::Timestamp | Role::ETag => {}
        }
    }
    for key in [&c.partition_key, &c.row_key] {
        for f in &key.fields {
            entity.insert(&params, f.ty, quote!(#p::KeyValue));
            inherent.insert(&params, f.ty, quote!(#p::KeyValue));
        }
    }
    for index in &c.indexes {
        for f in index.partition_key.iter().chain([&index.row_key]).flat_map(|k| &k.fields) {
            entity.insert(&params, f.ty, quote!(#p::KeyValue));
        }
    }
    (entity, inherent)
}

/// `const NAME: KeyTemplate = ...;` for one template; `parsed` marks the key-only fields read
/// back from it.
fn template_const(p: &TokenStream, name: &Ident, key: &Key<'_, '_>, parsed: &[&str]) -> TokenStream {
    let t = key.template;
    let text = t.lit.value();
    let key_name = key_name_tokens(p, t.key);
    let segments = t.pieces.iter().map(|piece| match piece {
        Piece::Literal(s) => quote!(#p::Segment::Literal(#s)),
        Piece::Field { name, spec } => {
            let spec = spec_tokens(p, spec);
            let parsed = parsed.contains(&name.as_str());
            quote!(#p::Segment::Field { name: #name, spec: #spec, parsed: #parsed })
        }
    });
    quote! {
        const #name: #p::KeyTemplate = #p::KeyTemplate {
            key: #key_name,
            text: #text,
            segments: &[#(#segments),*],
        };
    }
}

/// The `KeyTemplate` constants of the primary keys and of every index.
fn key_templates(p: &TokenStream, c: &Checked<'_, '_>) -> TokenStream {
    let mut out = TokenStream::new();
    for key in [&c.partition_key, &c.row_key] {
        let parsed: Vec<&str> = c
            .input
            .fields
            .iter()
            .filter(|f| f.key_source.is_some_and(|src| src.key == key.template.key))
            .map(|f| f.name.as_str())
            .collect();
        out.extend(template_const(p, &primary_const(key.template.key), key, &parsed));
    }
    for (i, index) in c.indexes.iter().enumerate() {
        let (pk_name, rk_name) = index_consts(i, index.partition_key.is_some());
        if let Some(own) = &index.partition_key {
            out.extend(template_const(p, &pk_name, own, &[]));
        }
        out.extend(template_const(p, &rk_name, &index.row_key, &[]));
    }
    out
}

/// The `ENTITY_TYPE`/`VERSION` constants, and the statement checking them (`write_through`
/// writes them).
fn discriminator(p: &TokenStream, s: &Struct<'_>) -> (TokenStream, TokenStream) {
    let Some(entity_type) = s.attrs.entity_type.get().map(|lit| lit.value()) else {
        return (quote!(), quote!());
    };
    let version = match s.attrs.version.get() {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    (
        quote! {
            const ENTITY_TYPE: ::core::option::Option<&'static str> = ::core::option::Option::Some(#entity_type);
            const VERSION: ::core::option::Option<i32> = #version;
        },
        quote!(#p::check_discriminator(__entity, #entity_type, #version)?;),
    )
}

/// The inherent `__table_prepare` and the trait's `write_through`: the type's entity, handed to
/// a sink property by property (see table-core's `encode` module), the one description of what
/// a write stores (`to_entity` builds its entity from this walk, the engine checks and encodes
/// a row from it). `__table_prepare` builds the keys, then serialises the JSON fields in field
/// order, so that the first to fail is the first in the struct; `write_through` hands every
/// property, the discriminator's included, in ascending name order (the order a row stores
/// them in, sorted here; `valid.rs` refuses two fields of one name), so that none is compared
/// at run time, a JSON field as the text `__table_prepare` kept at its position.
///
/// Also the most properties the walk hands (an `Option` field's `None` hands none).
fn write_through(p: &TokenStream, s: &Struct<'_>) -> (TokenStream, TokenStream, usize) {
    let mut json = Vec::new();
    let mut properties: Vec<(String, TokenStream)> = Vec::new();
    if let Some(entity_type) = s.attrs.entity_type.get().map(|lit| lit.value()) {
        properties.push((grammar::ENTITY_TYPE.to_owned(), quote!(#p::ValueRef::Str(#entity_type))));
        if let Some(version) = s.attrs.version.get() {
            properties.push((grammar::ENTITY_VERSION.to_owned(), quote!(#p::ValueRef::Int32(#version))));
        }
    }
    // Each name measured by the compiler (in a `const` block), not on every write.
    let name = |prop: &str| quote!(&const { #p::StaticName::new(#prop) });
    let mut writes: Vec<(String, TokenStream)> = Vec::new();
    for (property, value) in properties {
        let name = name(&property);
        writes.push((property, quote!(#p::FieldSink::property(__sink, #name, #value);)));
    }
    for f in &s.fields {
        let (ident, ty, prop) = (f.ident, f.ty, &f.property);
        let span = ty.span();
        let name = name(prop);
        match f.attrs.role {
            Role::Stored => writes.push((
                prop.clone(),
                quote_spanned!(span=> #p::write_field::<#ty, __S>(__sink, #name, &self.#ident);),
            )),
            Role::Json => {
                let index = Literal::usize_unsuffixed(json.len());
                json.push(quote_spanned!(span=> #p::json_text::<#ty>(#prop, &self.#ident)?));
                writes.push((prop.clone(), quote!(#p::write_json_field(__sink, #name, __prepared, #index);)));
            }
            Role::Skip | Role::Timestamp | Role::ETag | Role::KeyOnly => {}
        }
    }
    writes.sort_by(|(a, _), (b, _)| a.cmp(b));
    let property_count = writes.len();
    let writes = writes.iter().map(|(_, write)| write);
    // Only JSON fields read what `__table_prepare` kept beyond the keys.
    let unread = json.is_empty().then(|| quote!(let _ = __prepared;));
    let prepare = quote! {
        /// The keys and the JSON fields' text, for `to_entity` and `prepare_write`.
        fn __table_prepare(&self) -> #p::Result<#p::PreparedWrite> {
            let __partition_key = Self::__table_partition_key(self)?;
            let __row_key = Self::__table_row_key(self)?;
            ::core::result::Result::Ok(#p::PreparedWrite::new(__partition_key, __row_key, ::std::vec![#(#json),*]))
        }
    };
    let write_through = quote! {
        fn write_through<__S: #p::FieldSink<#p::StaticName>>(&self, __prepared: &#p::PreparedWrite, __sink: &mut __S) {
            #unread
            #(#writes)*
        }
    };
    (prepare, write_through, property_count)
}

/// The local a key-only field is decoded into.
fn key_local(f: &Field<'_>) -> Ident {
    format_ident!("__key_{}", f.name)
}

/// `from_entity`: the key-only fields, decoded from the keys they are read back from, before
/// the properties are taken out of the entity.
fn key_only_decodes(p: &TokenStream, c: &Checked<'_, '_>) -> Vec<TokenStream> {
    let mut decodes = Vec::new();
    for (key, template, parts, input, take) in [
        (
            KeyName::PartitionKey,
            c.partition_key.template,
            format_ident!("__pk_parts"),
            quote!(#p::EntityReader::partition_key(__entity)),
            quote!(#p::EntityReader::take_partition_key(__entity)),
        ),
        (
            KeyName::RowKey,
            c.row_key.template,
            format_ident!("__rk_parts"),
            quote!(#p::EntityReader::row_key(__entity)),
            quote!(#p::EntityReader::take_row_key(__entity)),
        ),
    ] {
        let konst = primary_const(key);
        let mine: Vec<(&Field<'_>, usize)> = c
            .input
            .fields
            .iter()
            .filter_map(|f| f.key_source.filter(|src| src.key == key).map(|src| (f, src.position)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        // A key that is one field of no fixed width is that field's text whole: the field is
        // read from the key itself, which nothing reads afterwards, so no read splits it and a
        // `String` field keeps a key its reader owns without a copy.
        if let [Piece::Field { spec, .. }] = template.pieces.as_slice()
            && spec.fixed_width().is_none()
            && let [(f, _)] = mine.as_slice()
        {
            let (local, ty) = (key_local(f), f.ty);
            decodes.push(quote!(let #local = #p::KeyTemplate::decode_whole::<#ty>(&#konst, #take)?;));
            continue;
        }
        let fields = template.pieces.iter().filter(|piece| matches!(piece, Piece::Field { .. })).count();
        let fields = Literal::usize_unsuffixed(fields);
        decodes.push(quote!(let #parts = #p::KeyTemplate::split_fields::<#fields>(&#konst, #input)?;));
        for (f, position) in mine {
            let (local, ty) = (key_local(f), f.ty);
            let position = Literal::usize_unsuffixed(position);
            decodes.push(quote!(let #local = #p::KeyTemplate::decode::<#ty>(&#konst, &#parts, #position)?;));
        }
    }
    decodes
}

/// The local a stored field's read (a `Result`) waits in until the fields are checked.
fn read_local(f: &Field<'_>) -> Ident {
    format_ident!("__read_{}", f.name)
}

/// `from_entity`: every field stored as a property read into its local, in ascending property
/// name order (the order readers store properties in, so a reader over a stored row finds them
/// in one forward pass); faults are reported later, in field order, by [`field_inits`]. Each
/// is taken with its slot number, its position among `slot_names` (see `slots`).
fn property_reads(p: &TokenStream, s: &Struct<'_>, slot_names: &[&str]) -> Vec<TokenStream> {
    let mut stored: Vec<&Field<'_>> = s.fields.iter().filter(|f| f.attrs.role.stores_property()).collect();
    stored.sort_by(|a, b| a.property.cmp(&b.property));
    stored
        .into_iter()
        .map(|f| {
            let (local, ty, prop) = (read_local(f), f.ty, &f.property);
            let read = match f.attrs.role {
                Role::Json => quote!(read_json),
                _ => quote!(read_property),
            };
            // Every stored property is among the slot names (`read_properties`); were one not,
            // its number would find no slot of its name and it would be read by name.
            let slot =
                Literal::usize_unsuffixed(slot_names.binary_search(&prop.as_str()).unwrap_or(usize::MAX));
            quote_spanned!(ty.span()=> let #local = #p::#read::<#ty>(
                __entity,
                #prop,
                <Self as #p::TableEntity>::PROPERTY_SLOTS,
                #slot,
            );)
        })
        .collect()
}

/// `from_entity`: every field's initialiser, in field order (so the first faulty field, in
/// that order, is the error).
fn field_inits(p: &TokenStream, s: &Struct<'_>) -> Vec<TokenStream> {
    s.fields
        .iter()
        .map(|f| {
            let (ident, ty) = (f.ident, f.ty);
            let span = ty.span();
            let init = match f.attrs.role {
                Role::Stored | Role::Json => {
                    let local = read_local(f);
                    quote!(#local?)
                }
                Role::Skip => quote_spanned!(span=> <#ty as ::core::default::Default>::default()),
                Role::Timestamp => quote_spanned!(span=> #p::EntityReader::timestamp(__entity)),
                Role::ETag => quote_spanned!(span=> #p::EntityReader::take_etag(__entity)),
                Role::KeyOnly => {
                    let local = key_local(f);
                    quote!(#local)
                }
            };
            quote!(#ident: #init)
        })
        .collect()
}

/// `from_entity`, before the entity is read at the current version: a row stored at an older
/// version of `upgrade_from` is read as the type its function takes and upgraded; the result
/// carries the stored row's ETag and Timestamp, whatever the function made of them.
fn upgrades(p: &TokenStream, s: &Struct<'_>) -> TokenStream {
    let (Some(upgrades), Some(entity_type), Some(current)) =
        (s.attrs.upgrade_from.get(), s.attrs.entity_type.get(), s.attrs.version.get())
    else {
        return quote!();
    };
    let entity_type = entity_type.value();
    let older = upgrades.iter().map(|u| u.version);
    let (mut keep, mut carry) = (Vec::new(), Vec::new());
    for f in &s.fields {
        let ident = f.ident;
        match f.attrs.role {
            Role::Timestamp => {
                keep.push(quote!(let __timestamp = __entity.timestamp;));
                carry.push(quote!(__value.#ident = __timestamp;));
            }
            Role::ETag => {
                keep.push(quote!(let __etag = ::core::clone::Clone::clone(&__entity.etag);));
                carry.push(quote!(__value.#ident = __etag;));
            }
            Role::Stored | Role::Json | Role::Skip | Role::KeyOnly => {}
        }
    }
    let arms = upgrades.iter().map(|u| {
        let (version, path) = (u.version, &u.path);
        quote! {
            if __version == #version {
                #(#keep)*
                let mut __value: Self = #p::upgrade(__entity, #path)?;
                #(#carry)*
                return ::core::result::Result::Ok(__value);
            }
        }
    });
    quote! {
        let __version = #p::readable_version(&__entity, #entity_type, #current, &[#(#older),*])?;
        #(#arms)*
    }
}

/// Constant checks that each `upgrade_from` function takes the type's `entity_type` at the
/// version it is listed under (concrete types only: a generic one's paths may name its
/// parameters).
fn upgrade_asserts(p: &TokenStream, s: &Struct<'_>) -> TokenStream {
    let (Some(upgrades), Some(entity_type), true) = (
        s.attrs.upgrade_from.get(),
        s.attrs.entity_type.get().map(|lit| lit.value()),
        s.original.generics.params.is_empty(),
    ) else {
        return quote!();
    };
    let asserts = upgrades.iter().map(|u| {
        let (version, path) = (u.version, &u.path);
        let written = path.to_token_stream().to_string().replace(' ', "");
        let wrong_version = format!(
            "`{written}` in `upgrade_from({version} = ...)` takes a type whose `version` is not {version}"
        );
        let wrong_type = format!(
            "`{written}` in `upgrade_from` takes a type whose `entity_type` is not \"{entity_type}\""
        );
        quote_spanned! {path.span()=>
            const _: () = ::core::assert!(
                #p::same_version(#p::upgrade_source(&#path).1, ::core::option::Option::Some(#version)),
                #wrong_version
            );
            const _: () = ::core::assert!(
                #p::same_entity_type(#p::upgrade_source(&#path).0, ::core::option::Option::Some(#entity_type)),
                #wrong_type
            );
        }
    });
    quote!(#(#asserts)*)
}

/// `select()`: the properties `from_entity` reads, or every property (the default) for a type
/// that upgrades older versions, whose properties its own fields do not list.
fn select_fn(s: &Struct<'_>) -> TokenStream {
    if s.attrs.upgrade_from.get().is_some() {
        return quote!();
    }
    let select = select_list(s);
    quote! {
        fn select() -> ::core::option::Option<&'static [&'static str]> {
            ::core::option::Option::Some(&[#(#select),*])
        }
    }
}

/// The keys, `Timestamp` when a field holds it, the discriminator, and every property a field
/// is stored as.
fn select_list<'s>(s: &'s Struct<'_>) -> Vec<&'s str> {
    let mut select = vec![grammar::PARTITION_KEY, grammar::ROW_KEY];
    if s.fields.iter().any(|f| f.attrs.role == Role::Timestamp) {
        select.push(grammar::TIMESTAMP);
    }
    select.extend(read_properties(s));
    select
}

/// The custom properties `from_entity` reads: the discriminator and every property a field is
/// stored as.
fn read_properties<'s>(s: &'s Struct<'_>) -> Vec<&'s str> {
    let mut names = Vec::new();
    if s.attrs.entity_type.get().is_some() {
        names.push(grammar::ENTITY_TYPE);
        if s.attrs.version.get().is_some() {
            names.push(grammar::ENTITY_VERSION);
        }
    }
    names.extend(s.fields.iter().filter(|f| f.attrs.role.stores_property()).map(|f| f.property.as_str()));
    names
}

/// `ENCRYPTED_PROPERTIES`: the properties of `encrypt` fields, when there are any.
fn encrypted_properties(s: &Struct<'_>) -> TokenStream {
    let names: Vec<&str> =
        s.fields.iter().filter(|f| f.attrs.encrypt.is_some()).map(|f| f.property.as_str()).collect();
    if names.is_empty() {
        return quote!();
    }
    quote!(const ENCRYPTED_PROPERTIES: &'static [&'static str] = &[#(#names),*];)
}

/// `Type::FIELD`: a typed filter column per field stored as a plain property (not encrypted:
/// the service sees only its ciphertext), for the `Timestamp` field, and a key column per
/// key-only field.
fn filter_columns(p: &TokenStream, c: &Checked<'_, '_>) -> Vec<TokenStream> {
    c.input
        .fields
        .iter()
        .filter(|f| f.attrs.encrypt.is_none())
        .filter_map(|f| {
            let name = format_ident!("{}", f.name.to_uppercase());
            let property = match f.attrs.role {
                Role::Stored => f.property.as_str(),
                Role::Timestamp => grammar::TIMESTAMP,
                Role::KeyOnly => return key_column(p, c, f, &name),
                Role::Json | Role::Skip | Role::ETag => return None,
            };
            let ty = f.ty;
            let doc = format!("Typed filter column of the `{property}` property (field `{}`).", f.name);
            Some(quote! {
                #[doc = #doc]
                pub const #name: #p::Column<<#ty as #p::Property>::Value> = #p::Column::new(#property);
            })
        })
        .collect()
}

/// The `KeyColumn` of a key-only field, filtering on the key it is read back from: what it
/// allows follows from the template (see `KeyColumn`).
fn key_column(p: &TokenStream, c: &Checked<'_, '_>, f: &Field<'_>, name: &Ident) -> Option<TokenStream> {
    let source = f.key_source?;
    let key = if source.key == KeyName::PartitionKey { &c.partition_key } else { &c.row_key };
    let t = key.template;
    let whole = match t.pieces.as_slice() {
        [Piece::Field { spec, .. }] => Some(spec),
        _ => None,
    };
    let (marker, spec) = match whole {
        None => (quote!(#p::PartOfCompositeKey), quote!(#p::KeySpec::Plain)),
        Some(spec @ Spec::Date(_)) => (quote!(#p::DateFormattedKey), spec_tokens(p, spec)),
        Some(spec) => {
            let ordered = matches!(
                (&f.kind, spec),
                (TyKind::String, Spec::Codec(KeySpec::Plain))
                    | (TyKind::Int, Spec::Codec(KeySpec::ZeroPad(_) | KeySpec::Ordered))
                    | (TyKind::DateTime, Spec::Codec(KeySpec::Ticks))
            );
            let marker = match ordered {
                true => quote!(#p::OrderedWholeKey),
                false => quote!(#p::UnorderedWholeKey),
            };
            (marker, spec_tokens(p, spec))
        }
    };
    let (ty, key_name) = (f.ty, key_name_tokens(p, t.key));
    let doc = format!(
        "Typed filter column of the key-only field `{}`, through the {} template `{}`.",
        f.name,
        t.attr,
        t.lit.value()
    );
    Some(quote! {
        #[doc = #doc]
        pub const #name: #p::KeyColumn<#ty, #marker> = #p::KeyColumn::new(#key_name, #spec);
    })
}

/// The `__INDEXES` constant, and the `indexes()` and `index_key()` items of the trait impl,
/// when the type declares indexes.
fn index_items(p: &TokenStream, c: &Checked<'_, '_>) -> (TokenStream, TokenStream) {
    if c.indexes.is_empty() {
        return (quote!(), quote!());
    }
    let mut defs = Vec::new();
    let mut arms = Vec::new();
    for (i, index) in c.indexes.iter().enumerate() {
        let name = &index.name;
        let (pk_name, rk_name) = index_consts(i, index.partition_key.is_some());
        let same_partition = index.partition_key.is_none();
        let kind = match index.kind {
            IndexKind::Secondary => quote!(#p::IndexKind::Secondary),
            IndexKind::Lookup => quote!(#p::IndexKind::Lookup),
        };
        let projection = match &index.projection {
            Some(fields) => {
                let props = fields.iter().map(|f| &f.property);
                quote!(::core::option::Option::Some(&[#(#props),*]))
            }
            None => quote!(::core::option::Option::None),
        };
        defs.push(quote! {
            #p::IndexDef {
                name: #name,
                kind: #kind,
                same_partition: #same_partition,
                partition_key: &#pk_name,
                row_key: &#rk_name,
                projection: #projection,
            }
        });
        let build_pk = build_from_self(p, &pk_name, index.partition_key.as_ref().unwrap_or(&c.partition_key));
        let build_rk = build_from_self(p, &rk_name, &index.row_key);
        arms.push(quote! {
            #name => ::core::result::Result::Ok(::core::option::Option::Some(
                #p::entity_key(#p::CheckedKey::into_string(#build_pk?), #p::CheckedKey::into_string(#build_rk?)),
            )),
        });
    }
    let defs = quote!(const __INDEXES: &[#p::IndexDef] = &[#(#defs),*];);
    let items = quote! {
        fn indexes() -> &'static [#p::IndexDef] {
            __INDEXES
        }

        fn index_key(&self, __index: &str) -> #p::Result<::core::option::Option<#p::EntityKey>> {
            match __index {
                #(#arms)*
                _ => ::core::result::Result::Ok(::core::option::Option::None),
            }
        }
    };
    (defs, items)
}

/// Where generated key helpers live: associated functions of the entity, or methods of an
/// index handle (taking `self`, so that `Employee::BY_EMAIL.key(..)` reads as it is written).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Entity,
    Handle,
}

impl Owner {
    /// The receiver, as a parameter and as an argument passed on.
    fn receiver(self) -> (TokenStream, TokenStream) {
        match self {
            Owner::Entity => (quote!(), quote!()),
            Owner::Handle => (quote!(self,), quote!(self,)),
        }
    }
}

/// One key template and the name of its `KeyTemplate` constant.
struct KeyConst<'k, 's, 'a> {
    key: &'k Key<'s, 'a>,
    konst: Ident,
}

/// `key(..)`, and per key `<key>_for(..)`, `<key>_prefix(..)` and `<key>_range(..)`: of the
/// entity's primary keys, or of an index's keys.
fn key_helpers(
    p: &TokenStream,
    owner: Owner,
    pk: &KeyConst<'_, '_, '_>,
    rk: &KeyConst<'_, '_, '_>,
) -> TokenStream {
    let (pk_key, rk_key) = (pk.key, rk.key);
    let mut all_fields = pk_key.unique_fields();
    all_fields.extend(
        rk_key.unique_fields().into_iter().filter(|f| !pk_key.fields.iter().any(|g| g.name == f.name)),
    );
    let params = key_params(&all_fields);
    let (recv_param, recv_arg) = owner.receiver();
    let whose = match owner {
        Owner::Entity => "entity",
        Owner::Handle => "index row",
    };
    let doc = format!(
        "The key of the {whose} with these fields (`{}` / `{}`).",
        pk_key.template.lit.value(),
        rk_key.template.lit.value()
    );
    let (pk_for, pk_args) = (for_fn(pk_key), args(&pk_key.unique_fields()));
    let (rk_for, rk_args) = (for_fn(rk_key), args(&rk_key.unique_fields()));
    let mut out = quote! {
        #[doc = #doc]
        pub fn key(#recv_param #(#params),*) -> #p::Result<#p::EntityKey> {
            ::core::result::Result::Ok(#p::entity_key(
                Self::#pk_for(#recv_arg #(#pk_args),*)?,
                Self::#rk_for(#recv_arg #(#rk_args),*)?,
            ))
        }
    };
    for key in [pk, rk] {
        out.extend(key_for(p, owner, key));
        out.extend(key_prefix_and_range(p, owner, key));
    }
    out
}

/// `partition_key_for` or `row_key_for`.
fn for_fn(key: &Key<'_, '_>) -> Ident {
    format_ident!("{}_for", key.template.attr.0)
}

/// The fields' parameters, to pass on.
fn args<'a>(fields: &[&'a Field<'_>]) -> Vec<&'a Ident> {
    fields.iter().map(|f| f.ident).collect()
}

/// `<key>_for(fields..)`: the key built from its distinct fields.
fn key_for(p: &TokenStream, owner: Owner, k: &KeyConst<'_, '_, '_>) -> TokenStream {
    let (key, konst) = (k.key, &k.konst);
    let t = key.template;
    let params = key_params(&key.unique_fields());
    let pushes = push_params(p, &key.fields);
    let name = for_fn(key);
    let (recv_param, _) = owner.receiver();
    let doc = format!("The {} `{}` built from its fields.", t.attr, t.lit.value());
    quote! {
        #[doc = #doc]
        pub fn #name(#recv_param #(#params),*) -> #p::Result<::std::string::String> {
            let __b = #p::KeyTemplate::builder(&#konst);
            #pushes
            #p::KeyBuilder::finish(__b)
        }
    }
}

/// `<key>_prefix(leading..)` and `<key>_range(leading.., last_from, last_to)`, for a template
/// whose fields are distinct (a repeated field has no single place to vary).
fn key_prefix_and_range(p: &TokenStream, owner: Owner, k: &KeyConst<'_, '_, '_>) -> TokenStream {
    let (key, konst) = (k.key, &k.konst);
    let Some((last, leading)) = key.fields.split_last().filter(|_| key.has_distinct_fields()) else {
        return quote!();
    };
    let t = key.template;
    let (which, text) = (t.attr.0, t.lit.value());
    let key_name = key_name_tokens(p, t.key);
    let (recv_param, recv_arg) = owner.receiver();
    let leading_params = key_params(leading);
    let leading_pushes = push_params(p, leading);
    let leading_args = args(leading);
    let prefix_fn = format_ident!("{which}_prefix");
    let prefix_doc =
        format!("Every {which} of `{text}` whose fields before `{}` have these values.", last.name);
    let (from, to) = (format_ident!("{}_from", last.name), format_ident!("{}_to", last.name));
    let (last_ty, _, _) = key_param(last);
    let for_fn = for_fn(key);
    let range_fn = format_ident!("{which}_range");
    let range_doc = format!(
        "Every {which} of `{text}` with `{}` from `{from}` to `{to}`, both included, and the \
         other fields as given (a range in key order: numeric only for fixed-width specs).",
        last.name
    );
    quote! {
        #[doc = #prefix_doc]
        pub fn #prefix_fn(#recv_param #(#leading_params),*) -> #p::Result<#p::KeyRange> {
            let __b = #p::KeyTemplate::builder(&#konst);
            #leading_pushes
            ::core::result::Result::Ok(#p::KeyRange::prefix(#key_name, #p::KeyBuilder::prefix(__b)))
        }

        #[doc = #range_doc]
        pub fn #range_fn(#recv_param #(#leading_params,)* #from: #last_ty, #to: #last_ty) -> #p::Result<#p::KeyRange> {
            ::core::result::Result::Ok(#p::KeyRange::inclusive(
                #key_name,
                Self::#for_fn(#recv_arg #(#leading_args,)* #from)?,
                Self::#for_fn(#recv_arg #(#leading_args,)* #to)?,
            ))
        }
    }
}

/// Per index, the handle type declared beside the entity (outside the `const _` block, so that
/// it can be named in the entity's API) and, inside the block, its impls: `Clone`, `Copy`,
/// `Index` and its kind's marker trait, and its key helpers.
fn index_handles(
    p: &TokenStream,
    c: &Checked<'_, '_>,
    entity_generics: &syn::Generics,
) -> (TokenStream, TokenStream) {
    let s = c.input;
    let (ident, vis, generics) = (&s.original.ident, &s.original.vis, &s.original.generics);
    let (plain_impl, ty_generics, plain_where) = generics.split_for_impl();
    let where_clause = &generics.where_clause;
    let (impl_generics, _, bounded_where) = entity_generics.split_for_impl();
    let (mut declared, mut impls) = (TokenStream::new(), TokenStream::new());
    for (i, index) in c.indexes.iter().enumerate() {
        let handle = &index.handle;
        let doc = format!("The handle type of `{ident}::{}`.", index.handle_const);
        declared.extend(quote! {
            #[doc = #doc]
            #[doc(hidden)]
            #vis struct #handle #generics (::core::marker::PhantomData<fn() -> #ident #ty_generics>) #where_clause;
        });
        let (pk_name, rk_name) = index_consts(i, index.partition_key.is_some());
        let pk = KeyConst { key: index.partition_key.as_ref().unwrap_or(&c.partition_key), konst: pk_name };
        let rk = KeyConst { key: &index.row_key, konst: rk_name };
        let helpers = key_helpers(p, Owner::Handle, &pk, &rk);
        let position = Literal::usize_unsuffixed(i);
        let kind = match index.kind {
            IndexKind::Secondary => quote!(#p::SecondaryIndex),
            IndexKind::Lookup => quote!(#p::LookupIndex),
        };
        impls.extend(quote! {
            #[automatically_derived]
            impl #plain_impl ::core::clone::Clone for #handle #ty_generics #plain_where {
                fn clone(&self) -> Self {
                    *self
                }
            }

            #[automatically_derived]
            impl #plain_impl ::core::marker::Copy for #handle #ty_generics #plain_where {}

            #[automatically_derived]
            impl #impl_generics #p::Index for #handle #ty_generics #bounded_where {
                type Entity = #ident #ty_generics;

                fn def(self) -> &'static #p::IndexDef {
                    &__INDEXES[#position]
                }
            }

            #[automatically_derived]
            impl #impl_generics #kind for #handle #ty_generics #bounded_where {}

            #[automatically_derived]
            impl #impl_generics #handle #ty_generics #bounded_where {
                #helpers
            }
        });
    }
    (declared, impls)
}

/// `Type::BY_NAME`: the handle constant of every index.
fn index_handle_consts(c: &Checked<'_, '_>) -> Vec<TokenStream> {
    let ident = &c.input.original.ident;
    let (_, ty_generics, _) = c.input.original.generics.split_for_impl();
    c.indexes
        .iter()
        .map(|index| {
            let (konst, handle, name) = (&index.handle_const, &index.handle, &index.name);
            let (what, reads) = match index.kind {
                IndexKind::Secondary => {
                    ("secondary index", "`TypedTable::get_by_index` and `TypedTable::query_index`")
                }
                IndexKind::Lookup => ("index entity", "`TypedTable::lookup`"),
            };
            let doc = format!(
                "The {what} `{name}`: its key helpers (`{ident}::{konst}.key(..)`, \
                 `partition_key_for(..)`, `row_key_prefix(..)`, ...), and what {reads} take."
            );
            quote! {
                #[doc = #doc]
                pub const #konst: #handle #ty_generics = #handle(::core::marker::PhantomData);
            }
        })
        .collect()
}

fn expand_entities(p: &TokenStream, e: &Entities<'_>) -> TokenStream {
    let ident = &e.original.ident;
    let params = ParamsInScope::new(&e.original.generics);
    let mut bounds = InferredBounds::default();
    for (_, ty) in &e.variants {
        bounds.insert(&params, ty, quote!(#p::TableEntity));
    }
    let generics = bounds.augment(&e.original.generics);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let delegate = |method: TokenStream| {
        let arms =
            e.variants.iter().map(|(v, ty)| quote!(Self::#v(__v) => <#ty as #p::TableEntity>::#method(__v)));
        quote!(match self { #(#arms),* })
    };
    let to_entity = delegate(quote!(to_entity));
    let prepare_write = delegate(quote!(prepare_write));
    let write_through = {
        let arms = e.variants.iter().map(|(v, ty)| {
            quote!(Self::#v(__v) => <#ty as #p::TableEntity>::write_through(__v, __prepared, __sink))
        });
        quote!(match self { #(#arms),* })
    };
    let partition_key = delegate(quote!(partition_key));
    let row_key = delegate(quote!(row_key));
    let kinds = e
        .variants
        .iter()
        .map(|(_, ty)| quote!((<#ty as #p::TableEntity>::ENTITY_TYPE, <#ty as #p::TableEntity>::VERSION)))
        .collect::<Vec<_>>();
    // `variant_for` answers an index of `kinds`; the last variant takes what no other does.
    // Over an `Entity` (`from_entity`), a reader's parts (`from_parts`) or a reader
    // (`read_through`, compiled for each reader as the variants' own), alike.
    let dispatch_with = |method: TokenStream| {
        let mut dispatch = TokenStream::new();
        for (i, (v, ty)) in e.variants.iter().enumerate().rev() {
            let read =
                quote!(::core::result::Result::Ok(Self::#v(<#ty as #p::TableEntity>::#method(__entity)?)));
            dispatch = if dispatch.is_empty() {
                read
            } else {
                quote!(if __variant == #i { #read } else { #dispatch })
            };
        }
        dispatch
    };
    let (dispatch, dispatch_parts, dispatch_reader) = (
        dispatch_with(quote!(from_entity)),
        dispatch_with(quote!(from_parts)),
        dispatch_with(quote!(read_through)),
    );
    // Constant checks need concrete types; generic enums skip them.
    let mut asserts = Vec::new();
    if e.original.generics.params.is_empty() {
        for (i, (v, ty)) in e.variants.iter().enumerate() {
            let message = format!(
                "variant `{v}` of `{ident}` wraps a type without `entity_type`; add #[table(entity_type = \"...\")] to it"
            );
            let encrypts = format!(
                "variant `{v}` of `{ident}` wraps a type with `#[table(encrypt)]` fields; an enum of entity \
                 types does not encrypt yet: write and read that type through its own `TypedTable`"
            );
            asserts.push(quote_spanned! {ty.span()=>
                const _: () = ::core::assert!(<#ty as #p::TableEntity>::ENTITY_TYPE.is_some(), #message);
                const _: () =
                    ::core::assert!(<#ty as #p::TableEntity>::ENCRYPTED_PROPERTIES.is_empty(), #encrypts);
            });
            for (w, other) in &e.variants[i + 1..] {
                let unversioned = format!(
                    "variants `{v}` and `{w}` of `{ident}` wrap types with the same `entity_type`; \
                     to wrap several versions of one type, give each its own `version = N`"
                );
                let same_version = format!(
                    "variants `{v}` and `{w}` of `{ident}` wrap types with the same `entity_type` and \
                     `version`, so their rows cannot be told apart"
                );
                let (a, b) = (quote!(<#ty as #p::TableEntity>), quote!(<#other as #p::TableEntity>));
                asserts.push(quote_spanned! {other.span()=>
                    const _: () = ::core::assert!(
                        !#p::same_entity_type(#a::ENTITY_TYPE, #b::ENTITY_TYPE)
                            || (#a::VERSION.is_some() && #b::VERSION.is_some()),
                        #unversioned
                    );
                    const _: () = ::core::assert!(
                        !#p::same_entity_type(#a::ENTITY_TYPE, #b::ENTITY_TYPE)
                            || !#p::same_version(#a::VERSION, #b::VERSION),
                        #same_version
                    );
                });
            }
        }
    }
    quote! {
        #(#asserts)*

        #[automatically_derived]
        impl #impl_generics #p::TableEntity for #ident #ty_generics #where_clause {
            fn to_entity(&self) -> #p::Result<#p::Entity> { #to_entity }

            fn prepare_write(&self) -> #p::Result<::core::option::Option<#p::PreparedWrite>> { #prepare_write }

            fn write_through<__S: #p::FieldSink<#p::StaticName>>(&self, __prepared: &#p::PreparedWrite, __sink: &mut __S) {
                #write_through
            }

            fn from_entity(__entity: #p::Entity) -> #p::Result<Self> {
                let __variant = #p::variant_for(&__entity, &[#(#kinds),*])?;
                #dispatch
            }

            fn from_parts(__entity: #p::ReadEntity<'_>) -> #p::Result<Self> {
                let __variant = #p::variant_for(&__entity, &[#(#kinds),*])?;
                #dispatch_parts
            }

            fn read_through<__R: #p::EntityReader + ?::core::marker::Sized>(
                __entity: &mut __R,
            ) -> #p::Result<Self> {
                let __variant = #p::variant_for(__entity, &[#(#kinds),*])?;
                #dispatch_reader
            }

            fn partition_key(&self) -> #p::Result<::std::string::String> { #partition_key }

            fn row_key(&self) -> #p::Result<::std::string::String> { #row_key }
        }
    }
}

fn expand_value_enum(p: &TokenStream, e: &ValueEnum<'_>) -> TokenStream {
    let ident = &e.original.ident;
    let ty_name = ident.to_string();
    let (impl_generics, ty_generics, where_clause) = e.original.generics.split_for_impl();
    let names: Vec<&String> = e.variants.iter().map(|(_, name, _)| name).collect();
    let to_name = e.variants.iter().map(|(v, name, _)| quote!(Self::#v => #name));
    let to_name = quote!(match self { #(#to_name),* });
    let from_name: Vec<TokenStream> =
        e.variants.iter().map(|(v, name, _)| quote!(#name => ::core::result::Result::Ok(Self::#v))).collect();
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::PropertyValue for #ident #ty_generics #where_clause {
            const EDM_TYPE: #p::EdmType = #p::EdmType::String;

            fn to_value(&self) -> #p::Value {
                #p::Value::String(::std::string::String::from(#to_name))
            }

            fn to_field_value(&self) -> #p::FieldValue<'_> {
                #p::FieldValue::from(#to_name)
            }

            fn from_value(__value: #p::Value) -> ::core::result::Result<Self, #p::ValueError> {
                match __value {
                    #p::Value::String(__text) => match __text.as_str() {
                        #(#from_name,)*
                        __other => #p::unknown_variant(__other, &[#(#names),*]),
                    },
                    __other => ::core::result::Result::Err(#p::ValueError::WrongType {
                        expected: #p::EdmType::String,
                        found: #p::Value::edm_type(&__other),
                    }),
                }
            }
        }

        #[automatically_derived]
        impl #impl_generics #p::KeyValue for #ident #ty_generics #where_clause {
            fn encode_key(&self, __spec: &#p::KeySpec) -> ::core::result::Result<::std::string::String, #p::KeyCodecError> {
                #p::enum_key(__spec, #to_name, #ty_name)
            }

            fn decode_key(__text: &str, __spec: &#p::KeySpec) -> ::core::result::Result<Self, #p::KeyCodecError> {
                #p::enum_key(__spec, "", #ty_name)?;
                match __text {
                    #(#from_name,)*
                    __other => #p::unknown_key_variant(__other, &[#(#names),*]),
                }
            }
        }
    }
}
