//! The accounts a server serves: each a name, a key its requests are signed with, and the
//! engine holding its tables. Accounts can be added while the server runs (a test harness
//! gives each test a fresh account, hence a fresh engine, on one server).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use table_client::auth::AccountKey;
use table_core::Result;
use table_core::engine::Engine;

/// The development account's name (`UseDevelopmentStorage=true`).
pub const DEV_ACCOUNT: &str = "devstoreaccount1";

/// The development account's well-known key (base64), public by design.
pub const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// One served account.
pub(crate) struct Account {
    pub(crate) key: AccountKey,
    pub(crate) engine: Engine,
}

/// The accounts of a server, by name. Cheap to clone; clones share the accounts.
#[derive(Clone, Default)]
pub struct Accounts {
    /// Shared per account, so a request takes its account without copying its key.
    inner: Arc<RwLock<HashMap<String, Arc<Account>>>>,
}

impl Accounts {
    /// No accounts.
    pub fn new() -> Accounts {
        Accounts::default()
    }

    /// The development account with its well-known key, over `engine`.
    pub fn development(engine: Engine) -> Accounts {
        let accounts = Accounts::new();
        accounts.add(DEV_ACCOUNT, DEV_KEY, engine).expect("the development key is valid base64");
        accounts
    }

    /// Serves `name` from `engine`, its requests signed with `base64_key` (replacing an account
    /// of that name). Fails when the name breaks the service's rule (3 to 24 lower-case letters
    /// and digits, so `{name}-secondary` is never an account of its own) or the key is not
    /// base64.
    ///
    /// ```
    /// use table_core::engine::Engine;
    /// use table_server::Accounts;
    ///
    /// let accounts = Accounts::new();
    /// accounts.add("testaccount1", "a2V5", Engine::new())?;
    /// assert!(accounts.add("Not-Valid", "a2V5", Engine::new()).is_err());
    /// assert!(accounts.add("testaccount2", "not base64!", Engine::new()).is_err());
    /// # Ok::<(), table_core::Error>(())
    /// ```
    pub fn add(&self, name: &str, base64_key: &str, engine: Engine) -> Result<()> {
        table_client::connection_string::check_storage_account_name(name)?;
        let key = AccountKey::new(name, base64_key)?;
        self.inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), Arc::new(Account { key, engine }));
        Ok(())
    }

    /// The account named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Account>> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }
}

impl fmt::Debug for Accounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accounts = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<&String> = accounts.keys().collect();
        names.sort();
        f.debug_struct("Accounts").field("names", &names).finish_non_exhaustive()
    }
}
