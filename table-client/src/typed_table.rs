//! Typed access: a [`TypedTable<T>`] reads and writes `#[derive(TableEntity)]` values, builds
//! their keys from the key templates, and selects exactly the properties `T` reads.

use std::marker::PhantomData;

use table_core::typed::TableEntity;
use table_core::{ETag, EntityKey, IfMatch, Operation, Result, WriteOutcome};

use crate::query::Query;
use crate::table::TableClient;

/// A table holding entities of type `T`. Cheap to clone.
#[derive(Debug)]
pub struct TypedTable<T> {
    table: TableClient,
    _entity: PhantomData<fn() -> T>,
}

impl<T> Clone for TypedTable<T> {
    fn clone(&self) -> Self {
        TypedTable {
            table: self.table.clone(),
            _entity: PhantomData,
        }
    }
}

impl TableClient {
    /// Typed access to this table's entities of type `T`.
    pub fn typed<T: TableEntity>(&self) -> TypedTable<T> {
        TypedTable {
            table: self.clone(),
            _entity: PhantomData,
        }
    }
}

impl<T: TableEntity + Send + 'static> TypedTable<T> {
    /// The untyped client of the same table.
    pub fn untyped(&self) -> &TableClient {
        &self.table
    }

    /// Inserts `value`; `AlreadyExists` if its key is taken. Returns the new ETag.
    pub async fn insert(&self, value: &T) -> Result<ETag> {
        self.table.insert(value.to_entity()?).await
    }

    /// Replaces the stored entity with `value`, if it matches `if_match`.
    pub async fn replace(&self, value: &T, if_match: IfMatch) -> Result<ETag> {
        self.table.replace(value.to_entity()?, if_match).await
    }

    /// Merges `value`'s stored properties into the stored entity, if it matches `if_match`
    /// (`None` fields are left as they are).
    pub async fn merge(&self, value: &T, if_match: IfMatch) -> Result<ETag> {
        self.table.merge(value.to_entity()?, if_match).await
    }

    /// Inserts `value` or replaces whatever has its key.
    pub async fn insert_or_replace(&self, value: &T) -> Result<ETag> {
        self.table.insert_or_replace(value.to_entity()?).await
    }

    /// Inserts `value` or merges it into whatever has its key.
    pub async fn insert_or_merge(&self, value: &T) -> Result<ETag> {
        self.table.insert_or_merge(value.to_entity()?).await
    }

    /// Deletes the entity with `key`, if it matches `if_match`.
    pub async fn delete(&self, key: &EntityKey, if_match: IfMatch) -> Result<()> {
        self.table
            .delete(&key.partition_key, &key.row_key, if_match)
            .await
    }

    /// Deletes the entity with `key` if it exists; returns whether it existed.
    pub async fn delete_if_exists(&self, key: &EntityKey) -> Result<bool> {
        self.table
            .delete_if_exists(&key.partition_key, &key.row_key)
            .await
    }

    /// Reads the entity with `key`; `NotFound` if missing.
    pub async fn get(&self, key: &EntityKey) -> Result<T> {
        let entity = self
            .table
            .get_with_select(
                &key.partition_key,
                &key.row_key,
                select_of::<T>().as_deref(),
            )
            .await?;
        T::from_entity(entity)
    }

    /// Reads the entity with `key`, or `None` if it does not exist.
    pub async fn get_if_exists(&self, key: &EntityKey) -> Result<Option<T>> {
        match self.get(key).await {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() && !crate::table::is_table_missing(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A query returning `T`s, selecting exactly the properties `T` reads.
    pub fn query(&self) -> Query<T> {
        let query = Query::new(self.table.clone(), T::from_entity);
        match select_of::<T>() {
            Some(select) => query.select(select),
            None => query,
        }
    }

    /// Runs one write operation.
    pub async fn execute(&self, operation: Operation) -> Result<WriteOutcome> {
        self.table.execute(operation).await
    }
}

fn select_of<T: TableEntity>() -> Option<Vec<String>> {
    T::select().map(|names| names.iter().map(|s| (*s).to_owned()).collect())
}
