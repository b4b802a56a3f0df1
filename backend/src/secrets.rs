//! Secrets at rest (DESIGN §3): XChaCha20-Poly1305 with the key from
//! `COUNTERSIGN_SECRET_KEY`, a random 192-bit nonce per value, and
//! associated data that binds each ciphertext to its owner and purpose, so
//! a row copied onto another user's cannot be opened there.
//!
//! Rotation (docs/operations.md, "Rotating keys"): a [`SecretBox`] holds
//! the current key and, during a rotation, the previous one
//! (`COUNTERSIGN_SECRET_KEY_PREVIOUS`). [`SecretBox::seal`] always uses the
//! current key; [`SecretBox::open`] picks the key named by the value's
//! `key_id`, so callers never know a rotation is under way. [`rotate`]
//! re-seals what is stored under the previous key (`countersign secrets
//! rotate`) until nothing needs it.
//!
//! What it deliberately does not do: guess. A value whose `key_id` names
//! neither key is refused without trying either, and nothing here falls
//! back to storing plaintext.

pub mod rotate;

use chacha20poly1305::{
    KeyInit as _, XChaCha20Poly1305, XNonce,
    aead::{Aead as _, Payload},
};
use sha2::{Digest as _, Sha256};

/// Why a secret could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `COUNTERSIGN_SECRET_KEY` is not 64 hex characters.
    #[error("COUNTERSIGN_SECRET_KEY must be 32 bytes written as 64 hex characters")]
    BadKey,
    /// `COUNTERSIGN_SECRET_KEY_PREVIOUS` is not 64 hex characters.
    #[error("COUNTERSIGN_SECRET_KEY_PREVIOUS must be 32 bytes written as 64 hex characters")]
    BadPreviousKey,
    /// `COUNTERSIGN_SECRET_KEY_PREVIOUS` without `COUNTERSIGN_SECRET_KEY`.
    #[error("COUNTERSIGN_SECRET_KEY_PREVIOUS is set but COUNTERSIGN_SECRET_KEY is not")]
    PreviousWithoutCurrent,
    /// The value was sealed with a key that is neither the current nor the
    /// previous one (a rotation whose old key was dropped too early).
    #[error(
        "a stored secret was sealed with key {key_id}, which is neither COUNTERSIGN_SECRET_KEY \
         nor COUNTERSIGN_SECRET_KEY_PREVIOUS"
    )]
    UnknownKey {
        /// The `key_id` stored with the value.
        key_id: String,
    },
    /// The key matched, but the value does not open: it was tampered with
    /// or moved to another owner.
    #[error("a stored secret could not be decrypted (tampered with, or moved)")]
    Undecryptable,
}

/// A sealed value as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Which key sealed it: the first 8 hex digits of the key's SHA-256.
    pub key_id: String,
    /// 24 bytes.
    pub nonce: Vec<u8>,
    /// Ciphertext and tag.
    pub ciphertext: Vec<u8>,
}

/// One key and its id.
#[derive(Clone)]
struct Key {
    /// The first 8 hex digits of the key's SHA-256.
    id: String,
    cipher: XChaCha20Poly1305,
}

impl Key {
    fn from_hex(hex_key: &str) -> Option<Self> {
        let bytes = hex::decode(hex_key.trim()).ok()?;
        if bytes.len() != 32 {
            return None;
        }
        let id = hex::encode(&Sha256::digest(&bytes)[..4]);
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes).ok()?;
        Some(Self { id, cipher })
    }
}

/// The deployment's encryption key, and during a rotation the previous one.
#[derive(Clone)]
pub struct SecretBox {
    /// Seals every new value; opens values whose `key_id` is its id.
    current: Key,
    /// Only opens (values whose `key_id` is its id).
    previous: Option<Key>,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretBox")
            .field("key_id", &self.current.id)
            .field("previous_key_id", &self.previous.as_ref().map(|k| &k.id))
            .finish_non_exhaustive()
    }
}

impl SecretBox {
    /// Reads a key written as 64 hex characters.
    pub fn from_hex(hex_key: &str) -> Result<Self, SecretError> {
        Ok(Self {
            current: Key::from_hex(hex_key).ok_or(SecretError::BadKey)?,
            previous: None,
        })
    }

    /// Also opens values sealed with `previous_hex` (64 hex characters),
    /// the key being rotated away from.
    pub fn with_previous(self, previous_hex: &str) -> Result<Self, SecretError> {
        Ok(Self {
            previous: Some(Key::from_hex(previous_hex).ok_or(SecretError::BadPreviousKey)?),
            ..self
        })
    }

    /// The box the settings describe: `None` without
    /// `COUNTERSIGN_SECRET_KEY`; an error when a key is malformed or only
    /// the previous key is set.
    pub fn from_config(config: &crate::Config) -> Result<Option<Self>, SecretError> {
        match (&config.secret_key, &config.secret_key_previous) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(SecretError::PreviousWithoutCurrent),
            (Some(current), None) => Self::from_hex(current.expose()).map(Some),
            (Some(current), Some(previous)) => Self::from_hex(current.expose())?
                .with_previous(previous.expose())
                .map(Some),
        }
    }

    /// The id new values are sealed under.
    pub fn key_id(&self) -> &str {
        &self.current.id
    }

    /// The previous key's id, during a rotation.
    pub fn previous_key_id(&self) -> Option<&str> {
        self.previous.as_ref().map(|k| k.id.as_str())
    }

    /// Encrypts `plaintext`, bound to `aad`.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Sealed {
        let nonce: [u8; 24] = rand::random();
        #[expect(clippy::expect_used, reason = "encryption into a Vec cannot fail")]
        let ciphertext = self
            .current
            .cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .expect("XChaCha20-Poly1305 encryption");
        Sealed {
            key_id: self.current.id.clone(),
            nonce: nonce.to_vec(),
            ciphertext,
        }
    }

    /// Decrypts a value sealed with the current or the previous key (the
    /// one its `key_id` names) and the same `aad`.
    pub fn open(&self, sealed: &Sealed, aad: &[u8]) -> Result<Vec<u8>, SecretError> {
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == sealed.key_id)
            .ok_or_else(|| SecretError::UnknownKey {
                key_id: sealed.key_id.clone(),
            })?;
        let nonce: [u8; 24] = sealed
            .nonce
            .as_slice()
            .try_into()
            .map_err(|_| SecretError::Undecryptable)?;
        key.cipher
            .decrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: &sealed.ciphertext,
                    aad,
                },
            )
            .map_err(|_| SecretError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn a_sealed_value_opens_only_with_the_same_key_and_associated_data() {
        let sb = SecretBox::from_hex(KEY).expect("key");
        let sealed = sb.seal(b"sk-live-123", b"user-a/anthropic");
        assert_ne!(sealed.ciphertext, b"sk-live-123".to_vec());
        assert_eq!(
            sb.open(&sealed, b"user-a/anthropic").expect("open"),
            b"sk-live-123"
        );
        assert!(
            sb.open(&sealed, b"user-b/anthropic").is_err(),
            "moved to another user"
        );

        let other = SecretBox::from_hex(&KEY.replace("00", "ff")).expect("key");
        assert!(
            other.open(&sealed, b"user-a/anthropic").is_err(),
            "another key"
        );

        let mut tampered = sealed.clone();
        tampered.ciphertext[0] ^= 1;
        assert!(sb.open(&tampered, b"user-a/anthropic").is_err(), "tampered");
    }

    #[test]
    fn during_a_rotation_both_keys_open_and_only_the_new_one_seals() {
        const NEW: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f";
        let old = SecretBox::from_hex(KEY).expect("key");
        let sealed_old = old.seal(b"token", b"aad");

        let rotating = SecretBox::from_hex(NEW)
            .expect("key")
            .with_previous(KEY)
            .expect("previous");
        assert_eq!(rotating.previous_key_id(), Some(old.key_id()));
        assert_eq!(
            rotating.open(&sealed_old, b"aad").expect("open"),
            b"token",
            "the previous key still opens"
        );
        let sealed_new = rotating.seal(b"token", b"aad");
        assert_eq!(
            sealed_new.key_id,
            rotating.key_id(),
            "seals with the new key"
        );
        assert_ne!(sealed_new.key_id, sealed_old.key_id);
        assert!(old.open(&sealed_new, b"aad").is_err(), "not the old key's");
        assert!(
            rotating.open(&sealed_old, b"other").is_err(),
            "aad still binds"
        );

        let only_new = SecretBox::from_hex(NEW).expect("key");
        assert!(
            matches!(
                only_new.open(&sealed_old, b"aad"),
                Err(SecretError::UnknownKey { ref key_id }) if *key_id == sealed_old.key_id
            ),
            "without the previous key the old value fails closed, naming its key"
        );
        // A forged key_id does not get a value tried under another key.
        let mut relabelled = sealed_old.clone();
        relabelled.key_id = only_new.key_id().to_owned();
        assert!(matches!(
            only_new.open(&relabelled, b"aad"),
            Err(SecretError::Undecryptable)
        ));
        assert!(!format!("{rotating:?}").contains(KEY));
        assert!(!format!("{rotating:?}").contains(NEW));
        assert!(
            SecretBox::from_hex(NEW)
                .expect("key")
                .with_previous("abc")
                .is_err()
        );
    }

    #[test]
    fn nonces_are_fresh_and_bad_keys_are_refused() {
        let sb = SecretBox::from_hex(KEY).expect("key");
        assert_ne!(sb.seal(b"x", b"").nonce, sb.seal(b"x", b"").nonce);
        for bad in [
            "",
            "abc",
            &KEY[..62],
            &format!("{KEY}00"),
            &KEY.replace('0', "g"),
        ] {
            assert!(SecretBox::from_hex(bad).is_err(), "{bad:?}");
        }
        assert!(!format!("{sb:?}").contains(KEY));
    }
}
