//! Stored rows: an entity with its timestamp and ETag, encoded in one immutable buffer.
//!
//! Why not store `Entity`s: an `Entity` is about fifteen heap blocks (keys, ETag, property
//! map, every name and string value). A filtered scan then chased several pointers per row,
//! each a likely cache miss, and a read copied every block. A row is one block instead: a
//! filter walks it front to back, and a read copies from memory that is already in cache.
//!
//! Layout (integers little-endian, every length a `u32`): a header (the timestamp as
//! `secs: i64, nanos: u32`; the lengths of the text section, partition key, row key and ETag;
//! the number of custom properties, so a read sizes its list once), the text section, then
//! the value section.
//! - Text (valid UTF-8): the partition key, the row key, then per
//!   custom property its name and, for a String, its value; the ETag last (only reads and
//!   `If-Match` need it, filters never do). Properties are in ascending name order, so a
//!   read hands them on as a sorted [`PropertyList`] without sorting.
//! - Values, per property in the same order: the name's length, a type tag, then 4 bytes
//!   (Int32), 8 (Int64, Double as its bits), 1 (Boolean), 16 (DateTime as its year, day of
//!   the year, second of the day and nanosecond: see [`datetime_bytes`]), 16 (Guid), or a
//!   length (String, whose bytes are in the text; Binary, followed by its bytes).
//!
//! Writes. [`Row::new`] walks an [`EntityView`] (an `Entity`, or a typed value through its
//! `write_through`) with [`RowSize`], to size the buffer, then with the row encoder, which
//! writes each property as it is handed over; [`Row::sized`] takes the size from a walk that
//! summed it while checking the entity (`Put::new` for a typed value, `validate_entity_with`
//! for an `Entity` an engine single-entity write stores whole).
//!
//! Reads. [`Row::to_entity`] and [`Row::read`] (the generic entity, and the parts a decoder
//! without a reader takes) check the whole text as UTF-8 once and copy every name and value,
//! in one walk of the properties (`each_property`); the generic entity is built from it
//! whole, as untyped gets and queries return it (`Decoder::ENTITY`), rather than from parts.
//! A typed decoder instead reads through a [`RowReader`]: keys and names stay borrowed, and a
//! value is decoded (a String copied) only when taken; the text before the ETag is checked as
//! UTF-8 once, when the first key or String is read. A derived type's
//! decoder is compiled for this reader (`Decoder::of`), in the crate that derives the type:
//! a take by slot lends the value it finds ([`EntityReader::take_slot_lent`]), and the take,
//! the cursor's forward step (`find`, down to the reading of each property's record) and the
//! decoding of the value inline into the field's conversion (`PropertyValue::from_stored`),
//! so that no `Value` is built. The take names the type the field stores: the property at
//! the cursor, when it is the one taken and of that type (nearly always, for a derived
//! decoder), is read knowing its record's layout and decoded as that type
//! (`RowReader::take_next`); any other take goes through `find`, whose value of that type is
//! decoded after one comparison of its tag rather than a second match on it
//! (`Fixed::decode_expecting`). Only a restart of the cursor (`start_over_for`) stays a
//! call. A filter reads a [`RowSource`], which checks only the strings it compares and finds
//! a property by stepping over the records before it, slicing only names of the wanted
//! length (`Properties::value_named`). Scans and
//! a server's page writes (`Engine::query_rows`) first [`touch_all`] a batch of rows, so that
//! the cache misses of rows scattered over the heap overlap instead of stalling one row after
//! another; a typed page decode reads the rows the scan has just touched without a second
//! touch.
//!
//! Invariants: a buffer is only made by [`Row::new`] (or [`Row::sized`], given the
//! [`RowSize`] `Row::new` would sum), from UTF-8 strings and in-range
//! values, so decoding gives back exactly what was stored (property order, NaN bits, every
//! value), whichever way it is read. Decoding still uses checked slicing (and checks the
//! text it hands on as UTF-8, since safe code cannot skip that) and would read a malformed
//! buffer as missing data, never panic.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Timelike, Utc};
use uuid::Uuid;

use super::clock::Stamp;
use super::select::{SLOT_BITS, Select, Selected, SlotBits};
use crate::entity::{ETag, Entity};
use crate::error::Result;
use crate::filter::{Source, same_bytes};
use crate::typed::{
    Decoder, EntityParts, EntityReader, FieldSink, PropertyList, PropertySlots, ReadEntity, Taken,
};
use crate::validate::{EntityView, MAX_PROPERTIES, ViewName};
use crate::value::{EdmType, Value, ValueRef};

/// Bytes before the text: timestamp seconds and nanoseconds, four lengths, the property count.
const HEADER: usize = 8 + 4 + 4 * 4 + 4;

/// Type tags of encoded values.
const STRING: u8 = 0;
const INT32: u8 = 1;
const INT64: u8 = 2;
const DOUBLE: u8 = 3;
const BOOLEAN: u8 = 4;
const DATETIME: u8 = 5;
const GUID: u8 = 6;
const BINARY: u8 = 7;

/// The bytes after its tag of a value of each fixed-size type, by tag; 0 for String, Binary
/// and unknown tags.
const FIXED_SIZES: [u8; 256] = {
    let mut sizes = [0; 256];
    sizes[INT32 as usize] = 4;
    sizes[INT64 as usize] = 8;
    sizes[DOUBLE as usize] = 8;
    sizes[BOOLEAN as usize] = 1;
    sizes[DATETIME as usize] = 16;
    sizes[GUID as usize] = 16;
    sizes
};

/// A stored entity with its timestamp and ETag (see the module docs). Cloning shares the
/// buffer, so a query can take rows out of the table lock without copying them.
#[derive(Clone)]
pub(crate) struct Row(Arc<[u8]>);

impl Row {
    /// Encodes `entity`'s keys and custom properties (an [`Entity`]'s own `timestamp` and
    /// `etag` fields are ignored, as on every write), stamped with `timestamp` and `etag`.
    /// Any [`EntityView`] of the same entity encodes to the same bytes.
    pub(crate) fn new(entity: &impl EntityView, timestamp: Stamp, etag: &ETag) -> Row {
        Row::encode::<false>(entity, None, timestamp, etag).0
    }

    /// [`new`](Self::new), the properties' share of the buffer already summed by a walk that
    /// had to visit them anyway (the one that checked them: `Put::new`, or
    /// `validate_entity_with` for an [`Entity`]). `None` when this walk hands properties of
    /// another size than that one did (a typed value whose `PropertyValue::to_value` answers
    /// differently on each call): the row would not hold what was checked, and part of it
    /// would be left unwritten. A view whose walks all hand the same properties
    /// ([`EntityView::SAME_EVERY_WALK`]) is not summed again.
    pub(crate) fn sized<E: EntityView>(
        entity: &E,
        properties: RowSize,
        timestamp: Stamp,
        etag: &ETag,
    ) -> Option<Row> {
        let (row, encoded) = if E::SAME_EVERY_WALK {
            Row::encode::<false>(entity, Some(properties), timestamp, etag)
        } else {
            Row::encode::<true>(entity, Some(properties), timestamp, etag)
        };
        (encoded == properties).then_some(row)
    }

    // One body for `new` and `sized`: as two (`new` summing, then calling `sized`), the
    // encoding of an `Entity` took about 65 more instructions per row.
    /// The row, and the properties' share of it as the encoding walk handed them (summed
    /// again only when `RESUM`, else the share given or summed just above: see below).
    // A hint, for the untyped engine insert: without it, 5,171 instructions rather than 5,137
    // (`#[inline(never)]`: 5,172, and a typed insert 20 more; ops_probe `probe_engine_inserts`).
    #[inline]
    fn encode<const RESUM: bool>(
        entity: &impl EntityView,
        summed: Option<RowSize>,
        timestamp: Stamp,
        etag: &ETag,
    ) -> (Row, RowSize) {
        let (pk, rk, etag) =
            (entity.partition_key().as_bytes(), entity.row_key().as_bytes(), etag.as_str().as_bytes());
        let properties = summed.unwrap_or_else(|| {
            let mut sum = RowSize::default();
            entity.properties(&mut sum);
            sum
        });
        let (text_len, values_len) = (pk.len() + rk.len() + etag.len() + properties.text, properties.values);
        // Written in place in the shared allocation: one allocation per row, no copy.
        let mut buffer: Arc<[u8]> = std::iter::repeat_n(0, HEADER + text_len + values_len).collect();
        let mut encoded = properties;
        if let Some(bytes) = Arc::get_mut(&mut buffer) {
            let (header, rest) = bytes.split_at_mut(HEADER);
            let (text, values) = rest.split_at_mut(text_len);
            let mut header = Writer(header);
            put_unix_time(&mut header, timestamp.unix());
            for len in [text_len, pk.len(), rk.len(), etag.len(), entity.property_count()] {
                header.len(len);
            }
            let mut encoder = RowEncoder { text: Writer(text), values: Writer(values) };
            encoder.text.put(pk);
            encoder.text.put(rk);
            if RESUM {
                // Summed again as written, when another walk of a typed value summed the size:
                // the writers drop what does not fit, so only the sum tells a walk that handed
                // more (or less) than the buffer was sized for. A walk sized just above, or of
                // a view whose walks cannot differ, is not summed again (summed, an untyped
                // engine insert cost 5,220 instructions rather than 5,172; ops_probe
                // `probe_engine_inserts`).
                let mut walk = (RowSize::default(), encoder);
                entity.properties(&mut walk);
                (encoded, encoder) = walk;
            } else {
                entity.properties(&mut encoder);
            }
            encoder.text.put(etag);
        }
        (Row(buffer), encoded)
    }

    /// The encoded buffer, for tests that compare encodings byte for byte.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The `PartitionKey`.
    pub(crate) fn partition_key(&self) -> &str {
        let parts = self.parts();
        parts.str(parts.partition_key())
    }

    /// The `RowKey`.
    pub(crate) fn row_key(&self) -> &str {
        let parts = self.parts();
        parts.str(parts.row_key())
    }

    /// Whether the row's keys are these: compared as bytes, without checking the stored text
    /// is UTF-8 (an index probe compares keys this way).
    pub(crate) fn has_keys(&self, partition_key: &str, row_key: &str) -> bool {
        let parts = self.parts();
        parts.text.get(parts.row_key()) == Some(row_key.as_bytes())
            && parts.text.get(parts.partition_key()) == Some(partition_key.as_bytes())
    }

    /// The ETag text of the write that stored the row.
    pub(crate) fn etag(&self) -> &str {
        let parts = self.parts();
        parts.str(parts.etag())
    }

    /// The `Timestamp` of the write that stored the row.
    pub(crate) fn timestamp(&self) -> Option<DateTime<Utc>> {
        Reader(&self.0).unix_time()
    }

    /// The entity as returned to a caller: with `select`, only the listed custom properties
    /// (absent ones stay absent); keys, timestamp and ETag are always kept.
    pub(crate) fn to_entity(&self, select: Option<&Select>) -> Entity {
        entity_of(self, &self.parts(), select)
    }

    /// The row decoded by `decoder`, projected by `select` as [`to_entity`](Self::to_entity)
    /// projects it: straight through a [`RowReader`] when the decoder reads through one (a
    /// derived type's, compiled for this reader), else from the parts [`read`](Self::read)
    /// lays out by its slots.
    pub(crate) fn decode<T>(&self, select: Option<&Select>, decoder: Decoder<T>) -> Result<T> {
        self.decode_projected(&Projection::new(select, decoder.slots()), decoder)
    }

    /// [`decode`](Self::decode) with the `select` already worked out for the decoder's slots
    /// ([`Projection::new`]), as a query does once for all the rows of a page.
    pub(crate) fn decode_projected<T>(&self, projection: &Projection<'_>, decoder: Decoder<T>) -> Result<T> {
        match decoder.row_reader() {
            Some(read_row) => read_row(&mut RowReader::new(self, projection)),
            None => decoder.decode(self.read(projection.select, decoder.slots())),
        }
    }

    /// The row as a reader hands it to a decoder ([`ReadEntity`]): what
    /// [`to_entity`](Self::to_entity) returns, with names and string values still borrowed
    /// from the row until a decoder takes them, and each property that has one of `slots` in
    /// it. The generic entity and decoders without a reader (`TableEntity::from_parts` through
    /// [`Decoder::new`]) start here.
    pub(crate) fn read(&self, select: Option<&Select>, slots: &'static PropertySlots) -> ReadEntity<'_> {
        let parts = self.parts();
        let all_text = text(parts.text);
        let mut slotted = vec![None; slots.names.len()];
        // The count is a hint: a malformed buffer may claim any number. A typed read rarely
        // meets a property without a slot.
        let listed = if slots.names.is_empty() { parts.count.min(MAX_PROPERTIES) } else { 0 };
        let mut properties = Vec::with_capacity(listed);
        each_property(&parts, all_text, select, |name, value| {
            match (slots.slot)(name).and_then(|slot| slotted.get_mut(slot)) {
                Some(slot) => *slot = Some(value),
                None => properties.push((Cow::Borrowed(name), Some(value))),
            }
        });
        let (partition_key, row_key, etag) = keys_and_etag(&parts, all_text);
        EntityParts {
            partition_key,
            row_key,
            timestamp: self.timestamp(),
            etag: Some(etag),
            // Names of a row are unique and sorted by construction; a malformed buffer reads
            // as missing data, as everywhere in this module.
            properties: PropertyList::from_slots(slots, slotted, properties).unwrap_or_default(),
        }
    }

    /// Loads one byte of each cache line of the row's first [`TOUCHED`] bytes and answers
    /// their sum, so that a caller can take the cache misses of several rows at once (see
    /// [`touch_all`]) instead of one row after another.
    // Inlined, so that the loop over the lines is too: as a call it left `step_by`'s fold a
    // call of its own per row of a scan (callgrind). A loop over indices rather than
    // `step_by`'s fold, whose count of steps took about 25 instructions to set up per row:
    // a scanned row 2,631.3 -> 2,581.1 instructions, a typed get 2,494.0 -> 2,468.0 (ops_probe
    // `probe_scans`, `probe_gets`).
    #[inline]
    fn touch(&self) -> u8 {
        let head = self.0.get(..TOUCHED).unwrap_or(&self.0);
        let mut sum = 0;
        let mut at = 0;
        while let Some(byte) = head.get(at) {
            sum ^= byte;
            at += CACHE_LINE;
        }
        sum
    }

    /// Slices the buffer into its sections; a malformed buffer gives empty sections.
    fn parts(&self) -> Parts<'_> {
        let bytes: &[u8] = &self.0;
        let sections = || {
            let mut header = Reader(bytes.get(12..HEADER)?);
            let (text_len, pk, rk, etag) = (header.len()?, header.len()?, header.len()?, header.len()?);
            let count = header.len()?;
            let (text, values) = bytes.get(HEADER..)?.split_at_checked(text_len)?;
            let keys_end = pk.checked_add(rk)?;
            let etag_at = text.len().checked_sub(etag)?;
            (keys_end <= etag_at).then_some(Parts { text, pk_len: pk, keys_end, etag_at, count, values })
        };
        sections().unwrap_or_default()
    }
}

/// The longest text (before the ETag) a [`RowReader`] checks as UTF-8 whole: a few hundred
/// bytes is a typical row's, and a check of this many costs about what a check per key and
/// per String of a row would.
const WHOLE_TEXT_CHECK_MAX: usize = 2048;

/// Bytes of a cache line (x86-64 and most ARM cores).
const CACHE_LINE: usize = 64;
/// Bytes of a row [`Row::touch`] loads: a filter or a read of a typical row finds every byte
/// it reads in them, and a large row costs no more than a small one.
const TOUCHED: usize = 8 * CACHE_LINE;

/// Touches each of `rows` ([`Row::touch`]) before any is read. A scan or a page write reads
/// rows one after another, each read starting with a cache miss (a table larger than the cache
/// holds rows scattered over the heap); the loads here do not depend on each other, so the
/// processor takes their misses together, and the reads that follow find the rows in cache.
/// A hint only: it changes no result.
pub(crate) fn touch_all<'a>(rows: impl IntoIterator<Item = &'a Row>) {
    let touched = rows.into_iter().fold(0, |acc, row| acc ^ row.touch());
    // Kept, or the compiler would drop the loads as unused.
    std::hint::black_box(touched);
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_entity(None).fmt(f)
    }
}

/// A row as a filter reads it: sliced into its sections once, however many comparisons the
/// filter makes on it.
pub(crate) struct RowSource<'a> {
    row: &'a Row,
    parts: Parts<'a>,
}

impl Row {
    /// The row for a compiled filter to test ([`Compiled::matches`](crate::filter::Compiled)).
    pub(crate) fn source(&self) -> RowSource<'_> {
        RowSource { row: self, parts: self.parts() }
    }
}

impl Source for RowSource<'_> {
    fn partition_key(&self) -> &str {
        self.parts.str(self.parts.partition_key())
    }

    fn row_key(&self) -> &str {
        self.parts.str(self.parts.row_key())
    }

    fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.row.timestamp()
    }

    // Always inlined into the compiled filter's leaf (see `PropertyRef::read`), so that the
    // value is decoded where it is compared; the walk to it (`Parts::find`) stays a call, as
    // inlined it slowed scans and gets.
    #[inline(always)]
    fn custom(&self, name: &str) -> Option<ValueRef<'_>> {
        self.parts.find(name)?.value_ref()
    }
}

/// A `$select` as one decoder's takes see it: for each of the decoder's property slots,
/// whether the select admits that slot's property. Worked out once for a page of rows (or a
/// point read) instead of by comparing names on every take of every row.
///
/// Invariant: bit `i` of `admitted` is set exactly when `select` is absent or lists
/// `slots.names[i]`, for every slot below `slots.names.len()` and [`SLOT_BITS`].
pub(crate) struct Projection<'s> {
    select: Option<&'s Select>,
    /// The slots `admitted` answers for: the decoder's own.
    slots: &'static PropertySlots,
    admitted: SlotBits,
}

impl<'s> Projection<'s> {
    /// `select` worked out for `slots`.
    pub(crate) fn new(select: Option<&'s Select>, slots: &'static PropertySlots) -> Self {
        // Without a select every slot is admitted.
        let admitted = select.map_or([u64::MAX; SLOT_BITS / 64], |select| select.admitted_slots(slots));
        Projection { select, slots, admitted }
    }

    /// Whether the projection can tell if the select admits slot `slot` among `slots`: they
    /// are its own slots, and it covers that one.
    #[inline(always)]
    fn covers(&self, slots: &PropertySlots, slot: usize) -> bool {
        std::ptr::eq(self.slots, slots) && slot < self.slots.names.len() && slot < SLOT_BITS
    }

    /// Whether the select admits the property of slot `slot`, one the projection
    /// [`covers`](Self::covers).
    #[inline(always)]
    fn admits(&self, slot: usize) -> bool {
        self.admitted.get(slot / 64).is_some_and(|word| word & (1 << (slot % 64)) != 0)
    }
}

/// A row read by a decoder that reads through an [`EntityReader`] (see the `typed` decode
/// module's "Readers"): the keys and names stay borrowed from the row, a property's value is
/// decoded only when taken, and only its text is copied (once, into the field it becomes).
///
/// Properties are found by a cursor that only moves forward, so that takes in ascending name
/// order (a derived decoder's order) walk the row once in all; a take of a name not after the
/// last property passed starts over from the first. The select is applied by the projection's
/// bits for a take by the decoder's own slot number, and otherwise by a cursor over its sorted
/// names, which takes by name move and which starts over with the properties' cursor.
/// Invariant: every property before `ahead` that no take has returned has a name not above
/// `passed` (a malformed one, which ends the walk, and those after it excepted: they read as
/// missing), and `selected` has passed only names below the last property taken by name
/// since the last start. (A decoder takes each name once, so a property a take returned is
/// never looked for again: see `take_next`.)
pub(crate) struct RowReader<'a> {
    row: &'a Row,
    projection: &'a Projection<'a>,
    parts: Parts<'a>,
    /// The text before the ETag (keys, names, String values) of a row whose text is at most
    /// [`WHOLE_TEXT_CHECK_MAX`] bytes, checked as UTF-8 once, when a key or a String is first
    /// read: a typed read takes most of it, and one pass over it all costs less than a check
    /// per key and per String (callgrind: about 330 instructions a row in four checks before,
    /// for the benches' customer row). A longer row's keys and Strings are checked one by one,
    /// as taken, so that a read of a few small properties of a large row (a projection) does
    /// not check all of it. The ETag is checked on its own, when it is taken. Empty if the
    /// check fails, which the module invariant rules out.
    text: OnceCell<&'a str>,
    /// The properties not yet passed.
    ahead: Properties<'a>,
    /// The selected names a property still ahead may match.
    selected: Option<Selected<'a>>,
    /// The name of the last property passed (empty before the first).
    passed: &'a [u8],
}

impl<'a> RowReader<'a> {
    fn new(row: &'a Row, projection: &'a Projection<'a>) -> Self {
        let parts = row.parts();
        RowReader {
            row,
            projection,
            ahead: parts.properties(),
            selected: projection.select.map(Select::cursor),
            passed: &[],
            text: OnceCell::new(),
            parts,
        }
    }

    /// The text at `at` (a key or a String value): sliced from the text checked once (see
    /// `text`), or checked on its own in a long row.
    #[inline(always)]
    fn str_at(&self, at: Range<usize>) -> &'a str {
        if self.parts.etag_at > WHOLE_TEXT_CHECK_MAX {
            return self.parts.str(at);
        }
        let before_etag = self.parts.text.get(..self.parts.etag_at).unwrap_or_default();
        let checked = self.text.get_or_init(|| text(before_etag));
        // Cut at both ends, which inlines, rather than `checked.get(at)`, which stayed a call
        // (one per String read): the same piece, or "" where `get` finds none. A typed get or
        // scanned row 9 instructions fewer (callgrind, ops_probe `probe_gets`, `probe_scans`).
        let head = checked.split_at_checked(at.end).map_or("", |(head, _)| head);
        head.split_at_checked(at.start).map_or("", |(_, piece)| piece)
    }

    /// An encoded value, a String sliced from the checked text (`str_at`), one of the
    /// `expected` type decoded as that type ([`Fixed::decode_expecting`]).
    // The closure always inlined too: as a call of its own, a typed get or scan row cost
    // 31 instructions more (callgrind).
    #[inline(always)]
    fn value_ref(&self, value: Encoded<'a>, expected: Option<EdmType>) -> Option<ValueRef<'a>> {
        value.value_ref_with(
            expected,
            #[inline(always)]
            |span| Some(self.str_at(span.at)),
        )
    }

    /// The value of the property `name` when the row has it and the select admits it, leaving
    /// the cursor after it, lent from the row.
    fn lend(&mut self, name: &str) -> Option<ValueRef<'a>> {
        let value = self.seek(name)?;
        self.value_ref(value, None)
    }

    /// [`lend`](Self::lend) of `name`, whose slot among `slots` is `slot` (see
    /// [`EntityReader::take_slot`]), a value of the `expected` type decoded as that type.
    // Always inlined, down to a value's decoding, into a derived decoder compiled for this
    // reader: the field's type then matches the lent value away where it is decoded (as a
    // call, with a `Value` built and matched away, it cost 6-7% of a typed get or scan row).
    #[inline(always)]
    fn lend_slot(
        &mut self,
        slots: &PropertySlots,
        slot: usize,
        name: &str,
        expected: Option<EdmType>,
    ) -> Option<ValueRef<'a>> {
        // The decoder's own slot (its derived takes): the projection knows whether the select
        // admits it, so no selected name is compared. Asked as two questions: as one answer of
        // three (`Option<bool>`), the answer was built and matched again, about 8 instructions
        // a take (a typed get or scan row 61 more, callgrind).
        if !self.projection.covers(slots, slot) {
            return self.lend(name);
        }
        if !self.projection.admits(slot) {
            return None;
        }
        if let Some(expected) = expected
            && let Some(value) = self.take_next(name.as_bytes(), expected)
        {
            return value;
        }
        let value = self.find(name)?;
        self.value_ref(value, expected)
    }

    /// The value of the property at the cursor, the cursor stepped past it, when that property
    /// is `wanted` and stored as the `expected` type: what [`find`](Self::find) and
    /// [`value_ref`](Self::value_ref) would answer. `None` for any other property (or none),
    /// the cursor unmoved, for `find` to look further.
    ///
    /// Why: a derived decoder's takes nearly always find this (they come in the row's name
    /// order, each of its field's type), and with the name and the type constants of the
    /// take, the record is read knowing its layout and the value decoded as that type
    /// straight away. Through `find`, the step's answer for any property, its tag matched
    /// for the value's size, was checked again for its variant, tag and size before the
    /// value was decoded: a typed get 2,494.0 instructions, 2,255.0 this way; a scanned row
    /// 2,777.4, 2,534.5 (callgrind, ops_probe `probe_gets`, `probe_scans`). Sized by the tag
    /// compared with the type's inside that step instead, 2,449.0 and 2,728.4: the two ways
    /// met again before the value was decoded.
    ///
    /// `passed` is left as it was (with it set here, 24 instructions more a get or scanned
    /// row): every property the cursor passes this way is returned, and a decoder never
    /// looks for it again, so every later take answers the same (the struct's invariant).
    #[inline(always)]
    fn take_next(&mut self, wanted: &[u8], expected: EdmType) -> Option<Option<ValueRef<'a>>> {
        let property = self.ahead.next_if(wanted, tag_of(expected))?;
        Some(self.value_ref(property.value, Some(expected)))
    }

    /// The value of the property `name` when the row has it and the select admits it, leaving
    /// the cursor after it.
    fn seek(&mut self, name: &str) -> Option<Encoded<'a>> {
        let value = self.find(name)?;
        let admitted = self.selected.as_mut().is_none_or(|selected| selected.admits(name));
        admitted.then_some(value)
    }

    /// The value of the property `name` when the row has it, whatever the select, leaving the
    /// cursor after it.
    // Always inlined, with the forward step, into a derived decoder's takes: as a call it cost
    // a typed get or scan row about 150 instructions of 3,350 (callgrind). Only the restart,
    // rare, stays a call, and it only moves the cursor back: the value is found by the inlined
    // search either way. When the restart's call searched too and returned the value (40
    // bytes, through memory), every take stored the value it found and read it back to meet
    // that one: a typed get and a scanned row 97 instructions more (callgrind, ops_probe).
    #[inline(always)]
    fn find(&mut self, name: &str) -> Option<Encoded<'a>> {
        let wanted = name.as_bytes();
        // At most once over again: after a start a miss is final (were `wanted` empty, a
        // start would be asked for again and again).
        let mut started_over = false;
        loop {
            if let Some(value) = self.find_ahead(wanted) {
                return Some(value);
            }
            if started_over || !self.start_over_for(wanted) {
                return None;
            }
            started_over = true;
        }
    }

    /// Whether `wanted`, not ahead of the cursor, is passed (a take out of ascending order),
    /// the cursor then moved back to the first property. Asked only on a miss
    /// (the properties ahead are all above `passed`, so a passed name misses at once), so that
    /// takes in ascending order compare each name once, with no restart check per take.
    #[inline(never)]
    fn start_over_for(&mut self, wanted: &[u8]) -> bool {
        if wanted > self.passed {
            return false;
        }
        (self.ahead, self.selected, self.passed) =
            (self.parts.properties(), self.projection.select.map(Select::cursor), &[]);
        true
    }

    /// The value of the property `wanted` when it is ahead of the cursor, leaving the cursor
    /// after it; otherwise `None`, the cursor after the properties below `wanted`.
    // Inlined into `find`: as a call of its own it cost a typed read more than the comparison
    // it saves (callgrind).
    #[inline(always)]
    fn find_ahead(&mut self, wanted: &[u8]) -> Option<Encoded<'a>> {
        loop {
            // Stepped in place, the way back kept for a name above `wanted`: stepped on a copy
            // written back, a typed get or scan row cost 48 instructions more (callgrind; 47
            // again once `Properties::next` inlined), and 33 more with the whole walk kept as
            // the way back rather than its position. Past the last property, or at a
            // malformed one, the cursor stays at the end.
            let before = self.ahead.position();
            let property = self.ahead.next()?;
            // Equality first, inlined: a derived decoder's takes nearly always find their name
            // (the order, only on a miss, in `name_order`).
            let order = match same_bytes(property.name.bytes, wanted) {
                true => Ordering::Equal,
                false => name_order(property.name.bytes, wanted),
            };
            if order == Ordering::Greater {
                // Names ascend: `wanted` is not ahead. The cursor stays for a later name.
                self.ahead.rewind(before);
                return None;
            }
            self.passed = property.name.bytes;
            if order == Ordering::Equal {
                return Some(property.value);
            }
        }
    }
}

/// How a property's `name` orders against the `wanted` one it is not equal to: whether a
/// take passes it or stops before it. Out of line and cold, as a derived decoder's takes
/// nearly always find their name next: inlined, its call to `memcmp` made every step of
/// every take keep the cursor's way back and the property's record on the stack, found or
/// not (a typed get and a scanned row 60 instructions more, callgrind, ops_probe); a step
/// past a property the take does not want pays a call more instead.
#[cold]
#[inline(never)]
fn name_order(name: &[u8], wanted: &[u8]) -> Ordering {
    name.cmp(wanted)
}

// The keys and takes by slot are `#[inline]`, down to a value's decoding: see the module's
// "Reads".
impl EntityReader for RowReader<'_> {
    #[inline]
    fn partition_key(&self) -> &str {
        self.str_at(self.parts.partition_key())
    }

    #[inline]
    fn row_key(&self) -> &str {
        self.str_at(self.parts.row_key())
    }

    fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.row.timestamp()
    }

    fn take_etag(&mut self) -> Option<ETag> {
        Some(ETag::new(self.parts.str(self.parts.etag())))
    }

    fn take(&mut self, name: &str) -> Option<Value> {
        self.lend(name).map(ValueRef::to_value)
    }

    fn take_slot(&mut self, slots: &PropertySlots, slot: usize, name: &str) -> Option<Value> {
        self.lend_slot(slots, slot, name, None).map(ValueRef::to_value)
    }

    // Always inlined: into a derived decoder compiled for this reader, in another crate, a
    // hint alone left it a call (see `lend_slot`).
    #[inline(always)]
    fn take_slot_lent(
        &mut self,
        slots: &PropertySlots,
        slot: usize,
        name: &str,
        expected: EdmType,
    ) -> Taken<'_> {
        Taken::Lent(self.lend_slot(slots, slot, name, Some(expected)))
    }

    fn peek(&self, name: &str) -> Option<Value> {
        let admitted = self.projection.select.is_none_or(|select| select.cursor().admits(name));
        admitted.then(|| self.value_ref(self.parts.find(name)?, None).map(ValueRef::to_value)).flatten()
    }

    fn take_entity(&mut self) -> Entity {
        entity_of(self.row, &self.parts, self.projection.select)
    }
}

/// A stored row as it is, for a caller that writes rows out (a server's answer) rather than
/// decoding them: keys, timestamp, ETag and the custom properties, all borrowed from the row,
/// the properties projected by the query's `$select`.
#[doc(hidden)]
pub struct RowView<'a> {
    row: &'a Row,
    select: Option<&'a Select>,
    parts: Parts<'a>,
    /// The whole text section, checked as UTF-8 once: a view is for writing the whole row out,
    /// so one pass over all of it is cheaper than a check per key, name and value. (Empty if
    /// the check fails, which the module invariant rules out: the view then shows no text.)
    text: &'a str,
}

impl fmt::Debug for RowView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowView")
            .field("partition_key", &self.partition_key())
            .field("row_key", &self.row_key())
            .finish_non_exhaustive()
    }
}

impl<'a> RowView<'a> {
    pub(crate) fn new(row: &'a Row, select: Option<&'a Select>) -> Self {
        let parts = row.parts();
        RowView { row, select, text: text(parts.text), parts }
    }

    /// The `PartitionKey`.
    pub fn partition_key(&self) -> &'a str {
        self.text.get(self.parts.partition_key()).unwrap_or_default()
    }

    /// The `RowKey`.
    pub fn row_key(&self) -> &'a str {
        self.text.get(self.parts.row_key()).unwrap_or_default()
    }

    /// The `Timestamp` of the write that stored the row.
    pub fn timestamp(&self) -> Option<DateTime<Utc>> {
        self.row.timestamp()
    }

    /// The ETag text of the write that stored the row.
    pub fn etag(&self) -> &'a str {
        self.text.get(self.parts.etag()).unwrap_or_default()
    }

    /// The custom properties `$select` admits, in ascending name order, as
    /// [`Row::to_entity`] returns them (a value that does not decode is left out there too).
    pub fn properties(&self) -> impl Iterator<Item = (&'a str, ValueRef<'a>)> + use<'a> {
        let mut wanted = self.select.map(Select::cursor);
        let text = self.text;
        self.parts.properties().filter_map(move |property| {
            let name = text.get(property.name.at)?;
            if wanted.as_mut().is_some_and(|wanted| !wanted.admits(name)) {
                return None;
            }
            Some((name, property.value.value_ref_with(None, |span| text.get(span.at))?))
        })
    }
}

/// The sections of a row's buffer, with where the keys and ETag are in the text.
#[derive(Default)]
struct Parts<'a> {
    /// The whole text section.
    text: &'a [u8],
    pk_len: usize,
    /// Where the row key, and so the keys, end.
    keys_end: usize,
    /// Where the ETag starts (it runs to the end).
    etag_at: usize,
    /// The number of custom properties the header claims.
    count: usize,
    values: &'a [u8],
}

impl<'a> Parts<'a> {
    /// The text at `at` (a key or the ETag).
    #[inline]
    fn str(&self, at: Range<usize>) -> &'a str {
        text(self.text.get(at).unwrap_or_default())
    }

    /// The value of the custom property `name`.
    fn find(&self, name: &str) -> Option<Encoded<'a>> {
        self.properties().value_named(name.as_bytes())
    }

    fn partition_key(&self) -> Range<usize> {
        0..self.pk_len
    }

    fn row_key(&self) -> Range<usize> {
        self.pk_len..self.keys_end
    }

    fn etag(&self) -> Range<usize> {
        self.etag_at..self.text.len()
    }

    /// The custom properties, in ascending name order.
    fn properties(&self) -> Properties<'a> {
        Properties {
            text: self.text.get(..self.etag_at).unwrap_or_default(),
            at: self.keys_end,
            values: Reader(self.values),
        }
    }
}

/// [`Row::to_entity`] of `row`, sliced into `parts`.
fn entity_of(row: &Row, parts: &Parts<'_>, select: Option<&Select>) -> Entity {
    let all_text = text(parts.text);
    let mut properties = Vec::with_capacity(parts.count.min(MAX_PROPERTIES));
    each_property(parts, all_text, select, |name, value| properties.push((name.to_owned(), value)));
    let (partition_key, row_key, etag) = keys_and_etag(parts, all_text);
    // A row's names are unique and ascending: std's sort of them is one pass, and the map is
    // built in bulk.
    let properties = properties.into_iter().collect();
    Entity { partition_key, row_key, timestamp: row.timestamp(), etag: Some(etag), properties }
}

/// Hands `hand` each custom property of the row that `select` admits, in ascending name
/// order: its name, sliced from `all_text` (the row's text, checked as UTF-8 once, so that
/// slicing is free), and its value decoded (a String copied). What [`Row::to_entity`] and
/// [`Row::read`] both return.
fn each_property<'a>(
    parts: &Parts<'a>,
    all_text: &'a str,
    select: Option<&Select>,
    mut hand: impl FnMut(&'a str, Value),
) {
    let mut wanted = select.map(Select::cursor);
    for property in parts.properties() {
        let name = piece(all_text, property.name.at);
        if wanted.as_mut().is_some_and(|wanted| !wanted.admits(name)) {
            continue;
        }
        let value = match property.value {
            Encoded::Text(span) => Value::String(piece(all_text, span.at).to_owned()),
            Encoded::Fixed(fixed) => match fixed.decode() {
                Some(value) => value.to_value(),
                None => continue,
            },
        };
        hand(name, value);
    }
}

/// The row's keys and ETag, copied out of `all_text` (as [`each_property`] slices it).
fn keys_and_etag(parts: &Parts<'_>, all_text: &str) -> (String, String, ETag) {
    (
        piece(all_text, parts.partition_key()).to_owned(),
        piece(all_text, parts.row_key()).to_owned(),
        ETag::new(piece(all_text, parts.etag())),
    )
}

/// The text at `at` in `all_text` (the row's text, checked as UTF-8 once); "" where a
/// malformed buffer has none.
#[inline]
fn piece(all_text: &str, at: Range<usize>) -> &str {
    all_text.get(at).unwrap_or_default()
}

/// Text the row was built from (valid UTF-8 by the module invariant).
#[inline]
fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// Bytes of the text section and where they are in it.
struct Span<'a> {
    bytes: &'a [u8],
    at: Range<usize>,
}

/// An encoded value. Values are decoded on demand: a filter looking for one property skips
/// the others' bytes.
enum Encoded<'a> {
    /// A String, in the text section.
    Text(Span<'a>),
    /// Any other type, in the value section.
    Fixed(Fixed<'a>),
}

impl<'a> Encoded<'a> {
    /// The value, borrowed from the row. A String is checked as UTF-8 on its own, so a read
    /// of one property checks no other text.
    #[inline]
    fn value_ref(self) -> Option<ValueRef<'a>> {
        self.value_ref_with(None, |span| std::str::from_utf8(span.bytes).ok())
    }

    /// The value, borrowed from the row, a String's text given by `string`: checked on its
    /// own, or sliced from text checked before; one of the `expected` type decoded as that
    /// type ([`Fixed::decode_expecting`]).
    #[inline(always)]
    fn value_ref_with(
        self,
        expected: Option<EdmType>,
        string: impl FnOnce(Span<'a>) -> Option<&'a str>,
    ) -> Option<ValueRef<'a>> {
        match self {
            Encoded::Text(span) => string(span).map(ValueRef::Str),
            Encoded::Fixed(fixed) => fixed.decode_expecting(expected),
        }
    }
}

/// A non-String value: its type tag and bytes.
struct Fixed<'a> {
    tag: u8,
    bytes: &'a [u8],
}

impl<'a> Fixed<'a> {
    /// The value, of the type its tag says.
    #[inline(always)]
    fn decode(&self) -> Option<ValueRef<'a>> {
        decode_tagged(self.tag, self.bytes)
    }

    /// [`decode`](Self::decode), a value of the `expected` type decoded as that type once its
    /// tag is compared with that type's. A derived decoder's take inlines this with the
    /// field's type, so the comparison is with a constant and the decode has one way left:
    /// the tag is not dispatched a second time (the step over the property matched it once
    /// already, for the value's size). Any other tag, or no expectation, is decoded by its
    /// tag, the same value either way.
    #[inline(always)]
    fn decode_expecting(&self, expected: Option<EdmType>) -> Option<ValueRef<'a>> {
        match expected.map(tag_of) {
            Some(tag) if tag == self.tag => decode_tagged(tag, self.bytes),
            _ => self.decode(),
        }
    }
}

/// The value of type tag `tag` encoded in `bytes`; `None` for a tag of no fixed-size type.
#[inline(always)]
fn decode_tagged(tag: u8, bytes: &[u8]) -> Option<ValueRef<'_>> {
    let mut value = Reader(bytes);
    Some(match tag {
        INT32 => ValueRef::Int32(i32::from_le_bytes(value.array()?)),
        INT64 => ValueRef::Int64(i64::from_le_bytes(value.array()?)),
        DOUBLE => ValueRef::Double(f64::from_bits(u64::from_le_bytes(value.array()?))),
        BOOLEAN => ValueRef::Boolean(value.array::<1>()? != [0]),
        DATETIME => ValueRef::DateTime(value.datetime()?),
        GUID => ValueRef::Guid(Uuid::from_bytes(value.array()?)),
        BINARY => ValueRef::Binary(bytes),
        _ => return None,
    })
}

/// The type tag of the values of type `edm`.
#[inline(always)]
const fn tag_of(edm: EdmType) -> u8 {
    match edm {
        EdmType::String => STRING,
        EdmType::Int32 => INT32,
        EdmType::Int64 => INT64,
        EdmType::Double => DOUBLE,
        EdmType::Boolean => BOOLEAN,
        EdmType::DateTime => DATETIME,
        EdmType::Guid => GUID,
        EdmType::Binary => BINARY,
    }
}

/// One encoded custom property.
struct Property<'a> {
    name: Span<'a>,
    value: Encoded<'a>,
}

/// Walks the text and value sections side by side.
#[derive(Clone)]
struct Properties<'a> {
    text: &'a [u8],
    /// Where the next name starts in `text`.
    at: usize,
    values: Reader<'a>,
}

impl<'a> Properties<'a> {
    /// Where the walk is, for [`rewind`](Self::rewind): the text it walks stays the same.
    #[inline(always)]
    fn position(&self) -> (usize, Reader<'a>) {
        (self.at, self.values.clone())
    }

    /// Back to where the walk was at `position`.
    #[inline(always)]
    fn rewind(&mut self, (at, values): (usize, Reader<'a>)) {
        (self.at, self.values) = (at, values);
    }

    #[inline(always)]
    fn span(&mut self, len: usize) -> Option<Span<'a>> {
        let at = self.at..self.at.checked_add(len)?;
        let bytes = self.text.get(at.clone())?;
        self.at = at.end;
        Some(Span { bytes, at })
    }

    /// Reads the property the walk is at and steps past it; `None` when it is malformed.
    /// Always inlined into the step (see `next`), as `span` and `Reader::len` are.
    #[inline(always)]
    fn property(&mut self) -> Option<Property<'a>> {
        let (name_len, tag) = self.record_start()?;
        let name = self.span(name_len)?;
        let value = self.value(tag)?;
        Some(Property { name, value })
    }

    /// The start of the record the walk is at: its name's length and its value's type tag.
    #[inline(always)]
    fn record_start(&mut self) -> Option<(usize, u8)> {
        // Taken with one check of the room left, as `Writer::record` writes it (a typed get 23
        // instructions fewer, a scanned row 31, than a check per part), and cut from the slice
        // rather than copied out as a five-byte array, which the compiler put back together
        // with three more instructions per record (a typed get 2,145.0 -> 2,087.0, a scanned
        // row 2,288.1 -> 2,232.1, a filter's lookup 9 fewer per examined row; ops_probe
        // `probe_gets`, `probe_scans`).
        let record = self.values.take(RECORD_START)?;
        let (len, tag) = record.split_first_chunk::<4>()?;
        Some((usize::try_from(u32::from_le_bytes(*len)).ok()?, *tag.first()?))
    }

    /// The value of the property named `wanted`, the walk stepped past the properties before
    /// it; `None` when there is none (or a malformed one comes first). Names of another length
    /// are stepped over without being sliced.
    #[inline(always)]
    fn value_named(&mut self, wanted: &[u8]) -> Option<Encoded<'a>> {
        loop {
            let (name_len, tag) = self.record_start()?;
            if name_len == wanted.len() {
                if same_bytes(self.span(name_len)?.bytes, wanted) {
                    return self.value(tag);
                }
            } else {
                self.at = self.at.checked_add(name_len)?;
            }
            self.skip_value(tag)?;
        }
    }

    /// The value of the record the walk is in, whose name it has passed, of type tag `tag`.
    #[inline(always)]
    fn value(&mut self, tag: u8) -> Option<Encoded<'a>> {
        if tag == STRING {
            let len = self.values.len()?;
            return Some(Encoded::Text(self.span(len)?));
        }
        let size = self.stored_size(tag)?;
        let bytes = self.values.take(size)?;
        Some(Encoded::Fixed(Fixed { tag, bytes }))
    }

    /// Steps over the value of the record the walk is in, whose name it has passed, of type tag
    /// `tag`, without reading it. A String's text is not sliced: a slice past the text's end
    /// fails later, so a malformed row still reads as missing data.
    #[inline(always)]
    fn skip_value(&mut self, tag: u8) -> Option<()> {
        if tag == STRING {
            let len = self.values.len()?;
            self.at = self.at.checked_add(len)?;
            return Some(());
        }
        let size = self.stored_size(tag)?;
        self.values.take(size).map(drop)
    }

    /// The bytes a value of type tag `tag` other than String takes in the value section after
    /// its tag (a Binary's read from its length, which the walk steps past); `None` for an
    /// unknown tag.
    // Looked up in a table rather than matched, which compiled to a jump table: with the
    // record's start taken as a slice (`record_start`), a filter's lookup of the 7th of 8
    // properties 532.7 -> 490.4 instructions per examined row (the untyped engine bench's
    // `Score lt 10` scan), a typed get 2,087.0 -> 2,079.0, a scanned row 2,232.1 -> 2,220.1
    // (ops_probe `probe_gets`, `probe_scans`).
    #[inline(always)]
    fn stored_size(&mut self, tag: u8) -> Option<usize> {
        match FIXED_SIZES[usize::from(tag)] {
            0 if tag == BINARY => self.values.len(),
            0 => None,
            size => Some(usize::from(size)),
        }
    }

    /// The property the walk is at, stepped past, only when its name is `wanted` and its value
    /// of type tag `tag`; otherwise `None`, the walk unmoved (a malformed property too: the
    /// step over it, [`next`](Iterator::next), ends the walk). The name's length and the
    /// value's tag are compared before the record is read further, so a caller whose `wanted`
    /// and `tag` are constants reads the record knowing its layout (see
    /// [`RowReader::take_next`]).
    #[inline(always)]
    fn next_if(&mut self, wanted: &[u8], tag: u8) -> Option<Property<'a>> {
        let mut walk = self.clone();
        if walk.record_start()? != (wanted.len(), tag) {
            return None;
        }
        let name = walk.span(wanted.len())?;
        if !same_bytes(name.bytes, wanted) {
            return None;
        }
        let value = walk.value(tag)?;
        *self = walk;
        Some(Property { name, value })
    }
}

impl<'a> Iterator for Properties<'a> {
    type Item = Property<'a>;

    // Always inlined, down to the reads of the record (`property`, `span`, `Reader::len`),
    // and stepped on a copy of the walk written back once, so that the walk stays in
    // registers while a record is read rather than being stored back after each of its
    // reads. Measured before `property` took the record's start in one piece: a typed get
    // cost 2,868.0 instructions and a scanned row 3,062.7 this way; as a call, 2,948.0 and
    // 3,114.7; inlined but stepped in place, 2,917.0 and 3,091.7; inlined
    // without `span`'s hint, 3,074.0 and 3,268.7; with `Reader::take` and `array` hinted
    // too (and stepped in place), 2,962.0 and 3,133.7 (ops_probe `probe_gets`, `probe_scans`).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let mut walk = self.clone();
        let item = walk.property();
        *self = walk;
        if item.is_none() {
            // Malformed: stop for good rather than resume mid-value.
            self.values = Reader(&[]);
        }
        item
    }
}

/// Reads the encoding front to back.
#[derive(Clone)]
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    #[inline(always)]
    fn len(&mut self) -> Option<usize> {
        usize::try_from(u32::from_le_bytes(self.array()?)).ok()
    }

    /// An instant written by [`put_unix_time`] (the header's timestamp).
    fn unix_time(&mut self) -> Option<DateTime<Utc>> {
        let secs = i64::from_le_bytes(self.array()?);
        let nanos = u32::from_le_bytes(self.array()?);
        DateTime::from_timestamp(secs, nanos)
    }

    /// A DateTime property's value, written by [`datetime_bytes`]: its 16 bytes taken with one
    /// check of the room left, then cut into its four numbers (a take of each number checked
    /// the room four times: 27 instructions more per read, a typed get 2,982.0 rather than
    /// 2,955.0, ops_probe `probe_gets`).
    fn datetime(&mut self) -> Option<DateTime<Utc>> {
        let bytes: [u8; 16] = self.array()?;
        let ([year, day, second, nanos], []) = bytes.as_chunks::<4>() else {
            return None;
        };
        let [year, day, second, nanos] = [year, day, second, nanos].map(|n| u32::from_le_bytes(*n));
        let year = year.cast_signed();
        let date = NaiveDate::from_yo_opt(year, day)?;
        let time = NaiveTime::from_num_seconds_from_midnight_opt(second, nanos)?;
        Some(date.and_time(time).and_utc())
    }
}

/// The custom properties' share of a row's text and value sections, in bytes, summed one
/// property at a time by a walk of the entity (see [`Row::sized`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RowSize {
    text: usize,
    values: usize,
}

impl<N: ViewName + ?Sized> FieldSink<N> for RowSize {
    // Inlined into the walks that sum it (`Row::new`, the check of `Put::new`), where the call
    // would cost as much as the sums.
    #[inline(always)]
    fn property(&mut self, name: &N, value: ValueRef<'_>) {
        self.text += name.text().len() + text_size(value);
        self.values += RECORD_START + value_size(value);
    }
}

/// The sink that writes a row's custom properties: each name (and a String's text) to the
/// text section, each value's record to the value section.
///
/// A typed value's walk is compiled in the crate that derives the type (its `write_through`
/// is generic), so what this sink and [`RowSize`] reach (`Writer::put`, the sizes and bytes of
/// a value) is `#[inline]`: as calls across crates they cost a typed insert about 580
/// instructions, with the entity rules' helpers (ops_probe `probe_inserts`).
struct RowEncoder<'a> {
    text: Writer<'a>,
    values: Writer<'a>,
}

impl<N: ViewName + ?Sized> FieldSink<N> for RowEncoder<'_> {
    // Inlined into the walk (every write encodes every property), as `put_value` is.
    #[inline(always)]
    fn property(&mut self, name: &N, value: ValueRef<'_>) {
        let name = name.text().as_bytes();
        self.text.put(name);
        put_value(&mut self.text, &mut self.values, name.len(), value);
    }
}

/// Writes a section front to back. Sections are sized exactly by [`Row::new`]; a write that
/// did not fit would be dropped (and read back as missing data), never panic.
struct Writer<'a>(&'a mut [u8]);

impl Writer<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let rest = std::mem::take(&mut self.0);
        if let Some((head, tail)) = rest.split_at_mut_checked(bytes.len()) {
            copy_bytes(head, bytes);
            self.0 = tail;
        }
    }

    #[inline]
    fn len(&mut self, len: usize) {
        self.put(&len_bytes(len));
    }

    /// Writes the start of a value's record, its name's length and `tag`, then `bytes`: the
    /// room for the three checked once (a typed insert of eight properties cost 101 fewer
    /// instructions than with a check for each, an untyped one 85: ops_probe `probe_inserts`,
    /// `probe_engine_inserts`).
    // Always inlined into `put_value`'s arms, where `bytes` has a constant length.
    #[inline(always)]
    fn record(&mut self, name_len: usize, tag: u8, bytes: &[u8]) {
        let rest = std::mem::take(&mut self.0);
        if let Some((head, tail)) = rest.split_at_mut_checked(RECORD_START + bytes.len())
            && let Some((name_len_at, after)) = head.split_first_chunk_mut::<4>()
            && let Some((tag_at, value_at)) = after.split_first_mut()
        {
            *name_len_at = len_bytes(name_len);
            *tag_at = tag;
            value_at.copy_from_slice(bytes);
            self.0 = tail;
        }
    }
}

/// Copies `src` into `dst`, of the same length. Most of a row's pieces are short (its keys,
/// each property's name): up to 16 bytes they are copied as their first and last 1, 2, 4 or 8
/// bytes, two moves that overlap or meet, instead of a call to `memcpy`, which costs about 20
/// instructions however few the bytes. A typed insert of the bench `Customer` (ten such pieces)
/// cost 126 instructions more through `copy_from_slice`, an untyped engine insert 175 more
/// (ops_probe `probe_inserts`, `probe_engine_inserts`).
#[inline]
fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    // Longest first: a long piece (a String's text, the ETag) pays one comparison before its
    // `memcpy`, a key two, a name at most four.
    let len = src.len();
    if len > 16 {
        dst.copy_from_slice(src);
    } else if len >= 8 {
        copy_ends::<8>(dst, src);
    } else if len >= 4 {
        copy_ends::<4>(dst, src);
    } else if len >= 2 {
        copy_ends::<2>(dst, src);
    } else {
        copy_ends::<1>(dst, src);
    }
}

/// Copies the first and the last `N` bytes of `src` into `dst`, of the same length: all of it
/// when `N <= len <= 2 * N`.
#[inline(always)]
fn copy_ends<const N: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(to), Some(from)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
        *to = *from;
    }
    if let (Some(to), Some(from)) = (dst.last_chunk_mut::<N>(), src.last_chunk::<N>()) {
        *to = *from;
    }
}

/// Bytes of a value's record before its value: the name's length and the type tag.
const RECORD_START: usize = 4 + 1;

/// A length as the row stores it.
#[inline]
fn len_bytes(len: usize) -> [u8; 4] {
    // Lengths are bounded by the entity limits (1 MiB), far below `u32::MAX`.
    u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes()
}

/// Bytes a value takes in the text section: a String's text.
#[inline]
fn text_size(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Str(s) => s.len(),
        _ => 0,
    }
}

/// Bytes a value takes in the value section after its name length and tag.
#[inline]
fn value_size(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Str(_) => 4,
        ValueRef::Binary(b) => 4 + b.len(),
        ValueRef::Int32(_) => 4,
        ValueRef::Int64(_) | ValueRef::Double(_) => 8,
        ValueRef::Boolean(_) => 1,
        ValueRef::DateTime(_) | ValueRef::Guid(_) => 16,
    }
}

/// A DateTime property's value as the row stores it: the fields chrono holds it in, its year
/// (`i32`), day of the year, second of the day and nanosecond (`u32`s; a leap second's
/// nanosecond is past 10^9). Read back ([`Reader::datetime`]), they make the date from its
/// year and day; Unix time (as the header's timestamp is kept) makes it from a day number, a
/// walk over the calendar's 400-year cycle: 127 instructions a read against 97 (callgrind; 70
/// since the read takes the 16 bytes with one check), and a write had to count the days too.
#[inline]
fn datetime_bytes(t: DateTime<Utc>) -> [u8; 16] {
    let (date, time) = (t.naive_utc().date(), t.naive_utc().time());
    let mut bytes = [0; 16];
    let (year, fields) = bytes.split_at_mut(4);
    year.copy_from_slice(&date.year().to_le_bytes());
    let numbers = [date.ordinal(), time.num_seconds_from_midnight(), time.nanosecond()];
    for (at, number) in fields.chunks_exact_mut(4).zip(numbers) {
        at.copy_from_slice(&number.to_le_bytes());
    }
    bytes
}

/// Writes an instant as seconds and nanoseconds since the Unix epoch.
fn put_unix_time(out: &mut Writer<'_>, time: (i64, u32)) {
    out.put(&unix_time_bytes(time));
}

/// An instant as the row stores it: seconds and nanoseconds since the Unix epoch.
fn unix_time_bytes((secs, nanos): (i64, u32)) -> [u8; 12] {
    let mut bytes = [0; 12];
    let (secs_at, nanos_at) = bytes.split_at_mut(8);
    secs_at.copy_from_slice(&secs.to_le_bytes());
    nanos_at.copy_from_slice(&nanos.to_le_bytes());
    bytes
}

/// Writes a value's record to `values` (the length of its property's name, its tag, its
/// bytes), a String's text to `text`.
// Inlined into the row encoder's per-property step, where the call cost about as much as the
// writes (every write encodes every value); as a call of its own it was not inlined.
#[inline(always)]
fn put_value(text: &mut Writer<'_>, values: &mut Writer<'_>, name_len: usize, value: ValueRef<'_>) {
    match value {
        ValueRef::Str(s) => {
            values.record(name_len, STRING, &len_bytes(s.len()));
            text.put(s.as_bytes());
        }
        ValueRef::Int32(i) => values.record(name_len, INT32, &i.to_le_bytes()),
        ValueRef::Int64(i) => values.record(name_len, INT64, &i.to_le_bytes()),
        ValueRef::Double(d) => values.record(name_len, DOUBLE, &d.to_bits().to_le_bytes()),
        ValueRef::Boolean(b) => values.record(name_len, BOOLEAN, &[u8::from(b)]),
        ValueRef::DateTime(t) => values.record(name_len, DATETIME, &datetime_bytes(t)),
        ValueRef::Guid(g) => values.record(name_len, GUID, g.as_bytes()),
        ValueRef::Binary(b) => {
            values.record(name_len, BINARY, &len_bytes(b.len()));
            values.put(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{CompareOp, Compiled, Filter};
    use proptest::prelude::*;

    #[test]
    fn short_and_long_pieces_are_copied_whole_and_alone() {
        // Every length on both sides of each width the short copies switch at (1, 2, 4, 8,
        // 16), written between other pieces: each lands whole, and touches no byte beyond it.
        for len in 0..=40 {
            let piece: Vec<u8> = (1..=len).map(|b| b as u8).collect();
            let mut buffer = vec![0xAA; len + 6];
            let mut writer = Writer(&mut buffer);
            writer.put(&[0xBB; 3]);
            writer.put(&piece);
            assert_eq!(writer.0.len(), 3, "{len} bytes taken");
            let expected: Vec<u8> = [&[0xBB; 3][..], &piece, &[0xAA; 3]].concat();
            assert_eq!(buffer, expected, "{len} bytes");
        }
    }

    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            ".{0,12}".prop_map(Value::String),
            // Long enough that a row holding one is read as a long row (`RowReader::str_at`).
            "[a-zé ]{1000,1500}".prop_map(Value::String),
            any::<i32>().prop_map(Value::Int32),
            any::<i64>().prop_map(Value::Int64),
            any::<f64>().prop_map(Value::Double),
            Just(Value::Double(f64::NAN)),
            any::<bool>().prop_map(Value::Boolean),
            (-11_644_473_600i64..253_402_300_800, 0u32..10_000_000).prop_map(|(s, t)| {
                Value::DateTime(DateTime::from_timestamp(s, t * 100).expect("in range"))
            }),
            any::<u128>().prop_map(|g| Value::Guid(Uuid::from_u128(g))),
            proptest::collection::vec(any::<u8>(), 0..12).prop_map(Value::Binary),
        ]
    }

    fn any_entity() -> impl Strategy<Value = Entity> {
        (
            ".{0,8}",
            ".{0,8}",
            proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_é]{0,6}", any_value(), 0..10),
        )
            .prop_map(|(pk, rk, properties)| Entity {
                partition_key: pk,
                row_key: rk,
                timestamp: None,
                etag: None,
                properties,
            })
    }

    fn stamp(secs: i64) -> (DateTime<Utc>, ETag) {
        let t = DateTime::from_timestamp(secs, 1_234_500).expect("valid instant");
        (t, ETag::from_timestamp(t))
    }

    proptest! {
        #[test]
        fn decoding_gives_back_the_stored_entity(entity in any_entity(), secs in 0i64..4_000_000_000) {
            let (t, etag) = stamp(secs);
            let row = Row::new(&entity, t.into(), &etag);
            let expected = Entity { timestamp: Some(t), etag: Some(etag.clone()), ..entity.clone() };
            prop_assert_eq!(row.to_entity(None), expected);
            prop_assert_eq!(row.partition_key(), entity.partition_key.as_str());
            prop_assert_eq!(row.row_key(), entity.row_key.as_str());
            prop_assert_eq!(row.etag(), etag.as_str());
            // The filter reads every property as it reads the entity's.
            for (name, value) in &entity.properties {
                let on_row = Source::custom(&row.source(), name).map(ValueRef::to_value);
                prop_assert_eq!(on_row.as_ref(), Some(value));
            }
            prop_assert!(Source::custom(&row.source(), "Absent").is_none());
        }

        #[test]
        fn select_keeps_exactly_the_listed_properties(entity in any_entity(), pick in any::<u16>()) {
            let (t, etag) = stamp(1);
            let names: Vec<String> = entity
                .properties
                .keys()
                .enumerate()
                .filter(|(i, _)| pick & (1 << i) != 0)
                .map(|(_, n)| n.clone())
                .chain(["Missing".to_owned()])
                .collect();
            // Unsorted, with duplicates, as a caller may send it.
            let names: Vec<String> = names.iter().rev().chain(&names).cloned().collect();
            let select = Select::new(names.clone()).expect("entity property names are valid");
            let projected = Row::new(&entity, t.into(), &etag).to_entity(Some(&select));
            let mut expected = entity.properties.clone();
            expected.retain(|name, _| names.contains(name));
            prop_assert_eq!(projected.properties, expected);
            prop_assert_eq!(projected.partition_key, entity.partition_key);
        }

        #[test]
        fn the_generic_entity_is_the_same_built_whole_or_from_a_readers_parts(
            entity in any_entity(),
            pick in any::<u16>(),
        ) {
            // Untyped queries and gets build it whole (`Decoder::ENTITY`); a decoder without a
            // row reader gets the parts, which `from_parts` may turn into it.
            let (t, etag) = stamp(1);
            let row = Row::new(&entity, t.into(), &etag);
            let select = some_select(&entity, pick);
            let whole = row.decode(select.as_ref(), Decoder::ENTITY).expect("the generic decoder never fails");
            prop_assert_eq!(&whole, &row.read(select.as_ref(), &PropertySlots::NONE).into_entity());
            prop_assert_eq!(whole, row.to_entity(select.as_ref()));
        }
    }

    /// A `$select` of the entity's names picked by the bits of `pick` (bit 15: none at all),
    /// with names the entity does not have.
    fn some_select(entity: &Entity, pick: u16) -> Option<Select> {
        let names = entity.properties.keys().enumerate().filter(|(i, _)| pick & (1 << (i % 15)) != 0);
        let names = names.map(|(_, n)| n.clone()).chain(["Missing".to_owned(), "zz".to_owned()]).collect();
        (pick & (1 << 15) == 0).then(|| Select::new(names).expect("entity property names are valid"))
    }

    /// Slots as the derive makes them (one static, names ascending), of names the property
    /// tests give some entities.
    static SLOTS: PropertySlots = PropertySlots {
        names: &["A", "B", "Missing", "N", "zz"],
        slot: |name| match name {
            "A" => Some(0),
            "B" => Some(1),
            "Missing" => Some(2),
            "N" => Some(3),
            "zz" => Some(4),
            _ => None,
        },
    };

    /// The same slots at another address: a projection for [`SLOTS`] cannot tell them apart by
    /// number, so a take with them goes by name.
    const OTHER_SLOTS: PropertySlots = PropertySlots { names: SLOTS.names, slot: SLOTS.slot };

    /// No select, no slots.
    fn everything() -> Projection<'static> {
        Projection::new(None, &PropertySlots::NONE)
    }

    /// How a property test's reader takes a name.
    #[derive(Debug, Clone, Copy)]
    enum Take {
        /// By its name alone.
        Name,
        /// By its number among [`SLOTS`] (`usize::MAX` for a name without one, as the derive
        /// numbers it).
        Slot,
        /// By its number among [`OTHER_SLOTS`].
        OtherSlot,
        /// By its number among [`SLOTS`], lent to a field that stores the EDM type given, as a
        /// derived decoder takes it (whatever type the property holds).
        Lent(EdmType),
        /// As [`Lent`](Self::Lent), to a field of the type the property holds (of the one
        /// given when the row has no such property): what a derived decoder's takes nearly
        /// always are, read straight when the property is the next one (`take_next`).
        LentAsStored(EdmType),
    }

    /// Takes `name` from `reader` as `how` says; `stored` is the type of the property `name`
    /// in the row, if it has one.
    fn take(reader: &mut RowReader<'_>, how: Take, name: &str, stored: Option<EdmType>) -> Option<Value> {
        let slot = SLOTS.names.iter().position(|n| *n == name).unwrap_or(usize::MAX);
        let lent = |reader: &mut RowReader<'_>, expected| match reader
            .take_slot_lent(&SLOTS, slot, name, expected)
        {
            Taken::Lent(value) => value.map(ValueRef::to_value),
            Taken::Owned(value) => value,
        };
        match how {
            Take::Name => reader.take(name),
            Take::Slot => reader.take_slot(&SLOTS, slot, name),
            Take::OtherSlot => reader.take_slot(&OTHER_SLOTS, slot, name),
            Take::Lent(expected) => lent(reader, expected),
            Take::LentAsStored(otherwise) => lent(reader, stored.unwrap_or(otherwise)),
        }
    }

    /// Every EDM type, as a field may expect it.
    fn any_edm_type() -> impl Strategy<Value = EdmType> {
        prop::sample::select(EdmType::EVERY.as_slice())
    }

    proptest! {
        #[test]
        fn a_reader_reads_what_a_read_lists_whatever_the_order_of_its_takes(
            mut entity in any_entity(),
            slotted in proptest::collection::vec(prop::option::of(any_value()), SLOTS.names.len()),
            pick in any::<u16>(),
            order in proptest::collection::vec(
                (
                    any::<prop::sample::Index>(),
                    prop_oneof![
                        Just(Take::Name),
                        Just(Take::Slot),
                        Just(Take::OtherSlot),
                        any_edm_type().prop_map(Take::Lent),
                        any_edm_type().prop_map(Take::LentAsStored),
                    ],
                ),
                0..24,
            ),
            peeks in proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
        ) {
            // Some of the slots' names as properties of the entity, of any type.
            for (name, value) in SLOTS.names.iter().zip(slotted) {
                entity.properties.extend(value.map(|value| ((*name).to_owned(), value)));
            }
            let (t, etag) = stamp(7);
            let row = Row::new(&entity, t.into(), &etag);
            let select = some_select(&entity, pick);
            let expected = row.to_entity(select.as_ref());
            let projection = Projection::new(select.as_ref(), &SLOTS);
            // The entity's names, some absent ones (below, between and above them), and
            // repeats: takes come in any order, ascending runs and restarts alike.
            let names: Vec<&str> = entity
                .properties
                .keys()
                .map(String::as_str)
                .chain(["A", "AB", "Missing", "zz"])
                .collect();
            let mut reader = RowReader::new(&row, &projection);
            let mut taken = std::collections::BTreeSet::new();
            for (step, (at, how)) in order.iter().enumerate() {
                let name = *at.get(&names);
                // A decoder takes each name at most once (the `EntityReader::take` contract).
                if taken.insert(name) {
                    let stored = entity.properties.get(name).map(Value::edm_type);
                    let found = take(&mut reader, *how, name, stored);
                    prop_assert_eq!(found, expected.properties.get(name).cloned(), "take {} {:?}", name, how);
                }
                // A peek finds any name, taken or not, and leaves the cursor where it was.
                if let Some(peek) = peeks.get(step) {
                    let name = *peek.get(&names);
                    prop_assert_eq!(reader.peek(name), expected.properties.get(name).cloned(), "peek {}", name);
                }
            }
            prop_assert_eq!(EntityReader::partition_key(&reader), expected.partition_key.as_str());
            prop_assert_eq!(EntityReader::row_key(&reader), expected.row_key.as_str());
            prop_assert_eq!(EntityReader::timestamp(&reader), expected.timestamp);
            prop_assert_eq!(reader.take_etag(), expected.etag.clone());
            prop_assert_eq!(RowReader::new(&row, &projection).take_entity(), expected);
        }
    }

    #[test]
    fn a_projection_admits_slots_past_its_bits_by_name() {
        // More slots than the projection has bits: names `p000` to `p299`, ascending.
        let names: Vec<&'static str> = (0..300).map(|i| &*format!("p{i:03}").leak()).collect();
        let slots: &'static PropertySlots =
            Box::leak(Box::new(PropertySlots { names: names.leak(), slot: |_| None }));
        let (t, etag) = stamp(1);
        let entity =
            Entity::new("p", "r").with("p010", 10).with("p011", 11).with("p290", 290).with("p291", 291);
        let row = Row::new(&entity, t.into(), &etag);
        let select = Select::new(vec!["p010".to_owned(), "p290".to_owned()]).expect("a valid select");
        let projection = Projection::new(Some(&select), slots);
        let mut reader = RowReader::new(&row, &projection);
        let taken = [(10, "p010"), (11, "p011"), (290, "p290"), (291, "p291")]
            .map(|(slot, name)| reader.take_slot(slots, slot, name));
        assert_eq!(taken, [Some(Value::Int32(10)), None, Some(Value::Int32(290)), None]);
    }
    proptest! {
        #[test]
        fn a_view_shows_what_a_read_returns(entity in any_entity(), pick in any::<u16>()) {
            let (t, etag) = stamp(3);
            let row = Row::new(&entity, t.into(), &etag);
            let select = some_select(&entity, pick);
            let expected = row.to_entity(select.as_ref());
            let view = RowView::new(&row, select.as_ref());
            let properties: Vec<(String, Value)> =
                view.properties().map(|(name, value)| (name.to_owned(), value.to_value())).collect();
            let expected_properties: Vec<(String, Value)> = expected.properties.clone().into_iter().collect();
            prop_assert_eq!(properties, expected_properties);
            prop_assert_eq!(view.partition_key(), expected.partition_key.as_str());
            prop_assert_eq!(view.row_key(), expected.row_key.as_str());
            prop_assert_eq!(view.timestamp(), expected.timestamp);
            prop_assert_eq!(Some(view.etag()), expected.etag.as_ref().map(ETag::as_str));
        }
    }

    #[test]
    fn a_reader_starts_over_for_a_name_it_has_passed() {
        let (t, etag) = stamp(1);
        let entity = Entity::new("p", "r").with("A", 1).with("B", 2).with("C", 3);
        let row = Row::new(&entity, t.into(), &etag);
        let everything = everything();
        let mut reader = RowReader::new(&row, &everything);
        assert_eq!(reader.take("C"), Some(Value::Int32(3)));
        assert_eq!(reader.take("A"), Some(Value::Int32(1)), "before the cursor");
        assert_eq!(reader.take("AB"), None, "between two names");
        assert_eq!(reader.take("B"), Some(Value::Int32(2)), "after a name not found");
        // Only the listed names pass the select, wherever the cursor is.
        let select = Select::new(vec!["B".to_owned()]).expect("a valid select");
        let projection = Projection::new(Some(&select), &SLOTS);
        let mut reader = RowReader::new(&row, &projection);
        assert_eq!(
            (reader.take("C"), reader.take("B"), reader.take("A")),
            (None, Some(Value::Int32(2)), None)
        );
    }

    #[test]
    fn a_reader_starts_over_at_most_once_per_take() {
        // The empty name is below every other and never passed ahead of them: a take of it
        // finds no property, however often the reader has started over.
        let (t, etag) = stamp(1);
        let row = Row::new(&Entity::new("p", "r").with("A", 1), t.into(), &etag);
        let everything = everything();
        let mut reader = RowReader::new(&row, &everything);
        assert_eq!((reader.take(""), reader.take("A"), reader.take("")), (None, Some(Value::Int32(1)), None));
    }

    #[test]
    fn a_take_from_the_cursor_checks_the_name_and_the_type_not_only_their_sizes() {
        // Each take finds at the cursor a property of the name's length and of the size of the
        // type it expects: "A" stored as another type of that size, then "N" under another
        // name. Neither may be read as the take's own.
        let (t, etag) = stamp(1);
        let row = Row::new(&Entity::new("p", "r").with("A", 1_i64).with("N", 7), t.into(), &etag);
        let projection = Projection::new(None, &SLOTS);
        let mut reader = RowReader::new(&row, &projection);
        let taken = [
            take(&mut reader, Take::Lent(EdmType::Double), "A", Some(EdmType::Int64)),
            take(&mut reader, Take::Lent(EdmType::Int32), "B", None),
            take(&mut reader, Take::Lent(EdmType::Int32), "N", Some(EdmType::Int32)),
        ];
        assert_eq!(taken, [Some(Value::Int64(1)), None, Some(Value::Int32(7))]);
    }

    #[test]
    fn a_read_puts_each_property_with_a_slot_in_it_and_lists_the_others() {
        const SLOTS: PropertySlots = PropertySlots {
            names: &["B", "N"],
            slot: |name| match name {
                "B" => Some(0),
                "N" => Some(1),
                _ => None,
            },
        };
        let (t, etag) = stamp(1);
        let entity = Entity::new("p", "r").with("A", 1).with("N", 7).with("Z", "z");
        let row = Row::new(&entity, t.into(), &etag);
        let listed = |names: &[&'static str]| {
            names.iter().map(|n| (Cow::Borrowed(*n), entity.properties.get(*n).cloned())).collect()
        };
        let expected =
            PropertyList::from_slots(&SLOTS, vec![None, Some(Value::Int32(7))], listed(&["A", "Z"]));
        assert_eq!(Some(row.read(None, &SLOTS).properties), expected);
        // Projected first: a slot of a property left out stays empty.
        let select = Select::new(vec!["Z".to_owned()]).expect("a valid select");
        let expected = PropertyList::from_slots(&SLOTS, vec![None, None], listed(&["Z"]));
        assert_eq!(Some(row.read(Some(&select), &SLOTS).properties), expected);
    }

    #[test]
    fn a_malformed_buffer_reads_as_missing_data() {
        let (t, etag) = stamp(1);
        let entity = Entity::new("p", "r").with("Name", "value").with("N", 7);
        let Row(full) = Row::new(&entity, t.into(), &etag);
        for cut in 0..full.len() {
            let row = Row(Arc::from(&full[..cut]));
            // Every prefix decodes to something, without panicking.
            let _ = (row.to_entity(None), Source::custom(&row.source(), "N"), row.timestamp(), row.touch());
            let view = RowView::new(&row, None);
            let _ = (view.properties().count(), view.partition_key(), view.etag(), view.timestamp());
            let everything = everything();
            let mut reader = RowReader::new(&row, &everything);
            let _ = (reader.take("N"), reader.take("Name"), reader.take("N"), reader.peek("Name"));
            let _ = EntityReader::partition_key(&reader).len() + EntityReader::row_key(&reader).len();
            let _ = reader.take_etag();
        }
        // Taken by slot and lent as a derived decoder takes them, each the next property and of
        // its field's type: read straight (`take_next`).
        let slotted = Row::new(&Entity::new("p", "r").with("A", "value").with("N", 7), t.into(), &etag);
        let projection = Projection::new(None, &SLOTS);
        for cut in 0..slotted.0.len() {
            let row = Row(Arc::from(&slotted.0[..cut]));
            let mut reader = RowReader::new(&row, &projection);
            let a = take(&mut reader, Take::Lent(EdmType::String), "A", Some(EdmType::String));
            let n = take(&mut reader, Take::Lent(EdmType::Int32), "N", Some(EdmType::Int32));
            // A prefix holds some of the properties, each whole, or none.
            assert!(matches!((&a, &n), (Some(_), Some(_)) | (Some(_), None) | (None, None)), "{a:?} {n:?}");
        }
        let mut bad_tag = full.to_vec();
        // The value section follows the text "p", "r", "N", "Name", "value" and the ETag; it
        // starts with the name length of "N", then its tag.
        let tag_at = HEADER + 2 + 4 + 5 + 1 + etag.as_str().len() + 4;
        bad_tag[tag_at] = 99;
        let row = Row(Arc::from(bad_tag));
        assert!(Source::custom(&row.source(), "N").is_none());
        assert!(row.to_entity(None).properties.is_empty());
        assert_eq!(RowReader::new(&row, &everything()).take("Name"), None, "nothing after a bad tag is read");
    }

    /// The DateTime property `t` as a stored row reads it back.
    fn read_back(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (stamp, etag) = stamp(1);
        let row = Row::new(&Entity::new("p", "r").with("T", Value::DateTime(t)), stamp.into(), &etag);
        match Source::custom(&row.source(), "T")? {
            ValueRef::DateTime(read) => Some(read),
            _ => None,
        }
    }

    /// What a row stored as Unix seconds and nanoseconds read back: the instant itself.
    fn as_unix_time(t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(t.timestamp(), t.timestamp_subsec_nanos())
    }

    /// Any instant chrono holds, leap seconds (nanoseconds past 10^9 in a minute's last
    /// second) included.
    fn any_instant() -> impl Strategy<Value = DateTime<Utc>> {
        let (min, max) = (DateTime::<Utc>::MIN_UTC.timestamp(), DateTime::<Utc>::MAX_UTC.timestamp());
        prop_oneof![
            (min..=max, 0u32..1_000_000_000),
            (min / 60..=max / 60, 1_000_000_000u32..2_000_000_000)
                .prop_map(|(minute, n)| (minute * 60 + 59, n)),
        ]
        .prop_filter_map("outside chrono's range", |(secs, nanos)| DateTime::from_timestamp(secs, nanos))
    }

    proptest! {
        /// A DateTime is stored as its calendar fields (`datetime_bytes`), no longer as Unix
        /// time: it reads back as the Unix time did, exactly, over chrono's whole range.
        #[test]
        fn a_datetime_reads_back_as_its_unix_time_did(t in any_instant()) {
            prop_assert_eq!(read_back(t), as_unix_time(t));
            prop_assert_eq!(read_back(t), Some(t));
        }
    }

    #[test]
    fn a_datetime_reads_back_at_the_ends_of_the_ranges() {
        let instant = |text: &str| DateTime::parse_from_rfc3339(text).expect("an instant").to_utc();
        let ends = [
            DateTime::<Utc>::MIN_UTC,
            DateTime::<Utc>::MAX_UTC,
            // The service's range, and leap years' last days around it.
            instant("1601-01-01T00:00:00Z"),
            instant("9999-12-31T23:59:59.9999999Z"),
            instant("1600-12-31T23:59:59.9999999Z"),
            instant("2000-12-31T12:00:00Z"),
            instant("1900-03-01T00:00:00Z"),
            DateTime::UNIX_EPOCH,
            DateTime::from_timestamp(1_483_228_799, 1_500_000_000).expect("a leap second"),
        ];
        for t in ends {
            assert_eq!(read_back(t), as_unix_time(t), "{t:?}");
            assert_eq!(read_back(t), Some(t), "{t:?}");
        }
    }

    /// Literals and stored values of the types a filter meets most, with the edge cases of
    /// the comparison rules: NaN and -0.0, and DateTimes a tick either side of `around`.
    fn filter_value(around: DateTime<Utc>) -> impl Strategy<Value = Value> {
        let tick = chrono::TimeDelta::nanoseconds(100);
        prop_oneof![
            prop::sample::select(vec!["", "a", "b", "m"]).prop_map(Value::from),
            (0..3i32).prop_map(Value::Int32),
            (0..3i64).prop_map(Value::Int64),
            prop::sample::select(vec![0.0, -0.0, 1.5, f64::NAN]).prop_map(Value::Double),
            any::<bool>().prop_map(Value::Boolean),
            prop::sample::select(vec![around - tick, around, around + tick]).prop_map(Value::DateTime),
        ]
    }

    /// Filters over the three system properties, two custom ones (`A`, and `B`, often a
    /// Boolean) and one no entity has, joined by `and`, `or` and `not`.
    fn any_filter(around: DateTime<Utc>) -> impl Strategy<Value = Filter> {
        let names = prop::sample::select(vec!["PartitionKey", "RowKey", "Timestamp", "A", "B", "Absent"]);
        let op = prop::sample::select(CompareOp::ALL.to_vec());
        let leaf = prop_oneof![
            3 => (names.clone(), op, filter_value(around)).prop_map(|(name, op, v)| Filter::compare(name, op, v)),
            1 => names.prop_map(Filter::property),
        ];
        leaf.prop_recursive(4, 16, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.and(b)),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
                inner.prop_map(|a| !a),
            ]
        })
    }

    /// Entities with the keys and the custom properties [`any_filter`] names (`Absent`
    /// excepted), each possibly missing.
    fn filtered_entity(around: DateTime<Utc>) -> impl Strategy<Value = Entity> {
        let key = || prop::sample::select(vec!["", "a", "b", "m"]);
        let b = prop_oneof![any::<bool>().prop_map(Value::Boolean), filter_value(around)];
        (key(), key(), prop::option::of(filter_value(around)), prop::option::of(b)).prop_map(
            |(pk, rk, a, b)| {
                let mut entity = Entity::new(pk, rk);
                entity.properties.extend(a.map(|v| ("A".to_owned(), v)));
                entity.properties.extend(b.map(|v| ("B".to_owned(), v)));
                entity
            },
        )
    }

    proptest! {
        /// The engine's form of a filter, on a stored row, decides what [`Filter::matches`]
        /// decides on the entity the row holds: system names resolved, each literal kept. The
        /// rows are stamped a second before, at and after the instant the DateTimes surround.
        #[test]
        fn a_compiled_filter_on_a_row_matches_as_the_filter_on_its_entity(
            filter in any_filter(stamp(1).0),
            entity in filtered_entity(stamp(1).0),
            secs in 0i64..3,
        ) {
            let (t, etag) = stamp(secs);
            let row = Row::new(&entity, t.into(), &etag);
            let stored = row.to_entity(None);
            let compiled = Compiled::new(&filter);
            prop_assert_eq!(compiled.matches(&row.source()), filter.matches(&stored));
            prop_assert_eq!(compiled.matches(&stored), filter.matches(&stored));
        }
    }
}
