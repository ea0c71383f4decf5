//! Stub impls emitted next to compile errors, so that code using the type does not drown the
//! real errors in "trait not implemented" cascades (as thiserror's `fallback.rs`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

pub fn entity(p: &TokenStream, input: &DeriveInput) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #p::TableEntity for #ident #ty_generics #where_clause {
                fn to_entity(&self) -> #p::Result<#p::Entity> {
                    ::core::unreachable!()
                }

                fn from_entity(_: #p::Entity) -> #p::Result<Self> {
                    ::core::unreachable!()
                }

                fn partition_key(&self) -> #p::Result<::std::string::String> {
                    ::core::unreachable!()
                }

                fn row_key(&self) -> #p::Result<::std::string::String> {
                    ::core::unreachable!()
                }
            }
        };
    }
}

pub fn value(p: &TokenStream, input: &DeriveInput) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #p::PropertyValue for #ident #ty_generics #where_clause {
                const EDM_TYPE: #p::EdmType = #p::EdmType::String;

                fn to_value(&self) -> #p::Value {
                    ::core::unreachable!()
                }

                fn from_value(_: #p::Value) -> ::core::result::Result<Self, #p::ValueError> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
