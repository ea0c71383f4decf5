//! Key-encryption keys (KEKs): the trait a key store implements to wrap and unwrap the
//! per-entity content keys, the resolver that finds a KEK by key id when reading, and the two
//! local KEKs (`A256KW`, `RSA-OAEP`).
//!
//! Invariants: a KEK never sees a property value, only a 32-byte content key; every failure of
//! a KEK (wrong key, tampered wrapped key, unknown algorithm) is an error, never a short or
//! garbled key.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aes_kw::{KeyInit, KwAes256};
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};

use table_core::Result;

use crate::error::invalid_input;

/// The error of a [`KeyEncryptionKey`] or [`KeyResolver`]: any error of the key store. The
/// client reports it as [`ErrorKind::Crypto`](table_core::ErrorKind::Crypto), with this error
/// as its source.
pub type KeyError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What [`KeyEncryptionKey::wrap_key`] and [`KeyEncryptionKey::unwrap_key`] return: a boxed
/// future, so the trait stays object safe and a remote key store (Azure Key Vault) fits.
pub type KeyFuture<'a> = Pin<Box<dyn Future<Output = std::result::Result<Vec<u8>, KeyError>> + Send + 'a>>;

/// What [`KeyResolver::resolve`] returns: the KEK of a key id, or `None` when the resolver
/// knows no such key.
pub type ResolveFuture<'a> = Pin<
    Box<dyn Future<Output = std::result::Result<Option<Arc<dyn KeyEncryptionKey>>, KeyError>> + Send + 'a>,
>;

/// A key-encryption key: wraps the random content key of each encrypted entity before it is
/// stored (in `_ClientEncryptionMetadata1`, beside its key id and algorithm) and unwraps it
/// when the entity is read.
///
/// Implement it over a key store (Azure Key Vault's wrapKey/unwrapKey), or use the local
/// [`AesKeyWrap`] (`A256KW`) or [`RsaOaepKey`] (`RSA-OAEP`). Its `Debug` must not print key
/// material.
///
/// ```
/// use std::sync::Arc;
/// use table_client::encryption::{AesKeyWrap, KeyEncryptionKey, KeyFuture};
///
/// /// A KEK that logs every use, over a local one.
/// #[derive(Debug)]
/// struct Audited(AesKeyWrap);
///
/// impl KeyEncryptionKey for Audited {
///     fn key_id(&self) -> &str { self.0.key_id() }
///     fn algorithm(&self) -> &str { self.0.algorithm() }
///     fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a> {
///         println!("wrap under {}", self.key_id());
///         self.0.wrap_key(key)
///     }
///     fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a> {
///         self.0.unwrap_key(wrapped, algorithm)
///     }
/// }
/// let kek = Audited(AesKeyWrap::new("local:key1", [7; 32]));
/// # let _ = Arc::new(kek);
/// ```
pub trait KeyEncryptionKey: Send + Sync + fmt::Debug {
    /// The key id stored with each wrapped key (`WrappedContentKey.KeyId`), by which a
    /// [`KeyResolver`] finds this key again.
    fn key_id(&self) -> &str;

    /// The algorithm [`wrap_key`](Self::wrap_key) uses, stored as
    /// `WrappedContentKey.Algorithm` (`A256KW`, `RSA-OAEP`, or the key store's name).
    fn algorithm(&self) -> &str;

    /// Wraps a content key with [`algorithm`](Self::algorithm).
    fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a>;

    /// Unwraps a content key wrapped with `algorithm` (the stored one). Fails for an algorithm
    /// it does not implement, and for a wrapped key it did not produce, when the algorithm can
    /// tell (both local algorithms can).
    fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a>;
}

impl<T: KeyEncryptionKey + ?Sized> KeyEncryptionKey for Arc<T> {
    fn key_id(&self) -> &str {
        (**self).key_id()
    }

    fn algorithm(&self) -> &str {
        (**self).algorithm()
    }

    fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a> {
        (**self).wrap_key(key)
    }

    fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a> {
        (**self).unwrap_key(wrapped, algorithm)
    }
}

/// Finds the KEK of a key id when reading: rows keep the key id they were written with, so
/// after a key rotation the resolver still answers for the old ids and old rows stay
/// readable. [`KeyRing`] is the in-memory one.
pub trait KeyResolver: Send + Sync + fmt::Debug {
    /// The KEK whose [`key_id`](KeyEncryptionKey::key_id) is `key_id`, or `None`.
    fn resolve<'a>(&'a self, key_id: &'a str) -> ResolveFuture<'a>;
}

/// A [`KeyResolver`] over a fixed set of KEKs, by key id.
///
/// ```
/// use table_client::encryption::{AesKeyWrap, KeyRing};
///
/// // The new key writes; the old one still reads the rows it wrapped.
/// let ring = KeyRing::new().with(AesKeyWrap::new("kek-2024", [1; 32])).with(AesKeyWrap::new("kek-2025", [2; 32]));
/// # let _ = ring;
/// ```
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: HashMap<String, Arc<dyn KeyEncryptionKey>>,
}

impl KeyRing {
    /// An empty ring.
    pub fn new() -> Self {
        KeyRing::default()
    }

    /// Adds `key` under its key id (replacing a key with the same id).
    pub fn with(mut self, key: impl KeyEncryptionKey + 'static) -> Self {
        self.keys.insert(key.key_id().to_owned(), Arc::new(key));
        self
    }
}

impl KeyResolver for KeyRing {
    fn resolve<'a>(&'a self, key_id: &'a str) -> ResolveFuture<'a> {
        let found = self.keys.get(key_id).cloned();
        Box::pin(async move { Ok(found) })
    }
}

/// The algorithm name of [`AesKeyWrap`]: AES-256 key wrap (RFC 3394), as JSON Web Algorithms
/// and the older storage libraries name it.
pub const A256KW: &str = "A256KW";

/// The algorithm name of [`RsaOaepKey`]: RSA-OAEP with SHA-1 and MGF1(SHA-1), as JSON Web
/// Algorithms, Key Vault and the older storage libraries name it.
pub const RSA_OAEP: &str = "RSA-OAEP";

/// A local AES-256 key-wrap KEK ([`A256KW`], RFC 3394): a 32-byte secret under a key id.
/// Unwrapping checks the wrap's integrity value, so a wrong key or a changed wrapped key is an
/// error.
#[derive(Clone)]
pub struct AesKeyWrap {
    key_id: String,
    kek: KwAes256,
}

impl AesKeyWrap {
    /// The KEK `key` under the id `key_id`.
    pub fn new(key_id: impl Into<String>, key: [u8; 32]) -> Self {
        AesKeyWrap { key_id: key_id.into(), kek: KwAes256::new(&key.into()) }
    }
}

impl fmt::Debug for AesKeyWrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesKeyWrap").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl KeyEncryptionKey for AesKeyWrap {
    fn key_id(&self) -> &str {
        &self.key_id
    }

    fn algorithm(&self) -> &str {
        A256KW
    }

    fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a> {
        let mut wrapped = vec![0; key.len() + aes_kw::IV_LEN];
        let wrapped = match self.kek.wrap_key(key, &mut wrapped) {
            Ok(_) => Ok(wrapped),
            Err(e) => Err(KeyError::from(format!("A256KW wrap failed: {e}"))),
        };
        Box::pin(async move { wrapped })
    }

    fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a> {
        let key = check_algorithm(algorithm, A256KW).and_then(|()| {
            let mut key = vec![0; wrapped.len().saturating_sub(aes_kw::IV_LEN)];
            match self.kek.unwrap_key(wrapped, &mut key) {
                Ok(_) => Ok(key),
                Err(aes_kw::Error::IntegrityCheckFailed) => Err(KeyError::from(
                    "A256KW unwrap failed its integrity check: the wrapped key was not made by this key",
                )),
                Err(_) => Err(KeyError::from(format!(
                    "A256KW unwrap failed: a wrapped key is a whole number of 8-byte blocks, this one has {} bytes",
                    wrapped.len()
                ))),
            }
        });
        Box::pin(async move { key })
    }
}

/// A local RSA KEK ([`RSA_OAEP`]: OAEP with SHA-1 and MGF1(SHA-1), the padding of the older
/// storage libraries and of Key Vault's `RSA-OAEP`). With a private key it wraps and unwraps;
/// with only a public key it wraps (a writer that cannot read).
///
/// **Timing side channel when unwrapping.** The private-key operation comes from the `rsa`
/// crate 0.9, whose decryption is not constant time (advisory RUSTSEC-2023-0071, the
/// "Marvin" attack): an attacker who can make a process unwrap many chosen wrapped keys and
/// time each unwrap precisely (on the same host, or over a low-noise network) may recover
/// the private key. No fixed stable release exists (the 0.10 line that fixes it is still a
/// release candidate). Wrapping uses only the public key and is not affected. Where others
/// share the machine or can submit rows that this process reads, unwrap with [`AesKeyWrap`]
/// (`A256KW`) or with a remote KEK (a [`KeyEncryptionKey`] over Key Vault, whose private key
/// never enters the process); keep `RsaOaepKey` unwrapping for reading older rows in a
/// trusted setting, and rotate them to another key
/// ([`TableClient::rotate_encryption_key`](crate::TableClient::rotate_encryption_key)).
#[derive(Clone)]
pub struct RsaOaepKey {
    key_id: String,
    public: RsaPublicKey,
    private: Option<RsaPrivateKey>,
}

impl RsaOaepKey {
    /// A KEK from a PEM private key, PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1
    /// (`BEGIN RSA PRIVATE KEY`). [`ErrorKind::InvalidInput`](table_core::ErrorKind::InvalidInput)
    /// if it is neither.
    pub fn from_private_key_pem(key_id: impl Into<String>, pem: &str) -> Result<Self> {
        let private = RsaPrivateKey::from_pkcs8_pem(pem)
            .or_else(|_| RsaPrivateKey::from_pkcs1_pem(pem))
            .map_err(|_| invalid_input("the RSA private key is not a PKCS#8 or PKCS#1 PEM private key"))?;
        Ok(RsaOaepKey { key_id: key_id.into(), public: private.to_public_key(), private: Some(private) })
    }

    /// A wrap-only KEK from a PEM public key (`BEGIN PUBLIC KEY`, SubjectPublicKeyInfo).
    /// [`ErrorKind::InvalidInput`](table_core::ErrorKind::InvalidInput) if it is not one.
    pub fn from_public_key_pem(key_id: impl Into<String>, pem: &str) -> Result<Self> {
        let public = RsaPublicKey::from_public_key_pem(pem)
            .map_err(|_| invalid_input("the RSA public key is not a SubjectPublicKeyInfo PEM public key"))?;
        Ok(RsaOaepKey { key_id: key_id.into(), public, private: None })
    }
}

impl fmt::Debug for RsaOaepKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RsaOaepKey")
            .field("key_id", &self.key_id)
            .field("can_unwrap", &self.private.is_some())
            .finish_non_exhaustive()
    }
}

impl KeyEncryptionKey for RsaOaepKey {
    fn key_id(&self) -> &str {
        &self.key_id
    }

    fn algorithm(&self) -> &str {
        RSA_OAEP
    }

    fn wrap_key<'a>(&'a self, key: &'a [u8]) -> KeyFuture<'a> {
        let wrapped = self
            .public
            .encrypt(&mut rand_core::OsRng, Oaep::new::<sha1::Sha1>(), key)
            .map_err(|e| KeyError::from(format!("RSA-OAEP wrap failed: {e}")));
        Box::pin(async move { wrapped })
    }

    fn unwrap_key<'a>(&'a self, wrapped: &'a [u8], algorithm: &'a str) -> KeyFuture<'a> {
        let key = check_algorithm(algorithm, RSA_OAEP).and_then(|()| {
            let private = self.private.as_ref().ok_or_else(|| {
                KeyError::from("this RSA-OAEP key holds only a public key, which cannot unwrap")
            })?;
            private.decrypt(Oaep::new::<sha1::Sha1>(), wrapped).map_err(|_| {
                KeyError::from("RSA-OAEP unwrap failed: the wrapped key was not made by this key")
            })
        });
        Box::pin(async move { key })
    }
}

fn check_algorithm(stored: &str, implemented: &str) -> std::result::Result<(), KeyError> {
    match stored == implemented {
        true => Ok(()),
        false => {
            Err(format!("the key was wrapped with {stored:?}; this key implements only {implemented}").into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_refuses_an_algorithm_it_does_not_implement() {
        let kek = AesKeyWrap::new("k", [1; 32]);
        let wrapped = kek.wrap_key(&[2; 32]).await.unwrap_or_default();
        assert_eq!(kek.unwrap_key(&wrapped, A256KW).await.ok(), Some(vec![2; 32]));
        let e = kek.unwrap_key(&wrapped, "RSA").await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(r#"wrapped with "RSA""#) && e.contains("only A256KW"), "{e}");
    }

    #[tokio::test]
    async fn a256kw_unwrap_says_why_it_failed() {
        let kek = AesKeyWrap::new("k", [1; 32]);
        let kek = &kek;
        let error = |wrapped: Vec<u8>| async move {
            kek.unwrap_key(&wrapped, A256KW).await.err().map(|e| e.to_string()).unwrap_or_default()
        };
        let other = AesKeyWrap::new("other", [2; 32]).wrap_key(&[2; 32]).await.unwrap_or_default();
        assert!(error(other).await.contains("integrity check"));
        let e = error(vec![0; 41]).await;
        assert!(e.contains("8-byte blocks") && e.contains("41 bytes"), "{e}");
    }

    #[tokio::test]
    async fn a_key_ring_finds_keys_by_id() {
        let ring = KeyRing::new().with(AesKeyWrap::new("a", [1; 32])).with(AesKeyWrap::new("b", [2; 32]));
        let found = ring.resolve("b").await.ok().flatten().map(|k| k.key_id().to_owned());
        assert_eq!(found.as_deref(), Some("b"));
        assert!(matches!(ring.resolve("c").await, Ok(None)));
    }
}
