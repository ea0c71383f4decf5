//! The data-series pattern: a fixed-size array (e.g. 24 hourly counters) stored as one
//! property per slot in a single entity, so a whole series is one point read and one slot is
//! updated by a merge that sends only that property, without reading the others.
//!
//! Invariants: slot `i` is the property `<prefix><i>`, the index zero padded to the width of
//! the largest index (`Hour00`..`Hour23`), so property order is slot order; every slot name
//! is a valid property name and the series fits in one entity (at most 252 slots).

use table_core::typed::{Property, PropertyValue};
use table_core::{
    ETag, Entity, EntityKey, Error, MAX_PROPERTIES, Result, SYSTEM_PROPERTIES, Violation,
    validate_property_name,
};

use crate::error;
use crate::table::TableClient;

/// A fixed-size series of values stored as properties `<prefix>00`, `<prefix>01`, ...
///
/// ```rust
/// use table_client::patterns::DataSeries;
/// use table_client::{Entity, EntityKey, TableServiceClient};
///
/// # #[tokio::main]
/// # async fn main() -> table_client::Result<()> {
/// let service = TableServiceClient::from_connection_string("UseEmbeddedEngine=true")?;
/// let table = service.create_table("Counters").await?;
/// // A day of hourly counters in one entity: properties `Hour00` .. `Hour23`.
/// let hours = DataSeries::new("Hour", 24)?;
/// let mut day = Entity::new("logins", "20261122");
/// hours.store(&mut day, &[0i64; 24])?;
/// table.insert(day).await?;
///
/// // One slot changes with a merge that carries only that property.
/// hours.merge_slot(&table, &EntityKey::new("logins", "20261122"), 9, &42i64).await?;
/// let counts: Vec<i64> = hours.load(&table.get("logins", "20261122").await?)?;
/// assert_eq!((counts.len(), counts[9]), (24, 42));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSeries {
    prefix: String,
    slots: usize,
    width: usize,
}

impl DataSeries {
    /// A series of `slots` values named after `prefix` (`DataSeries::new("Hour", 24)` gives
    /// `Hour00`..`Hour23`). Fails for zero slots, more than one entity holds (252), or a prefix
    /// that does not make valid property names.
    pub fn new(prefix: &str, slots: usize) -> Result<Self> {
        let max = MAX_PROPERTIES - SYSTEM_PROPERTIES;
        if !(1..=max).contains(&slots) {
            return Err(error::invalid_input(format!("a data series needs 1 to {max} slots, not {slots}")));
        }
        let series = DataSeries { prefix: prefix.to_owned(), slots, width: (slots - 1).to_string().len() };
        // The longest name is the last slot's; every name shares its prefix and width.
        validate_property_name(&series.name(slots - 1)).map_err(Error::invalid)?;
        Ok(series)
    }

    /// The number of slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    fn name(&self, slot: usize) -> String {
        format!("{}{slot:0width$}", self.prefix, width = self.width)
    }

    /// The property name of slot `slot`; `InvalidInput` past the last slot.
    pub fn slot_name(&self, slot: usize) -> Result<String> {
        if slot >= self.slots {
            return Err(error::invalid_input(format!(
                "slot {slot} is outside the {} slots of the `{}` series",
                self.slots, self.prefix
            )));
        }
        Ok(self.name(slot))
    }

    /// Writes `values` into `entity`, one property per slot (`None` removes the slot's
    /// property). `values` must have exactly one value per slot.
    pub fn store<P: Property>(&self, entity: &mut Entity, values: &[P]) -> Result<()> {
        if values.len() != self.slots {
            return Err(error::invalid_input(format!(
                "the `{}` series has {} slots, {} values were given",
                self.prefix,
                self.slots,
                values.len()
            )));
        }
        for (slot, value) in values.iter().enumerate() {
            let name = self.name(slot);
            match value.to_property() {
                Some(v) => entity.properties.insert(name, v),
                None => entity.properties.remove(&name),
            };
        }
        Ok(())
    }

    /// Reads every slot of `entity`, in slot order. With `P = Option<T>` a missing slot is
    /// `None`; with `P = T` it is an error naming the slot, as is a slot of another type.
    pub fn load<P: Property>(&self, entity: &Entity) -> Result<Vec<P>> {
        (0..self.slots)
            .map(|slot| {
                let name = self.name(slot);
                P::from_property(entity.get(&name).cloned())
                    .map_err(|e| Error::invalid(Violation::Value { property: name, message: e.to_string() }))
            })
            .collect()
    }

    /// Sets one slot of the entity at `key` with an insert-or-merge that carries only that
    /// property: the other slots (and properties) stay as they are, and a missing entity is
    /// created holding just this slot. Returns the new ETag.
    pub async fn merge_slot<V: PropertyValue>(
        &self,
        table: &TableClient,
        key: &EntityKey,
        slot: usize,
        value: &V,
    ) -> Result<ETag> {
        let entity = Entity::new(key.partition_key.clone(), key.row_key.clone())
            .with(self.slot_name(slot)?, value.to_value());
        table.insert_or_merge(entity).await
    }
}

#[cfg(test)]
mod tests {
    use table_core::ErrorKind;

    use super::*;

    #[test]
    fn names_are_padded_to_the_widest_slot() {
        let hours = DataSeries::new("Hour", 24).unwrap();
        assert_eq!(hours.slot_name(0).unwrap(), "Hour00");
        assert_eq!(hours.slot_name(23).unwrap(), "Hour23");
        assert_eq!(hours.slot_name(24).unwrap_err().kind(), ErrorKind::InvalidInput);
        assert_eq!(DataSeries::new("D", 7).unwrap().slot_name(6).unwrap(), "D6");
        assert_eq!(DataSeries::new("M", 252).unwrap().slot_name(7).unwrap(), "M007");
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(DataSeries::new("Hour", 0).is_err());
        assert!(DataSeries::new("Hour", 253).is_err());
        assert!(DataSeries::new("9Hour", 24).is_err());
        assert!(DataSeries::new("Ho-ur", 24).is_err());
    }

    #[test]
    fn stores_and_loads_with_optional_slots() {
        let days = DataSeries::new("Day", 3).unwrap();
        let mut e = Entity::new("p", "r").with("Other", 1);
        days.store(&mut e, &[Some(1i64), None, Some(3)]).unwrap();
        assert_eq!(e.properties.len(), 3);
        assert_eq!(days.load::<Option<i64>>(&e).unwrap(), [Some(1), None, Some(3)]);
        let err = days.load::<i64>(&e).unwrap_err();
        assert!(err.to_string().contains("Day1"), "{err}");
        let err = days.load::<i32>(&e).unwrap_err();
        assert!(err.to_string().contains("Day0"), "{err}");
        assert!(days.store(&mut e, &[1i64]).is_err());
    }
}
