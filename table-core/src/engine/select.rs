//! A `$select` list prepared once: checked against the property-name rule and put in the
//! order a row stores its properties, so that a handle reading the same projection again and
//! again (a typed table's point reads) pays for neither on each read.
//!
//! Invariants: a [`Select`] is only made by [`Select::new`], which runs
//! [`validate_select`] (the one implementation of the rule), so every `Select` is valid;
//! `sorted` holds an index into `list` for each distinct name, ascending by the names' bytes;
//! `slot_verdicts`, once set, holds [`Select::admitted_slots`] of the slot set it names.

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use crate::error::Violation;
use crate::typed::PropertySlots;
use crate::validate::validate_select;

/// A checked `$select` list (see the module docs). Cheap to clone: clones share the names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select(Arc<Names>);

#[derive(Debug)]
struct Names {
    /// The names as given, in the caller's order (what a request sends).
    list: Vec<String>,
    /// The same names ascending by bytes, each once, as indexes into `list` (what a row is
    /// matched against; indexes rather than copies, so preparing copies no name).
    sorted: Vec<usize>,
    /// The verdicts on the first slot set the select was worked out for: a select is mostly
    /// prepared for one type (a typed table's point reads), whose reads then skip the names.
    slot_verdicts: OnceLock<(&'static PropertySlots, SlotBits)>,
}

/// Equal names make equal selects, whatever verdicts either has kept.
impl PartialEq for Names {
    fn eq(&self, other: &Names) -> bool {
        self.list == other.list && self.sorted == other.sorted
    }
}

impl Eq for Names {}

/// Slots a select's verdicts cover: a slot beyond (a type with more properties than an entity
/// may have) is matched against the select by name.
pub(crate) const SLOT_BITS: usize = 256;

/// One bit per slot below [`SLOT_BITS`], set when the select admits that slot's property.
pub(crate) type SlotBits = [u64; SLOT_BITS / 64];

impl Select {
    /// Checks `list` ([`validate_select`]: the violation names the first bad entry) and
    /// prepares it. Duplicates and any order are accepted, as in an unprepared list.
    pub fn new(list: Vec<String>) -> Result<Select, Violation> {
        validate_select(&list)?;
        let mut sorted: Vec<usize> = (0..list.len()).collect();
        sorted.sort_unstable_by(|&a, &b| list[a].cmp(&list[b]));
        sorted.dedup_by(|a, b| list[*a] == list[*b]);
        Ok(Select(Arc::new(Names { list, sorted, slot_verdicts: OnceLock::new() })))
    }

    /// The names as given to [`new`](Self::new), in that order.
    pub fn names(&self) -> &[String] {
        &self.0.list
    }

    /// A cursor for matching one row's properties, met in ascending name order.
    pub(crate) fn cursor(&self) -> Selected<'_> {
        Selected { names: &self.0.list, sorted: &self.0.sorted }
    }

    /// For each of `slots` below [`SLOT_BITS`], whether this select lists its property; worked
    /// out by name on the first call, and kept for the slot set of that call.
    // Inlined into `Projection::new` (once per read or page), as LLVM chose to until edits
    // elsewhere in the crate changed its mind: as a call it cost a typed get 13 instructions.
    #[inline]
    pub(crate) fn admitted_slots(&self, slots: &'static PropertySlots) -> SlotBits {
        let work_out = || {
            let mut admitted = [0; SLOT_BITS / 64];
            // Slot names ascend (the slots' invariant), as the cursor needs them to.
            let mut selected = self.cursor();
            for (slot, name) in slots.names.iter().enumerate().take(SLOT_BITS) {
                if selected.admits(name) {
                    admitted[slot / 64] |= 1 << (slot % 64);
                }
            }
            admitted
        };
        match self.0.slot_verdicts.get_or_init(|| (slots, work_out())) {
            (kept, admitted) if std::ptr::eq(*kept, slots) => *admitted,
            _ => work_out(),
        }
    }
}

/// The selected names a row's remaining properties may still match.
pub(crate) struct Selected<'s> {
    names: &'s [String],
    /// Indexes into `names` of the names not yet passed, ascending by name.
    sorted: &'s [usize],
}

impl Selected<'_> {
    /// Whether `name` is selected, given that every later call passes a greater name (a row's
    /// properties are unique and ascending): names below it can never match again and are
    /// dropped.
    pub(crate) fn admits(&mut self, name: &str) -> bool {
        while let Some((&first, rest)) = self.sorted.split_first() {
            match self.names[first].as_str().cmp(name) {
                Ordering::Less => self.sorted = rest,
                Ordering::Equal => {
                    self.sorted = rest;
                    return true;
                }
                Ordering::Greater => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn keeps_the_list_as_given_and_matches_each_name_once_in_row_order() {
        let select = Select::new(names(&["b", "a", "b", "RowKey"])).expect("valid names");
        assert_eq!(select.names(), names(&["b", "a", "b", "RowKey"]));
        let mut cursor = select.cursor();
        let admitted: Vec<bool> = ["RowKey", "a", "aa", "b", "c"].iter().map(|n| cursor.admits(n)).collect();
        assert_eq!(admitted, [true, true, false, true, false]);
    }

    static FIRST: PropertySlots = PropertySlots { names: &["a", "b", "c"], slot: |_| None };
    static SECOND: PropertySlots = PropertySlots { names: &["b", "c", "d"], slot: |_| None };

    #[test]
    fn slot_verdicts_are_kept_for_the_first_slot_set_and_worked_out_for_another() {
        let select = Select::new(names(&["c", "a"])).expect("valid names");
        for _ in 0..2 {
            assert_eq!(select.admitted_slots(&FIRST)[0], 0b101);
            // Another set's verdicts are its own, not the kept ones.
            assert_eq!(select.admitted_slots(&SECOND)[0], 0b010);
        }
        // Kept verdicts do not make two selects of the same names differ.
        assert_eq!(select, Select::new(names(&["c", "a"])).expect("valid names"));
    }

    #[test]
    fn preparing_runs_the_select_rule() {
        let error = Select::new(names(&["ok", "a,RowKey"])).expect_err("a comma is not a name");
        assert!(matches!(error, Violation::SelectEntry { index: 1, .. }), "{error:?}");
    }
}
