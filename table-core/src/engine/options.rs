//! How an [`Engine`](super::Engine) deviates from the plain service behaviour: page sizes and
//! the service's timing artefacts, off by default so tests stay fast and deterministic.

use std::num::NonZeroUsize;
use std::time::Duration;

/// The service's page limit.
pub const DEFAULT_MAX_PAGE_SIZE: NonZeroUsize = NonZeroUsize::new(1000).expect("1000 is not zero");

/// Options of an [`Engine`](super::Engine): start from `EngineOptions::default()` and chain
/// the setters, which are named after the fields. Limits that must be at least 1 are
/// [`NonZeroUsize`], so a zero never reaches the engine.
///
/// ```
/// use std::num::NonZeroUsize;
/// use table_core::engine::{Engine, EngineOptions};
///
/// let two = NonZeroUsize::new(2).expect("2 is not zero");
/// let engine = Engine::with_options(EngineOptions::default().max_page_size(two));
/// assert_eq!(engine.options().max_page_size.get(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineOptions {
    /// Most entities (and table names) in one page, whatever `$top` says. Default 1000, as the
    /// service.
    pub max_page_size: NonZeroUsize,
    /// When `true`, a page of entities never spans two partitions: it ends where the partition
    /// ends, with a continuation to the next one, and may therefore be empty (as the service
    /// may answer at partition-server boundaries). Default `false`.
    pub split_pages_at_partition_boundaries: bool,
    /// Most rows a query examines for one page (the stand-in for the service's 5 s slice).
    /// When reached, the page ends with a continuation at the next row to examine, even if it
    /// holds fewer entities than asked, or none. Default `None` (no limit).
    pub scan_budget: Option<NonZeroUsize>,
    /// How long a deleted table's name stays blocked: creating it again answers 409
    /// `TableBeingDeleted` (the service blocks it for about 40 s). Default `None` (reusable at
    /// once).
    pub deleted_table_cooldown: Option<Duration>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            max_page_size: DEFAULT_MAX_PAGE_SIZE,
            split_pages_at_partition_boundaries: false,
            scan_budget: None,
            deleted_table_cooldown: None,
        }
    }
}

impl EngineOptions {
    /// Sets [`max_page_size`](Self::max_page_size).
    #[must_use]
    pub fn max_page_size(mut self, size: NonZeroUsize) -> Self {
        self.max_page_size = size;
        self
    }

    /// Sets [`split_pages_at_partition_boundaries`](Self::split_pages_at_partition_boundaries).
    #[must_use]
    pub fn split_pages_at_partition_boundaries(mut self, split: bool) -> Self {
        self.split_pages_at_partition_boundaries = split;
        self
    }

    /// Sets [`scan_budget`](Self::scan_budget).
    #[must_use]
    pub fn scan_budget(mut self, rows: Option<NonZeroUsize>) -> Self {
        self.scan_budget = rows;
        self
    }

    /// Sets [`deleted_table_cooldown`](Self::deleted_table_cooldown).
    #[must_use]
    pub fn deleted_table_cooldown(mut self, cooldown: Option<Duration>) -> Self {
        self.deleted_table_cooldown = cooldown;
        self
    }
}
