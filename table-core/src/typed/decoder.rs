//! A type's decoder as a reader takes it: the slots to lay each entity's properties out by (see
//! the `decode` module) and the function they are then handed to, or, for a reader that
//! decodes straight from what it read, the function that reads through it. Apart from
//! `decode`, so that the read layout knows nothing of [`TableEntity`], which names it.
//!
//! A derived type reads through a reader with one generic function
//! (`TableEntity::read_through`). [`Decoder::of`] holds it twice, compiled for two readers: the
//! engine's stored row ([`RowReader`], whose takes then inline into the type's field reads) and
//! `dyn EntityReader`, for readers of other crates (the client's JSON reader). Both run the
//! same generic body, so they give the same values and errors.

use super::decode::{EntityReader, PropertySlots, ReadEntity};
use super::entity::TableEntity;
use crate::engine::RowReader;
use crate::entity::Entity;
use crate::error::Result;

/// What a reader makes of each entity it reads: the slots to lay its properties out by, and the
/// decoder they are then handed to (`TableEntity::from_parts`, or [`Decoder::ENTITY`]'s
/// generic [`Entity`]); and, for [`Decoder::of`], `TableEntity::read_through`, which a reader
/// that need not hand over parts (the engine's stored row, the client's JSON reader) calls
/// instead. Plain data (a reference and function pointers), so a query that holds one stays
/// `Clone` and `Send` whatever it decodes into.
pub struct Decoder<T> {
    slots: &'static PropertySlots,
    from_parts: for<'a> fn(ReadEntity<'a>) -> Result<T>,
    /// `read_through` compiled for `dyn EntityReader` and for the engine's row reader.
    readers: Option<(ReadDyn<T>, ReadRow<T>)>,
}

/// A decoder through any reader (see [`Decoder::reader`]).
type ReadDyn<T> = fn(&mut dyn EntityReader) -> Result<T>;
/// A decoder through the engine's row reader.
type ReadRow<T> = for<'r> fn(&mut RowReader<'r>) -> Result<T>;

impl<T> Decoder<T> {
    /// `from_parts` reading lists laid out by `slots` (which must be the slots `from_parts`
    /// reads by, or [`PropertySlots::NONE`]: slots never change a read's result).
    pub const fn new(
        slots: &'static PropertySlots,
        from_parts: for<'a> fn(ReadEntity<'a>) -> Result<T>,
    ) -> Self {
        Decoder { slots, from_parts, readers: None }
    }

    /// The slots a reader lays the properties out by.
    pub fn slots(&self) -> &'static PropertySlots {
        self.slots
    }

    /// Decodes one entity as read, its properties laid out by [`slots`](Self::slots).
    pub fn decode(&self, read: ReadEntity<'_>) -> Result<T> {
        (self.from_parts)(read)
    }

    /// The decoder that reads through an [`EntityReader`], when there is one (same value and
    /// errors as [`decode`](Self::decode) of the same entity); `None` asks for parts.
    pub fn reader(&self) -> Option<fn(&mut dyn EntityReader) -> Result<T>> {
        self.readers.map(|(read_dyn, _)| read_dyn)
    }

    /// [`reader`](Self::reader) compiled for the engine's stored row: same values and errors.
    pub(crate) fn row_reader(&self) -> Option<ReadRow<T>> {
        self.readers.map(|(_, read_row)| read_row)
    }
}

impl<T: TableEntity> Decoder<T> {
    /// `T`'s own decoder: through `T`'s property slots, or straight through a reader.
    pub const fn of() -> Self {
        Decoder {
            slots: T::PROPERTY_SLOTS,
            from_parts: T::from_parts,
            readers: Some((read_dyn::<T>, read_row::<T>)),
        }
    }
}

// `T::read_through` as functions of one reader type each: of any lifetime of that type, which
// `T::read_through::<R>` cannot be (it fixes `R`'s lifetime).

fn read_dyn<T: TableEntity>(reader: &mut dyn EntityReader) -> Result<T> {
    T::read_through(reader)
}

fn read_row<T: TableEntity>(reader: &mut RowReader<'_>) -> Result<T> {
    T::read_through(reader)
}

impl Decoder<Entity> {
    /// The generic decoder: the entity as read, as an [`Entity`], without slots.
    pub const ENTITY: Self = Decoder::new(&PropertySlots::NONE, |read| Ok(read.into_entity()));
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
