//! The [`TableEntity`] trait: a Rust type that is stored as table entities.

use crate::entity::{Entity, EntityKey};
use crate::error::Result;

use super::index::IndexDef;

/// The property holding the discriminator of `entity_type = "..."` (an `Edm.String`).
pub const ENTITY_TYPE_PROPERTY: &str = "EntityType";
/// The property holding `version = N` (an `Edm.Int32`).
pub const ENTITY_VERSION_PROPERTY: &str = "EntityVersion";

/// A Rust type stored as table entities, usually through `#[derive(TableEntity)]`.
///
/// DERIVE_DOCS
pub trait TableEntity: Sized {
    /// The discriminator written to [`ENTITY_TYPE_PROPERTY`] and required when reading
    /// (`entity_type = "..."`); `None` when the type has none.
    const ENTITY_TYPE: Option<&'static str> = None;

    /// The version written to [`ENTITY_VERSION_PROPERTY`] and required, exactly, when reading
    /// (`version = N`).
    const VERSION: Option<i32> = None;

    /// The entity to write: keys, discriminator and every stored property (`None` fields are
    /// left out). Fails when a key cannot be built or a JSON field cannot be serialised.
    fn to_entity(&self) -> Result<Entity>;

    /// The value of a stored entity. Fails, naming the property, when a property is missing for
    /// a non-`Option` field or has another EDM type, when the discriminator does not match, or
    /// when a key does not match its template.
    fn from_entity(entity: Entity) -> Result<Self>;

    /// The `PartitionKey` built from the partition key template.
    fn partition_key(&self) -> Result<String>;

    /// The `RowKey` built from the row key template.
    fn row_key(&self) -> Result<String>;

    /// Both keys.
    fn entity_key(&self) -> Result<EntityKey> {
        Ok(EntityKey::new(self.partition_key()?, self.row_key()?))
    }

    /// The properties to request with `$select` so that [`from_entity`](Self::from_entity)
    /// has all it reads: `PartitionKey`, `RowKey`, `Timestamp` when a field holds it, the
    /// discriminator and every stored field. `None` asks for every property (a heterogeneous
    /// enum does). A struct with a subset of another's fields is thereby a projection.
    fn select() -> Option<&'static [&'static str]> {
        None
    }

    /// The declared secondary indexes and index entities.
    fn indexes() -> &'static [IndexDef] {
        &[]
    }

    /// The key of this entity's row in the index called `index`; `None` when the type has no
    /// index of that name.
    fn index_key(&self, index: &str) -> Result<Option<EntityKey>> {
        let _ = index;
        Ok(None)
    }
}
