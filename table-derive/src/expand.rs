//! Code generation. Assumes `valid` accepted the input; every path is fully qualified through
//! the `__private` module of the facade (or of the `crate = "..."` override), no method is
//! called on a user type, and everything sits in `const _: () = { ... };`.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};

use crate::ast::{Entities, Field, Input, Struct, TyKind, ValueEnum};
use crate::attr::{Container, IndexKind, Template};
use crate::ctxt::Ctxt;
use crate::fallback;
use crate::template::{Piece, Spec};
use crate::valid;

/// `#[derive(TableEntity)]`.
pub fn derive_entity(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = Input::from_syn(&cx, input);
    match &parsed {
        Some(Input::Struct(s)) => valid::check_struct(&cx, s),
        Some(Input::Entities(e)) => valid::check_entities(&cx, e),
        None => {}
    }
    let private = private_path(parsed.as_ref().map(|p| match p {
        Input::Struct(s) => &s.attrs,
        Input::Entities(e) => &e.attrs,
    }));
    if let Err(errors) = cx.check() {
        let stub = fallback::entity(&private, input);
        return quote!(#errors #stub);
    }
    let body = match &parsed {
        Some(Input::Struct(s)) => expand_struct(&private, s),
        Some(Input::Entities(e)) => expand_entities(&private, e),
        None => fallback::entity(&private, input),
    };
    quote!(const _: () = { #body };)
}

/// `#[derive(PropertyValue)]`.
pub fn derive_value(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let parsed = ValueEnum::from_syn(&cx, input);
    if let Some(e) = &parsed {
        valid::check_value_enum(&cx, e);
    }
    let private = private_path(parsed.as_ref().map(|e| &e.attrs));
    if let Err(errors) = cx.check() {
        let stub = fallback::value(&private, input);
        return quote!(#errors #stub);
    }
    match &parsed {
        Some(e) => {
            let body = expand_value_enum(&private, e);
            quote!(const _: () = { #body };)
        }
        None => fallback::value(&private, input),
    }
}

/// `::table_client::__private`, or `<crate>::__private` with `#[table(crate = "...")]`.
fn private_path(attrs: Option<&Container>) -> TokenStream {
    match attrs.and_then(|a| a.crate_path.get()) {
        Some(path) => quote!(#path::__private),
        None => quote!(::table_client::__private),
    }
}

/// The field name as written, without `r#`.
fn plain_name(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

fn spec_tokens(p: &TokenStream, spec: &Spec) -> TokenStream {
    match spec {
        Spec::Plain => quote!(#p::KeySpec::Plain),
        Spec::ZeroPad(width) => {
            let width = Literal::usize_unsuffixed(*width);
            quote!(#p::KeySpec::ZeroPad(#width))
        }
        Spec::Ticks => quote!(#p::KeySpec::Ticks),
        Spec::InvertedTicks => quote!(#p::KeySpec::InvertedTicks),
        Spec::Ordered => quote!(#p::KeySpec::Ordered),
        Spec::Date(format) => quote!(#p::KeySpec::Date(#format)),
    }
}

fn key_name(t: &Template) -> TokenStream {
    if t.attr == crate::symbol::PARTITION_KEY { quote!(PartitionKey) } else { quote!(RowKey) }
}

/// `const NAME: KeyTemplate = ...;` with `parsed` set on the fields read back from this key.
fn template_const(p: &TokenStream, name: &Ident, t: &Template, parsed: &HashSet<String>) -> TokenStream {
    let text = t.lit.value();
    let key = key_name(t);
    let segments = t.pieces.iter().map(|piece| match piece {
        Piece::Literal(s) => quote!(#p::Segment::Literal(#s)),
        Piece::Field { name, spec } => {
            let spec = spec_tokens(p, spec);
            let parsed = parsed.contains(name);
            quote!(#p::Segment::Field { name: #name, spec: #spec, parsed: #parsed })
        }
    });
    quote! {
        const #name: #p::KeyTemplate = #p::KeyTemplate {
            key: #p::KeyName::#key,
            text: #text,
            segments: &[#(#segments),*],
        };
    }
}

/// Everything the struct expansion needs to look up.
struct Ctx<'s, 'a> {
    p: &'s TokenStream,
    fields: HashMap<String, &'s Field<'a>>,
}

/// How a key field is passed to a generated constructor: `(parameter, push type, &value)`.
fn key_param(f: &Field<'_>) -> (TokenStream, TokenStream, TokenStream) {
    let (ident, ty) = (f.ident, f.ty);
    match f.kind {
        TyKind::String => (quote!(#ident: &str), quote!(str), quote!(#ident)),
        TyKind::Int | TyKind::Bool | TyKind::DateTime | TyKind::Uuid => {
            (quote!(#ident: #ty), quote!(#ty), quote!(&#ident))
        }
        _ => (quote!(#ident: &#ty), quote!(#ty), quote!(#ident)),
    }
}

impl Ctx<'_, '_> {
    fn field(&self, name: &str) -> Option<&Field<'_>> {
        self.fields.get(name).copied()
    }

    /// Distinct template fields in order of first appearance.
    fn unique_fields(&self, templates: &[&Template]) -> Vec<&Field<'_>> {
        let mut seen = HashSet::new();
        templates
            .iter()
            .flat_map(|t| t.field_names())
            .filter(|n| seen.insert(*n))
            .filter_map(|n| self.field(n))
            .collect()
    }

    /// A block evaluating to `Result<String>`: the key built from the fields of `self`.
    fn build_from_self(&self, konst: &Ident, t: &Template) -> TokenStream {
        let p = self.p;
        let pushes = t.field_names().filter_map(|n| self.field(n)).map(|f| {
            let (ident, ty) = (f.ident, f.ty);
            quote!(let __b = #p::KeyBuilder::push::<#ty>(__b, &self.#ident)?;)
        });
        quote!({
            let __b = #p::KeyTemplate::builder(&#konst);
            #(#pushes)*
            #p::KeyBuilder::finish(__b)
        })
    }

    /// Statements pushing the template's fields from parameters (see [`key_param`]).
    fn pushes_from_params<'f>(&self, fields: impl Iterator<Item = &'f Field<'f>>) -> TokenStream {
        let p = self.p;
        let pushes = fields.map(|f| {
            let (_, ty, value) = key_param(f);
            quote!(let __b = #p::KeyBuilder::push::<#ty>(__b, #value)?;)
        });
        quote!(#(#pushes)*)
    }

    fn build_from_params(&self, konst: &Ident, t: &Template) -> TokenStream {
        let p = self.p;
        let fields: Vec<&Field<'_>> = t.field_names().filter_map(|n| self.field(n)).collect();
        let pushes = self.pushes_from_params(fields.into_iter());
        quote!({
            let __b = #p::KeyTemplate::builder(&#konst);
            #pushes
            #p::KeyBuilder::finish(__b)
        })
    }

    /// `partition_key_for`, and the prefix and range constructors of one primary template.
    fn key_helpers(&self, konst: &Ident, t: &Template) -> TokenStream {
        let p = self.p;
        let which = t.attr.0;
        let text = t.lit.value();
        let fields = self.unique_fields(&[t]);
        let params = fields.iter().map(|f| key_param(f).0);
        let for_fn = format_ident!("{which}_for");
        let build = self.build_from_params(konst, t);
        let for_doc = format!("The {which} `{text}` built from its fields.");
        let mut out = quote! {
            #[doc = #for_doc]
            pub fn #for_fn(#(#params),*) -> #p::Result<::std::string::String> #build
        };
        let distinct = fields.len() == t.field_names().count();
        let Some((last, leading)) = fields.split_last().filter(|_| distinct) else {
            return out;
        };
        let key = key_name(t);
        let leading_params: Vec<TokenStream> = leading.iter().map(|f| key_param(f).0).collect();
        let leading_pushes = self.pushes_from_params(leading.iter().copied());
        let prefix_fn = format_ident!("{which}_prefix");
        let prefix_doc =
            format!("Every {which} of `{text}` whose fields before `{}` have these values.", last.ident);
        let (_, last_ty, _) = key_param(last);
        let last_ident = last.ident;
        let (from, to) = (
            format_ident!("{}_from", plain_name(last_ident)),
            format_ident!("{}_to", plain_name(last_ident)),
        );
        let (param_ty, value_of) = match last.kind {
            TyKind::String => (quote!(&str), None),
            TyKind::Int | TyKind::Bool | TyKind::DateTime | TyKind::Uuid => {
                let ty = last.ty;
                (quote!(#ty), Some(()))
            }
            _ => {
                let ty = last.ty;
                (quote!(&#ty), None)
            }
        };
        let (from_value, to_value) = match value_of {
            Some(()) => (quote!(&#from), quote!(&#to)),
            None => (quote!(#from), quote!(#to)),
        };
        let range_fn = format_ident!("{which}_range");
        let range_doc = format!(
            "Every {which} of `{text}` with `{}` from `{from}` to `{to}`, both included, and the \
             other fields as given (a range in key order: numeric only for fixed-width specs).",
            last.ident
        );
        out.extend(quote! {
            #[doc = #prefix_doc]
            pub fn #prefix_fn(#(#leading_params),*) -> #p::Result<#p::KeyRange> {
                let __b = #p::KeyTemplate::builder(&#konst);
                #leading_pushes
                ::core::result::Result::Ok(#p::KeyRange::prefix(#p::KeyName::#key, #p::KeyBuilder::prefix(__b)))
            }

            #[doc = #range_doc]
            pub fn #range_fn(#(#leading_params,)* #from: #param_ty, #to: #param_ty) -> #p::Result<#p::KeyRange> {
                let __start = {
                    let __b = #p::KeyTemplate::builder(&#konst);
                    #leading_pushes
                    let __b = #p::KeyBuilder::push::<#last_ty>(__b, #from_value)?;
                    #p::KeyBuilder::finish(__b)
                }?;
                let __end = {
                    let __b = #p::KeyTemplate::builder(&#konst);
                    #leading_pushes
                    let __b = #p::KeyBuilder::push::<#last_ty>(__b, #to_value)?;
                    #p::KeyBuilder::finish(__b)
                }?;
                ::core::result::Result::Ok(#p::KeyRange::inclusive(#p::KeyName::#key, __start, __end))
            }
        });
        out
    }
}

fn expand_struct(p: &TokenStream, s: &Struct<'_>) -> TokenStream {
    let (Some(pk), Some(rk)) = (s.attrs.partition_key.get(), s.attrs.row_key.get()) else {
        return fallback::entity(p, s.original);
    };
    let cx = Ctx { p, fields: s.fields.iter().map(|f| (plain_name(f.ident), f)).collect() };
    let ident = &s.original.ident;
    let (impl_generics, ty_generics, where_clause) = s.original.generics.split_for_impl();

    // Key-only fields are read back from the first primary template that holds them.
    let key_only: Vec<&Field<'_>> = s.fields.iter().filter(|f| f.attrs.key_only.get().is_some()).collect();
    let source = |f: &Field<'_>| -> Option<(&Template, usize)> {
        let name = plain_name(f.ident);
        [pk, rk].into_iter().find_map(|t| Some((t, t.field_names().position(|n| n == name)?)))
    };
    let parsed_in = |t: &Template| -> HashSet<String> {
        key_only
            .iter()
            .filter(|f| source(f).is_some_and(|(src, _)| std::ptr::eq(src, t)))
            .map(|f| plain_name(f.ident))
            .collect()
    };
    let (pk_const, rk_const) = (format_ident!("__PARTITION_KEY"), format_ident!("__ROW_KEY"));
    let mut consts = template_const(p, &pk_const, pk, &parsed_in(pk));
    consts.extend(template_const(p, &rk_const, rk, &parsed_in(rk)));

    // Discriminator.
    let entity_type = s.attrs.entity_type.get().map(|lit| lit.value());
    let version = s.attrs.version.get().map(|(v, _)| *v);
    let version_tokens = match version {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    };
    let (type_const, write_type, check_type) = match &entity_type {
        Some(t) => (
            quote! {
                const ENTITY_TYPE: ::core::option::Option<&'static str> = ::core::option::Option::Some(#t);
                const VERSION: ::core::option::Option<i32> = #version_tokens;
            },
            quote!(#p::write_discriminator(&mut __entity, #t, #version_tokens);),
            quote!(#p::check_discriminator(&mut __entity, #t, #version_tokens)?;),
        ),
        None => (quote!(), quote!(), quote!()),
    };

    // Properties both ways.
    let mut writes = Vec::new();
    let mut inits = Vec::new();
    let mut select: Vec<String> = vec!["PartitionKey".into(), "RowKey".into()];
    let mut columns = Vec::new();
    if s.fields.iter().any(|f| f.attrs.timestamp.get().is_some()) {
        select.push("Timestamp".into());
    }
    if entity_type.is_some() {
        select.push(valid::table_names::ENTITY_TYPE.into());
        if version.is_some() {
            select.push(valid::table_names::ENTITY_VERSION.into());
        }
    }
    for f in &s.fields {
        let (ident, ty, prop) = (f.ident, f.ty, &f.property);
        let span = ty.span();
        let column = |property: &str| {
            let name = format_ident!("{}", plain_name(ident).to_uppercase());
            let doc =
                format!("Typed filter column of the `{property}` property (field `{}`).", plain_name(ident));
            quote! {
                #[doc = #doc]
                pub const #name: #p::Column<<#ty as #p::Property>::Value> = #p::Column::new(#property);
            }
        };
        let init = if f.attrs.skip.get().is_some() {
            quote_spanned!(span=> <#ty as ::core::default::Default>::default())
        } else if f.attrs.timestamp.get().is_some() {
            columns.push(column("Timestamp"));
            quote_spanned!(span=> __entity.timestamp)
        } else if f.attrs.etag.get().is_some() {
            quote_spanned!(span=> ::core::option::Option::take(&mut __entity.etag))
        } else if f.attrs.key_only.get().is_some() {
            let local = format_ident!("__key_{}", plain_name(ident));
            quote!(#local)
        } else if f.attrs.json.get().is_some() {
            writes.push(quote_spanned!(span=> #p::write_json::<#ty>(&mut __entity, #prop, &self.#ident)?;));
            select.push(prop.clone());
            quote_spanned!(span=> #p::read_json::<#ty>(&mut __entity, #prop)?)
        } else {
            writes
                .push(quote_spanned!(span=> #p::write_property::<#ty>(&mut __entity, #prop, &self.#ident);));
            select.push(prop.clone());
            columns.push(column(prop));
            quote_spanned!(span=> #p::read_property::<#ty>(&mut __entity, #prop)?)
        };
        inits.push(quote!(#ident: #init));
    }

    // Key-only fields decoded before the properties are taken out of the entity.
    let mut decodes = Vec::new();
    for (t, konst, parts, input) in [
        (pk, &pk_const, format_ident!("__pk_parts"), quote!(&__entity.partition_key)),
        (rk, &rk_const, format_ident!("__rk_parts"), quote!(&__entity.row_key)),
    ] {
        let mine: Vec<(&Field<'_>, usize)> = key_only
            .iter()
            .filter_map(|f| source(f).filter(|(src, _)| std::ptr::eq(*src, t)).map(|(_, i)| (*f, i)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        decodes.push(quote!(let #parts = #p::KeyTemplate::split(&#konst, #input)?;));
        for (f, index) in mine {
            let (local, ty) = (format_ident!("__key_{}", plain_name(f.ident)), f.ty);
            let index = Literal::usize_unsuffixed(index);
            decodes.push(quote!(let #local = #p::KeyTemplate::decode::<#ty>(&#konst, &#parts, #index)?;));
        }
    }

    // Indexes.
    let mut index_defs = Vec::new();
    let mut index_arms = Vec::new();
    for (i, index) in s.attrs.indexes.iter().enumerate() {
        let (Some(name), Some(index_rk)) = (index.name.get(), index.row_key.get()) else {
            continue;
        };
        let name = name.value();
        let rk_name = format_ident!("__INDEX_{i}_ROW_KEY");
        consts.extend(template_const(p, &rk_name, index_rk, &HashSet::new()));
        let (pk_ref, pk_name, same) = match index.partition_key.get() {
            Some(t) if t.lit.value() != pk.lit.value() => {
                let pk_name = format_ident!("__INDEX_{i}_PARTITION_KEY");
                consts.extend(template_const(p, &pk_name, t, &HashSet::new()));
                (t, pk_name, false)
            }
            _ => (pk, pk_const.clone(), true),
        };
        let kind = match index.kind {
            IndexKind::Secondary => quote!(#p::IndexKind::Secondary),
            IndexKind::Lookup => quote!(#p::IndexKind::Lookup),
        };
        let projection = match index.project.get() {
            Some(list) => {
                let props = list.iter().filter_map(|f| cx.field(&f.to_string())).map(|f| &f.property);
                quote!(::core::option::Option::Some(&[#(#props),*]))
            }
            None => quote!(::core::option::Option::None),
        };
        index_defs.push(quote! {
            #p::IndexDef {
                name: #name,
                kind: #kind,
                same_partition: #same,
                partition_key: &#pk_name,
                row_key: &#rk_name,
                projection: #projection,
            }
        });
        let build_pk = cx.build_from_self(&pk_name, pk_ref);
        let build_rk = cx.build_from_self(&rk_name, index_rk);
        index_arms.push(quote! {
            #name => ::core::result::Result::Ok(::core::option::Option::Some(
                #p::entity_key(#build_pk?, #build_rk?),
            )),
        });
    }
    let indexes_fn = if index_defs.is_empty() {
        quote!()
    } else {
        quote! {
            fn indexes() -> &'static [#p::IndexDef] {
                const __INDEXES: &[#p::IndexDef] = &[#(#index_defs),*];
                __INDEXES
            }

            fn index_key(&self, __index: &str) -> #p::Result<::core::option::Option<#p::EntityKey>> {
                match __index {
                    #(#index_arms)*
                    _ => ::core::result::Result::Ok(::core::option::Option::None),
                }
            }
        }
    };

    let build_pk = cx.build_from_self(&pk_const, pk);
    let build_rk = cx.build_from_self(&rk_const, rk);
    let all_key_fields = cx.unique_fields(&[pk, rk]);
    let key_params = all_key_fields.iter().map(|f| key_param(f).0);
    let key_doc =
        format!("The key of the entity with these key fields (`{}` / `{}`).", pk.lit.value(), rk.lit.value());
    let pk_args = cx.build_from_params(&pk_const, pk);
    let rk_args = cx.build_from_params(&rk_const, rk);
    let mut helpers = cx.key_helpers(&pk_const, pk);
    helpers.extend(cx.key_helpers(&rk_const, rk));

    quote! {
        #consts

        #[automatically_derived]
        impl #impl_generics #p::TableEntity for #ident #ty_generics #where_clause {
            #type_const

            fn to_entity(&self) -> #p::Result<#p::Entity> {
                let mut __entity = #p::Entity::new(
                    <Self as #p::TableEntity>::partition_key(self)?,
                    <Self as #p::TableEntity>::row_key(self)?,
                );
                #write_type
                #(#writes)*
                ::core::result::Result::Ok(__entity)
            }

            #[allow(unused_mut)]
            fn from_entity(mut __entity: #p::Entity) -> #p::Result<Self> {
                #check_type
                #(#decodes)*
                ::core::result::Result::Ok(Self { #(#inits),* })
            }

            fn partition_key(&self) -> #p::Result<::std::string::String> #build_pk

            fn row_key(&self) -> #p::Result<::std::string::String> #build_rk

            fn select() -> ::core::option::Option<&'static [&'static str]> {
                ::core::option::Option::Some(&[#(#select),*])
            }

            #indexes_fn
        }

        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #(#columns)*

            #[doc = #key_doc]
            pub fn key(#(#key_params),*) -> #p::Result<#p::EntityKey> {
                ::core::result::Result::Ok(#p::entity_key(#pk_args?, #rk_args?))
            }

            #helpers
        }
    }
}

fn expand_entities(p: &TokenStream, e: &Entities<'_>) -> TokenStream {
    let ident = &e.original.ident;
    let (impl_generics, ty_generics, where_clause) = e.original.generics.split_for_impl();
    let delegate = |method: TokenStream| {
        let arms =
            e.variants.iter().map(|(v, ty)| quote!(Self::#v(__v) => <#ty as #p::TableEntity>::#method(__v)));
        quote!(match self { #(#arms),* })
    };
    let to_entity = delegate(quote!(to_entity));
    let partition_key = delegate(quote!(partition_key));
    let row_key = delegate(quote!(row_key));
    let types = e.variants.iter().map(|(_, ty)| quote!(<#ty as #p::TableEntity>::ENTITY_TYPE));
    let tries = e.variants.iter().map(|(v, ty)| {
        quote! {
            if ::core::option::Option::Some(__type.as_str()) == <#ty as #p::TableEntity>::ENTITY_TYPE {
                return ::core::result::Result::Ok(Self::#v(<#ty as #p::TableEntity>::from_entity(__entity)?));
            }
        }
    });
    // Constant checks need concrete types; generic enums skip them.
    let mut asserts = Vec::new();
    if e.original.generics.params.is_empty() {
        for (i, (v, ty)) in e.variants.iter().enumerate() {
            let message = format!(
                "variant `{v}` of `{ident}` wraps a type without `entity_type`; add #[table(entity_type = \"...\")] to it"
            );
            asserts.push(quote_spanned! {ty.span()=>
                const _: () = ::core::assert!(<#ty as #p::TableEntity>::ENTITY_TYPE.is_some(), #message);
            });
            for (w, other) in &e.variants[i + 1..] {
                let message =
                    format!("variants `{v}` and `{w}` of `{ident}` wrap types with the same `entity_type`");
                asserts.push(quote_spanned! {other.span()=>
                    const _: () = ::core::assert!(
                        #p::distinct_entity_types(<#ty as #p::TableEntity>::ENTITY_TYPE, <#other as #p::TableEntity>::ENTITY_TYPE),
                        #message
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

            fn from_entity(__entity: #p::Entity) -> #p::Result<Self> {
                let __type = ::std::string::String::from(#p::entity_type(&__entity)?);
                #(#tries)*
                ::core::result::Result::Err(#p::unknown_entity_type(&__type, &[#(#types),*]))
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
    let from_value =
        e.variants.iter().map(|(v, name, _)| quote!(#name => ::core::result::Result::Ok(Self::#v)));
    let from_key =
        e.variants.iter().map(|(v, name, _)| quote!(#name => ::core::result::Result::Ok(Self::#v)));
    quote! {
        #[automatically_derived]
        impl #impl_generics #p::PropertyValue for #ident #ty_generics #where_clause {
            const EDM_TYPE: #p::EdmType = #p::EdmType::String;

            fn to_value(&self) -> #p::Value {
                #p::Value::String(::std::string::String::from(#to_name))
            }

            fn from_value(__value: #p::Value) -> ::core::result::Result<Self, #p::ValueError> {
                match __value {
                    #p::Value::String(__text) => match __text.as_str() {
                        #(#from_value,)*
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
                    #(#from_key,)*
                    __other => #p::unknown_key_variant(__other, &[#(#names),*]),
                }
            }
        }
    }
}
