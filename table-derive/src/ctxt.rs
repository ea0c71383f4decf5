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

    /// Consumes the context: `value` when no error was recorded, else the compile errors.
    ///
    /// Every stage that gives `None` has recorded why. Should one not have (a bug in the
    /// derive), the input is refused with an error saying so rather than expanded from a part
    /// that is not there.
    pub fn check<T>(self, value: Option<T>) -> Result<T, TokenStream> {
        let errors = self.errors.borrow_mut().take().unwrap_or_default();
        match value {
            Some(value) if errors.is_empty() => Ok(value),
            _ if !errors.is_empty() => Err(errors.into_iter().map(|e| e.to_compile_error()).collect()),
            _ => Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "table-derive refused this input without saying why; please report it",
            )
            .to_compile_error()),
        }
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.errors.borrow().is_some() {
            panic!("table-derive: a Ctxt was dropped without check()");
        }
    }
}
