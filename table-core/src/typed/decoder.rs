//! A type's decoder as a reader takes it: the slots to lay each entity's properties out by (see
//! the `decode` module) and the function they are then handed to, or, for the engine's stored
//! row, the function that reads straight through it. Apart from `decode`, so that the read
//! layout knows nothing of [`TableEntity`], which names it.
//!
//! A derived type reads through a reader with one generic function
//! (`TableEntity::read_through`), compiled for each reader type where both the type and the
//! reader are known, so that the reader's takes inline into the type's field reads.
//! [`Decoder::of`] compiles it for the engine's stored row ([`RowReader`]); a crate with a
//! reader of its own, which this crate cannot name, pairs a `Decoder` with `read_through`
//! compiled for that reader (the client's JSON reader does, in its `wire` module). Every
//! compilation runs the same generic body, so all give the same values and errors.

use super::decode::{EntityReader, PropertySlots, ReadEntity};
use super::entity::TableEntity;
use crate::engine::RowReader;
use crate::entity::Entity;
use crate::error::Result;

/// What a reader makes of each entity it reads: the slots to lay its properties out by, and the
/// decoder they are then handed to (`TableEntity::from_parts`, or [`Decoder::ENTITY`]'s
/// generic [`Entity`]); and, for [`Decoder::of`], `TableEntity::read_through` compiled for the
/// engine's stored row, which the engine calls instead of handing over parts. Plain data (a
/// reference and function pointers), so a query that holds one stays `Clone` and `Send`
/// whatever it decodes into.
pub struct Decoder<T> {
    slots: &'static PropertySlots,
    from_parts: for<'a> fn(ReadEntity<'a>) -> Result<T>,
    /// `read_through` compiled for the engine's row reader.
    read_row: Option<ReadRow<T>>,
}

/// A decoder through the engine's row reader.
type ReadRow<T> = for<'r> fn(&mut RowReader<'r>) -> Result<T>;

impl<T> Decoder<T> {
    /// `from_parts` reading lists laid out by `slots` (which must be the slots `from_parts`
    /// reads by, or [`PropertySlots::NONE`]: slots never change a read's result).
    pub const fn new(
        slots: &'static PropertySlots,
        from_parts: for<'a> fn(ReadEntity<'a>) -> Result<T>,
    ) -> Self {
        Decoder { slots, from_parts, read_row: None }
    }

    /// The slots a reader lays the properties out by.
    pub fn slots(&self) -> &'static PropertySlots {
        self.slots
    }

    /// Decodes one entity as read, its properties laid out by [`slots`](Self::slots).
    pub fn decode(&self, read: ReadEntity<'_>) -> Result<T> {
        (self.from_parts)(read)
    }

    /// The decoder that reads straight through the engine's stored row, when there is one
    /// (same value and errors as [`decode`](Self::decode) of the same entity); `None` asks for
    /// parts.
    pub(crate) fn row_reader(&self) -> Option<ReadRow<T>> {
        self.read_row
    }
}

impl<T: TableEntity> Decoder<T> {
    /// `T`'s own decoder: through `T`'s property slots, or straight through the stored row.
    pub const fn of() -> Self {
        Decoder { slots: T::PROPERTY_SLOTS, from_parts: T::from_parts, read_row: Some(read_row::<T>) }
    }
}

/// `T::read_through` as a function of the row reader of any lifetime, which
/// `T::read_through::<RowReader<'r>>` cannot be (it fixes the lifetime).
fn read_row<T: TableEntity>(reader: &mut RowReader<'_>) -> Result<T> {
    T::read_through(reader)
}

impl Decoder<Entity> {
    /// The generic decoder: the entity as read, as an [`Entity`], without slots.
    pub const ENTITY: Self = Decoder {
        slots: &PropertySlots::NONE,
        from_parts: |read| Ok(read.into_entity()),
        // The whole row at once (the rows a query returns untyped): the entity as a reader's
        // parts would give it, without laying them out first.
        read_row: Some(|reader| Ok(reader.take_entity())),
    };
}

// Derived, they would demand `T: Clone`.
impl<T> Clone for Decoder<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Decoder<T> {}

impl<T> std::fmt::Debug for Decoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").field("slots", &self.slots.names).finish_non_exhaustive()
    }
}
