//! Collects every error of one expansion, so a user sees all mistakes in one compile.
//!
//! A `Ctxt` must be consumed by [`Ctxt::check`]: dropping one unchecked is a bug in the derive
//! (errors would be lost), so it panics, as serde_derive's context does.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt { errors: RefCell::new(Some(Vec::new())) }
    }

    /// Records an error spanned on the tokens of `obj`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, obj: T, message: M) {
        self.syn_error(syn::Error::new_spanned(obj.into_token_stream(), message));
    }

    /// Records a parse error.
    pub fn syn_error(&self, err: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(err);
        }
    }

    /// Consumes the context: the compile errors, if any.
    pub fn check(self) -> Result<(), TokenStream> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        if errors.is_empty() {
            return Ok(());
        }
        Err(errors.into_iter().map(|e| e.to_compile_error()).collect())
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("table-derive: a Ctxt was dropped without check()");
        }
    }
}
