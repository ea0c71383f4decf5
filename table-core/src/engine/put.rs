//! Whole-entity writes of a typed value's fields ([`Put`]): an insert, replace or
//! insert-or-replace that the engine stores straight from [`EntityFields`], without building
//! the [`Entity`] an [`Operation`] carries. A `Put` is checked once, when it is made, by the
//! rules and in the order [`validate_operation`](crate::validate_operation) checks the same
//! operation, so [`Engine::put`](super::Engine::put) answers exactly as
//! [`Engine::execute`](super::Engine::execute) of that operation would.

use super::table::{Requires, RowWrite, Stores};
use crate::batch::{Operation, validate_if_match};
use crate::entity::IfMatch;
use crate::error::Violation;
use crate::typed::EntityFields;
use crate::validate::{EntityView, validate_view};

/// Which whole-entity write a [`Put`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutKind {
    /// Insert; 409 `EntityAlreadyExists` when the key exists.
    Insert,
    /// Replace the stored entity, if it matches the condition.
    Replace(IfMatch),
    /// Insert, or replace whatever has the key.
    InsertOrReplace,
}

/// A checked whole-entity write of a typed value's fields (see the module docs).
#[derive(Debug, Clone)]
pub struct Put<'a> {
    kind: PutKind,
    fields: EntityFields<'a>,
}

impl<'a> Put<'a> {
    /// The write, once it passes the checks of the same operation: the `If-Match` ETag, then
    /// the entity ([`validate_entity`](crate::validate_entity)'s rules, in its order).
    pub fn new(kind: PutKind, fields: EntityFields<'a>) -> Result<Self, Violation> {
        if let PutKind::Replace(if_match) = &kind {
            validate_if_match(if_match)?;
        }
        validate_view(&fields)?;
        Ok(Put { kind, fields })
    }

    /// Which write it is.
    pub fn kind(&self) -> &PutKind {
        &self.kind
    }

    /// The same write as an [`Operation`], for a caller that needs the entity it sends (to
    /// settle a write whose answer was lost).
    pub fn to_operation(&self) -> Operation {
        let entity = self.fields.to_entity();
        match &self.kind {
            PutKind::Insert => Operation::Insert(entity),
            PutKind::Replace(if_match) => Operation::Replace { entity, if_match: if_match.clone() },
            PutKind::InsertOrReplace => Operation::InsertOrReplace(entity),
        }
    }
}

impl<'a> RowWrite for Put<'a> {
    type Entity = EntityFields<'a>;

    fn key(&self) -> (&str, &str) {
        (self.fields.partition_key(), self.fields.row_key())
    }

    fn requires(&self) -> Requires<'_> {
        match &self.kind {
            PutKind::Insert => Requires::Absent,
            PutKind::Replace(if_match) => Requires::Present(if_match),
            PutKind::InsertOrReplace => Requires::Nothing,
        }
    }

    fn stores(&self) -> Option<Stores<'_, Self::Entity>> {
        Some(Stores::Entity(&self.fields))
    }
}
