//! Where-clause bounds for generic inputs, inferred per field as thiserror's `generics.rs` does.
//!
//! A field whose type names one of the input's type or const parameters adds a bound on that
//! field type, for each trait the generated code uses on it: `Option<T>: Property` for a stored
//! `Option<T>`, `T: KeyValue` for a `T` in a key template. A parameter used only where no trait
//! is needed (a `#[table(skip)] PhantomData<T>`, whose bound `PhantomData<T>: Default` always
//! holds) thereby asks nothing of its argument, which blanket `T: Trait` bounds would.

use std::collections::HashSet;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{GenericParam, Generics, Ident, PredicateType, Type, TypeParamBound, WherePredicate};

/// The type and const parameters of an input.
pub struct ParamsInScope(HashSet<Ident>);

impl ParamsInScope {
    pub fn new(generics: &Generics) -> Self {
        ParamsInScope(
            generics
                .params
                .iter()
                .filter_map(|param| match param {
                    GenericParam::Type(t) => Some(t.ident.clone()),
                    GenericParam::Const(c) => Some(c.ident.clone()),
                    GenericParam::Lifetime(_) => None,
                })
                .collect(),
        )
    }

    /// `true` when `ty` names a parameter anywhere (`T`, `Option<T>`, `[u8; N]`, `T::Id`).
    pub fn intersects(&self, ty: &Type) -> bool {
        !self.0.is_empty() && self.mentioned_in(ty.to_token_stream())
    }

    fn mentioned_in(&self, tokens: TokenStream) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => self.0.contains(&ident),
            TokenTree::Group(group) => self.mentioned_in(group.stream()),
            TokenTree::Punct(_) | TokenTree::Literal(_) => false,
        })
    }
}

/// Bounds collected for one impl, in the order first inserted, without repeats.
#[derive(Default)]
pub struct InferredBounds {
    predicates: Vec<WherePredicate>,
}

impl InferredBounds {
    /// `ty: bound`, when `ty` names a parameter.
    pub fn insert(&mut self, params: &ParamsInScope, ty: &Type, bound: TokenStream) {
        if !params.intersects(ty) {
            return;
        }
        let predicate = WherePredicate::Type(PredicateType {
            lifetimes: None,
            bounded_ty: ty.clone(),
            colon_token: Default::default(),
            bounds: std::iter::once(TypeParamBound::Verbatim(bound)).collect(),
        });
        let text = predicate.to_token_stream().to_string();
        if !self.predicates.iter().any(|p| p.to_token_stream().to_string() == text) {
            self.predicates.push(predicate);
        }
    }

    /// The input's generics with the bounds added to its where clause.
    pub fn augment(&self, generics: &Generics) -> Generics {
        let mut generics = generics.clone();
        if !self.predicates.is_empty() {
            generics.make_where_clause().predicates.extend(self.predicates.iter().cloned());
        }
        generics
    }
}
