//! The binary's accounts (a module of the `table-server` binary, not of the library): the
//! repeatable `--account NAME:KEY[:KEY2]` flag and, for drop-in compatibility with Azurite,
//! its `AZURITE_ACCOUNTS` variable (`NAME:KEY[:KEY2];NAME:KEY[:KEY2];...`).
//!
//! Rules, Azurite's where it has one:
//! - accounts given (by flag or by variable) replace the development account, as Azurite's
//!   custom accounts do; list `devstoreaccount1` with its key to keep it;
//! - `--account` flags win: the variable is only read when no flag names an account;
//! - an empty or unset variable means the development account, as in Azurite; empty entries
//!   between `;` are skipped, as Azurite skips them (so a trailing `;` is fine);
//! - both keys sign, as on the service.
//!
//! Deliberate differences: Azurite logs a malformed variable and falls back to the development
//! account, takes any text as a key (decoding what base64 it can), keeps the last of two
//! accounts of one name, and re-reads the variable every minute; here every malformed value
//! (a missing or empty key, a key that is not base64, a name against the service's rule, an
//! account named twice, a variable naming no account) stops the server at startup with a
//! message, and the accounts are read once. Messages never repeat a key.

use std::collections::HashSet;

use table_core::engine::Engine;
use table_server::{Accounts, DEV_ACCOUNT, DEV_KEY};

/// Azurite's variable naming the accounts.
pub(crate) const AZURITE_ACCOUNTS: &str = "AZURITE_ACCOUNTS";

/// One account as given: its name and its one or two base64 keys (not yet checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AccountOption {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) secondary_key: Option<String>,
}

/// `NAME:KEY` or `NAME:KEY:KEY2`, each part non-empty. `origin` names where the text came from
/// in the error (`--account`, `AZURITE_ACCOUNTS`).
pub(crate) fn parse_account(text: &str, origin: &str) -> Result<AccountOption, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let name = parts.first().copied().unwrap_or("").trim();
    // Only the name is echoed: the rest is a secret.
    let shown = if name.is_empty() { String::new() } else { format!(" ({name:?})") };
    let (key, secondary_key) = match parts[..] {
        [_, key] => (key, None),
        [_, key, secondary] => (key, Some(secondary)),
        _ => return Err(format!("{origin}: an account{shown} is not NAME:KEY or NAME:KEY:KEY2")),
    };
    if name.is_empty() {
        return Err(format!("{origin}: an account has an empty name"));
    }
    if key.trim().is_empty() || secondary_key.is_some_and(|k| k.trim().is_empty()) {
        return Err(format!("{origin}: the account{shown} has an empty key"));
    }
    Ok(AccountOption {
        name: name.to_owned(),
        key: key.to_owned(),
        secondary_key: secondary_key.map(str::to_owned),
    })
}

/// The accounts of an `AZURITE_ACCOUNTS` value: entries separated by `;`, empty ones skipped;
/// at least one account.
pub(crate) fn parse_azurite_accounts(text: &str) -> Result<Vec<AccountOption>, String> {
    let accounts = text
        .split(';')
        .filter(|entry| !entry.trim().is_empty())
        .map(|entry| parse_account(entry.trim(), AZURITE_ACCOUNTS))
        .collect::<Result<Vec<_>, _>>()?;
    if accounts.is_empty() {
        return Err(format!("{AZURITE_ACCOUNTS} names no account"));
    }
    Ok(accounts)
}

/// The accounts to serve: the `--account` flags, else the accounts of `azurite_accounts` (the
/// variable's value) when it is set and not empty, else the development account.
pub(crate) fn chosen(
    flags: Vec<AccountOption>,
    azurite_accounts: Option<&str>,
) -> Result<Vec<AccountOption>, String> {
    if !flags.is_empty() {
        return Ok(flags);
    }
    match azurite_accounts.filter(|value| !value.is_empty()) {
        Some(value) => parse_azurite_accounts(value),
        None => Ok(vec![AccountOption {
            name: DEV_ACCOUNT.to_owned(),
            key: DEV_KEY.to_owned(),
            secondary_key: None,
        }]),
    }
}

/// Serves each of `list` from its own engine made by `engine` for the account's name (new, or
/// recovered from `--data-dir`), checking names and keys ([`Accounts::add`]) and refusing an
/// account named twice.
pub(crate) fn serve(
    list: &[AccountOption],
    mut engine: impl FnMut(&str) -> Result<Engine, String>,
) -> Result<Accounts, String> {
    let accounts = Accounts::new();
    let mut names = HashSet::new();
    for account in list {
        let name = &account.name;
        if !names.insert(name) {
            return Err(format!("the account {name:?} is given twice"));
        }
        accounts.add(name, &account.key, engine(name)?).map_err(|e| format!("the account {name:?}: {e}"))?;
        if let Some(key) = &account.secondary_key {
            accounts
                .add_secondary_key(name, key)
                .map_err(|e| format!("the account {name:?}, second key: {e}"))?;
        }
    }
    Ok(accounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new engine for any account, as the binary makes without `--data-dir`.
    fn new_engine(_account: &str) -> Result<Engine, String> {
        Ok(Engine::new())
    }

    fn option(name: &str, key: &str, secondary_key: Option<&str>) -> AccountOption {
        AccountOption {
            name: name.to_owned(),
            key: key.to_owned(),
            secondary_key: secondary_key.map(str::to_owned),
        }
    }

    #[test]
    fn an_account_is_a_name_and_one_or_two_keys() {
        assert_eq!(parse_account("acct1:a2V5", "--account"), Ok(option("acct1", "a2V5", None)));
        assert_eq!(
            parse_account("acct1:a2V5:a2V5Mg==", "--account"),
            Ok(option("acct1", "a2V5", Some("a2V5Mg==")))
        );
        for bad in ["", "acct1", "acct1:", ":a2V5", "acct1::a2V5", "acct1:a2V5:", "acct1:a2V5: ", "a:b:c:d"] {
            let error = parse_account(bad, "--account");
            assert!(error.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn errors_name_the_account_but_never_a_key() {
        let error = parse_account("acct1:c2VjcmV0:c2VjcmV0Mg==:x", "--account").err().unwrap_or_default();
        assert!(error.contains("acct1") && !error.contains("c2VjcmV0"), "{error}");
        let bad_base64 = serve(&[option("acct1", "c2VjcmV0!", None)], new_engine).err().unwrap_or_default();
        assert!(bad_base64.contains("acct1") && !bad_base64.contains("c2VjcmV0"), "{bad_base64}");
    }

    #[test]
    fn azurite_accounts_follow_azurite_s_format() {
        assert_eq!(
            parse_azurite_accounts("acct1:a2V5;acct2:a2V5:a2V5Mg==;"),
            Ok(vec![option("acct1", "a2V5", None), option("acct2", "a2V5", Some("a2V5Mg=="))])
        );
        assert_eq!(parse_azurite_accounts(" acct1:a2V5 ;; "), Ok(vec![option("acct1", "a2V5", None)]));
        for bad in [";", " ", "acct1", "acct1:a2V5;acct2", "acct1:a2V5;acct2:"] {
            assert!(parse_azurite_accounts(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn flags_win_then_the_variable_then_the_development_account() {
        let flag = vec![option("acct1", "a2V5", None)];
        assert_eq!(chosen(flag.clone(), Some("acct2:a2V5")), Ok(flag));
        assert_eq!(chosen(Vec::new(), Some("acct2:a2V5")), Ok(vec![option("acct2", "a2V5", None)]));
        let development = Ok(vec![option(DEV_ACCOUNT, DEV_KEY, None)]);
        assert_eq!(chosen(Vec::new(), None), development);
        assert_eq!(chosen(Vec::new(), Some("")), development);
        assert!(chosen(Vec::new(), Some(";")).is_err());
    }

    #[test]
    fn bad_names_keys_and_duplicates_are_refused() {
        let good = option("acct1", "a2V5", Some("a2V5Mg=="));
        assert!(serve(std::slice::from_ref(&good), new_engine).is_ok());
        for bad in [
            vec![option("Acct1", "a2V5", None)],
            vec![option("ab", "a2V5", None)],
            vec![option("acct-1", "a2V5", None)],
            vec![option("acct1", "not base64!", None)],
            vec![option("acct1", "a2V5", Some("not base64!"))],
            vec![good.clone(), option("acct1", "a2V5", None)],
        ] {
            assert!(serve(&bad, new_engine).is_err(), "{bad:?}");
        }
    }
}
