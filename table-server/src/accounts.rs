//! The accounts a server serves: each a name, the keys its requests are signed with (a
//! primary and optionally a secondary, either of which signs, as on the service), and the
//! engine holding its tables. Accounts can be added while the server runs (a test harness
//! gives each test a fresh account, hence a fresh engine, on one server).
//!
//! Invariant: every served account has a valid storage account name and non-empty keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use table_client::auth::AccountKey;
use table_core::engine::Engine;
use table_core::{Error, ErrorKind, Result};

/// The development account's name (`UseDevelopmentStorage=true`).
pub const DEV_ACCOUNT: &str = "devstoreaccount1";

/// The development account's well-known key (base64), public by design.
pub const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// One served account.
pub(crate) struct Account {
    pub(crate) keys: Keys,
    pub(crate) engine: Engine,
}

/// An account's keys: a request signed with either is the account's, as the service accepts
/// both of an account's keys (so clients can move to the other key before one is rotated).
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    primary: AccountKey,
    secondary: Option<AccountKey>,
}

impl Keys {
    pub(crate) fn new(primary: AccountKey, secondary: Option<AccountKey>) -> Keys {
        Keys { primary, secondary }
    }

    /// The account's name.
    pub(crate) fn account(&self) -> &str {
        self.primary.account()
    }

    /// Whether `signature` (decoded from its base64) is either key's signature of
    /// `string_to_sign`.
    pub(crate) fn verify(&self, string_to_sign: &str, signature: &[u8]) -> bool {
        self.primary.verify(string_to_sign, signature)
            || self.secondary.as_ref().is_some_and(|key| key.verify(string_to_sign, signature))
    }
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
    /// and digits, so `{name}-secondary` is never an account of its own), or the key is empty
    /// or not base64.
    ///
    /// ```
    /// use table_core::engine::Engine;
    /// use table_server::Accounts;
    ///
    /// let accounts = Accounts::new();
    /// accounts.add("testaccount1", "a2V5", Engine::new())?;
    /// assert!(accounts.add("Not-Valid", "a2V5", Engine::new()).is_err());
    /// assert!(accounts.add("testaccount2", "not base64!", Engine::new()).is_err());
    /// assert!(accounts.add("testaccount3", "", Engine::new()).is_err());
    /// # Ok::<(), table_core::Error>(())
    /// ```
    pub fn add(&self, name: &str, base64_key: &str, engine: Engine) -> Result<()> {
        table_client::connection_string::check_storage_account_name(name)?;
        let keys = Keys::new(account_key(name, base64_key)?, None);
        self.inner
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), Arc::new(Account { keys, engine }));
        Ok(())
    }

    /// Gives the served account `name` a second key, `base64_key` (replacing its second key, if
    /// any): requests signed with either key are then the account's, as on the service. Fails
    /// when no account `name` is served, or the key is empty or not base64.
    ///
    /// ```
    /// use table_core::engine::Engine;
    /// use table_server::Accounts;
    ///
    /// let accounts = Accounts::new();
    /// accounts.add("testaccount1", "a2V5MQ==", Engine::new())?;
    /// accounts.add_secondary_key("testaccount1", "a2V5Mg==")?;
    /// assert!(accounts.add_secondary_key("testaccount2", "a2V5Mg==").is_err());
    /// # Ok::<(), table_core::Error>(())
    /// ```
    pub fn add_secondary_key(&self, name: &str, base64_key: &str) -> Result<()> {
        let secondary = account_key(name, base64_key)?;
        let mut accounts = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let account = accounts
            .get_mut(name)
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "no account of that name is served"))?;
        let keys = Keys::new(account.keys.primary.clone(), Some(secondary));
        *account = Arc::new(Account { keys, engine: account.engine.clone() });
        Ok(())
    }

    /// The account named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Account>> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).get(name).cloned()
    }
}

/// `base64_key` as `name`'s key; an empty key (which anyone could sign with) is refused.
fn account_key(name: &str, base64_key: &str) -> Result<AccountKey> {
    if base64_key.trim().is_empty() {
        return Err(Error::new(ErrorKind::Auth, "the account key is empty"));
    }
    AccountKey::new(name, base64_key)
}

impl fmt::Debug for Accounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accounts = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<&String> = accounts.keys().collect();
        names.sort();
        f.debug_struct("Accounts").field("names", &names).finish_non_exhaustive()
    }
}
