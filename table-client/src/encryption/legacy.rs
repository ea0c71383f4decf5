//! Format "1.0", the one the older .NET, Java and Python storage libraries write: AES-256-CBC
//! with PKCS#7 padding, one IV per property derived from the entity IV and the keys.
//!
//! Not authenticated: CBC detects nothing. A changed ciphertext decrypts to other bytes (often
//! caught as bad padding or invalid UTF-8, but not always), and a ciphertext moved to another
//! row or property usually fails the same way only because its IV no longer matches. Read it
//! for compatibility; write it only for readers that know no other format.
//!
//! Layout (all stored as `Edm.Binary`, keys and names as UTF-8):
//! - property IV = the first 16 bytes of SHA-256(entity IV || RowKey || PartitionKey || name)
//!   (the Java library's first variant: PartitionKey before RowKey);
//! - property value = AES-256-CBC(content key, property IV, PKCS#7(UTF-8 string));
//! - the name list (`_ClientEncryptionMetadata2`) = the same over the JSON array of the
//!   encrypted names (the Java variant: `[a, b]`, names joined by `, `), with the IV derived
//!   for the name `_ClientEncryptionMetadata2`.

use std::borrow::Cow;
use std::cell::OnceCell;

use aes::cipher::KeyInit;
use aes::{Aes256Dec, Aes256Enc};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, InnerIvInit};
use sha2::{Digest, Sha256};

use super::metadata;

/// The content cipher of one "1.0" entity: its key (each direction's schedule expanded once,
/// on first use, for all its properties) and the hash of its IVs' common prefix.
pub(crate) struct Cipher<'a> {
    key: &'a [u8; 32],
    encrypt: OnceCell<Aes256Enc>,
    decrypt: OnceCell<Aes256Dec>,
    /// SHA-256 over the entity IV and the two keys, in the format's order: each property IV
    /// only adds its name.
    prefix: Sha256,
    java_v1: bool,
}

impl<'a> Cipher<'a> {
    /// The cipher of content key `key` and `entity_iv` for the row with these keys, in the
    /// Java library's first variant when `java_v1`.
    pub(crate) fn new(
        key: &'a [u8; 32],
        entity_iv: [u8; 16],
        java_v1: bool,
        partition_key: &str,
        row_key: &str,
    ) -> Self {
        let (first, second) = match java_v1 {
            true => (partition_key, row_key),
            false => (row_key, partition_key),
        };
        let prefix = Sha256::new().chain_update(entity_iv).chain_update(first).chain_update(second);
        Cipher { key, encrypt: OnceCell::new(), decrypt: OnceCell::new(), prefix, java_v1 }
    }

    /// The IV of property `name`.
    fn iv(&self, name: &str) -> [u8; 16] {
        let digest = self.prefix.clone().chain_update(name).finalize();
        let mut iv = [0; 16];
        iv.copy_from_slice(&digest[..16]);
        iv
    }

    /// Encrypts the value of property `name`.
    pub(crate) fn seal(&self, name: &str, plaintext: &[u8]) -> Vec<u8> {
        let key = self.encrypt.get_or_init(|| Aes256Enc::new(self.key.into()));
        cbc::Encryptor::inner_iv_init(key, &self.iv(name).into()).encrypt_padded_vec::<Pkcs7>(plaintext)
    }

    /// Decrypts the value of property `name` in its own buffer, which then holds the
    /// plaintext; `None` when the padding is not PKCS#7 (a wrong key, IV or ciphertext; CBC
    /// cannot tell which).
    pub(crate) fn open(&self, name: &str, mut value: Vec<u8>) -> Option<Vec<u8>> {
        let key = self.decrypt.get_or_init(|| Aes256Dec::new(self.key.into()));
        let len = cbc::Decryptor::inner_iv_init(key, &self.iv(name).into())
            .decrypt_padded::<Pkcs7>(&mut value)
            .ok()?
            .len();
        value.truncate(len);
        Some(value)
    }

    /// The encrypted names from the decrypted list: JSON, or the Java variant's `[a, b]`.
    pub(crate) fn names<'l>(&self, list: &'l str) -> Option<Vec<Cow<'l, str>>> {
        match self.java_v1 {
            false => metadata::names(list),
            true => {
                let inner = list.strip_prefix('[')?.strip_suffix(']')?;
                Some(inner.split(", ").filter(|s| !s.is_empty()).map(Cow::Borrowed).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cipher(java_v1: bool) -> Cipher<'static> {
        Cipher::new(&[3; 32], [5; 16], java_v1, "pk", "rk")
    }

    #[test]
    fn the_property_iv_hashes_row_key_before_partition_key() {
        let expected = Sha256::digest([&[5u8; 16][..], b"rkpkName"].concat());
        assert_eq!(cipher(false).iv("Name")[..], expected[..16]);
        let java = Sha256::digest([&[5u8; 16][..], b"pkrkName"].concat());
        assert_eq!(cipher(true).iv("Name")[..], java[..16]);
    }

    #[test]
    fn values_round_trip_padded_to_whole_blocks() {
        let c = cipher(false);
        for text in ["", "a", "exactly 16 bytes", "🦀 more than one block of text"] {
            let sealed = c.seal("Name", text.as_bytes());
            assert_eq!(sealed.len(), (text.len() / 16 + 1) * 16);
            assert_eq!(c.open("Name", sealed).as_deref(), Some(text.as_bytes()));
        }
    }

    #[test]
    fn java_v1_name_lists_are_bracketed_and_comma_separated() {
        assert_eq!(cipher(true).names("[A, B]"), Some(vec!["A".into(), "B".into()]));
        assert_eq!(cipher(true).names("[]"), Some(vec![]));
        assert_eq!(cipher(false).names(r#"["A", "B"]"#), Some(vec!["A".into(), "B".into()]));
        assert_eq!(cipher(true).names("A, B"), None);
    }
}
