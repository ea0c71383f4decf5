//! The authenticated format (protocol `rs-gcm-1`), this crate's default for new writes:
//! AES-256-GCM per property, with associated data that binds each ciphertext to its row and
//! property. Once released, this layout stays readable forever; a change is a new protocol.
//!
//! Layout, byte by byte:
//! - content key: 32 random bytes per entity write, wrapped by the KEK and stored in
//!   `_ClientEncryptionMetadata1` (JSON: `WrappedContentKey {KeyId, EncryptedKey (base64),
//!   Algorithm}`, `EncryptionAgent {Protocol: "rs-gcm-1", EncryptionAlgorithm: "AES_GCM_256"}`,
//!   and nothing else: no `ContentEncryptionIV`, no `KeyWrappingMetadata`);
//! - property value (`Edm.Binary`) = nonce (12 random bytes) || ciphertext (as long as the
//!   UTF-8 plaintext) || tag (16 bytes), so 28 bytes longer than the string's UTF-8;
//! - associated data = `rs-gcm-1` (8 ASCII bytes) || 0x00 || for each of PartitionKey, RowKey
//!   and the property name in that order: its UTF-8 length as a 4-byte big-endian integer,
//!   then its UTF-8 bytes;
//! - the name list (`_ClientEncryptionMetadata2`, `Edm.Binary`) = the same sealing of the JSON
//!   array of the encrypted property names, under the name `_ClientEncryptionMetadata2`.
//!
//! Any change to a value, the name list or the wrapped key fails authentication (the wrapped
//! key by the KEK's own check); a value moved to another row or property, or the list of
//! another row, fails because its associated data differs. Only the wrapped key is outside the
//! associated data, so a key rotation can re-wrap it without touching any value.

use aes::Aes256Enc;
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{AesGcm, Nonce, Tag};

use super::metadata::PROTOCOL_GCM;

/// The nonce length.
pub(crate) const NONCE: usize = 12;
/// The tag length.
const TAG: usize = 16;

/// AES-256-GCM over the encryption half of the key schedule only: GCM never runs the block
/// cipher backwards, so expanding the decryption keys would be wasted work per entity.
type Aes256Gcm = AesGcm<Aes256Enc, U12>;

/// The content cipher of one entity in the authenticated format: the key expanded once for
/// all its properties, and the associated data of the row, ready for each property name.
pub(crate) struct Cipher {
    aead: Aes256Gcm,
    /// The associated data: the row's part, then the name of the property at hand.
    aad: Vec<u8>,
    /// The length of the row's part of `aad`.
    row: usize,
}

impl Cipher {
    /// The cipher of content key `key` for the row with these keys.
    pub(crate) fn new(key: &[u8; 32], partition_key: &str, row_key: &str) -> Self {
        let row = PROTOCOL_GCM.len() + 1 + 4 + partition_key.len() + 4 + row_key.len();
        // Room for a property name too (at most 255 characters of UTF-8 on the service).
        let mut aad = Vec::with_capacity(row + 4 + 4 * 255);
        aad.extend_from_slice(PROTOCOL_GCM.as_bytes());
        aad.push(0);
        push_field(&mut aad, partition_key);
        push_field(&mut aad, row_key);
        Cipher { aead: Aes256Gcm::new(key.into()), aad, row }
    }

    /// The associated data of property `name`.
    fn associated_data(&mut self, name: &str) -> &[u8] {
        self.aad.truncate(self.row);
        push_field(&mut self.aad, name);
        &self.aad
    }

    /// Seals the value of property `name` under a fresh `nonce`, in one buffer (no copy of the
    /// ciphertext).
    pub(crate) fn seal(&mut self, name: &str, nonce: &[u8; NONCE], plaintext: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(NONCE + plaintext.len() + TAG);
        out.extend_from_slice(nonce);
        out.extend_from_slice(plaintext);
        self.associated_data(name);
        let plaintext = &mut out[NONCE..];
        let tag = self.aead.encrypt_inout_detached(&Nonce::from(*nonce), &self.aad, plaintext.into()).ok()?;
        out.extend_from_slice(&tag);
        Some(out)
    }

    /// Opens the value of property `name` in its own buffer, which then holds the plaintext;
    /// `None` when it fails authentication (changed, moved, truncated, or sealed under another
    /// key).
    pub(crate) fn open(&mut self, name: &str, mut value: Vec<u8>) -> Option<Vec<u8>> {
        let end = value.len().checked_sub(TAG).filter(|end| *end >= NONCE)?;
        self.associated_data(name);
        let (nonce, sealed) = value.split_at_mut(NONCE);
        let (ciphertext, tag) = sealed.split_at_mut(end - NONCE);
        let (nonce, tag) = (Nonce::try_from(&*nonce).ok()?, Tag::try_from(&*tag).ok()?);
        self.aead.decrypt_inout_detached(&nonce, &self.aad, ciphertext.into(), &tag).ok()?;
        value.truncate(end);
        value.drain(..NONCE);
        Some(value)
    }
}

/// Appends `field` to associated data: its UTF-8 length (4 bytes, big-endian), then its bytes.
fn push_field(aad: &mut Vec<u8>, field: &str) {
    // Keys and names are far below 4 GiB (the service limits them to 1 KiB and 255).
    aad.extend_from_slice(&u32::try_from(field.len()).unwrap_or(u32::MAX).to_be_bytes());
    aad.extend_from_slice(field.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn associated_data_is_length_prefixed() {
        let mut c = Cipher::new(&[0; 32], "p", "rk");
        let mut expected = b"rs-gcm-1\0".to_vec();
        expected.extend_from_slice(&[0, 0, 0, 1, b'p', 0, 0, 0, 2, b'r', b'k', 0, 0, 0, 1, b'N']);
        // Each name replaces the previous one.
        c.associated_data("Other");
        assert_eq!(c.associated_data("N"), expected);
        // No two splits of the same characters collide.
        assert_ne!(
            Cipher::new(&[0; 32], "ab", "c").associated_data("d"),
            Cipher::new(&[0; 32], "a", "bc").associated_data("d")
        );
    }

    #[test]
    fn a_known_answer_pins_the_layout() {
        let mut c = Cipher::new(&[0x11; 32], "pk", "rk");
        let sealed = c.seal("Name", &[0x22; 12], b"hello").unwrap_or_default();
        assert_eq!(sealed.len(), 12 + 5 + 16);
        assert_eq!(&sealed[..12], &[0x22; 12]);
        assert_eq!(c.open("Name", sealed.clone()).as_deref(), Some(&b"hello"[..]));
        assert_eq!(hex(&sealed[12..]), KNOWN_ANSWER);
    }

    /// AES-256-GCM(key 0x11 x 32, nonce 0x22 x 12, aad "rs-gcm-1\0" + keys "pk", "rk", "Name",
    /// "hello"): ciphertext then tag, as this format stores them; computed with Python's
    /// `cryptography` (an independent implementation).
    const KNOWN_ANSWER: &str = "7f926b25af41a282917732968c13f79da8cfca54db";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn every_flipped_bit_and_every_move_fails() {
        let mut c = Cipher::new(&[7; 32], "pk", "rk");
        let sealed = c.seal("Name", &[1; 12], "🦀 text".as_bytes()).unwrap_or_default();
        for bit in 0..sealed.len() * 8 {
            let mut changed = sealed.clone();
            changed[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(c.open("Name", changed), None, "bit {bit}");
        }
        assert_eq!(c.open("Other", sealed.clone()), None);
        assert_eq!(Cipher::new(&[7; 32], "pk", "rk2").open("Name", sealed.clone()), None);
        assert_eq!(Cipher::new(&[7; 32], "pk2", "rk").open("Name", sealed.clone()), None);
        assert_eq!(Cipher::new(&[8; 32], "pk", "rk").open("Name", sealed.clone()), None);
        assert_eq!(c.open("Name", sealed[..27].to_vec()), None);
        assert_eq!(c.open("Name", sealed[..28].to_vec()), None);
        assert_eq!(c.open("Name", sealed).as_deref(), Some("🦀 text".as_bytes()));
    }
}
