//! Secrets at rest (DESIGN §3): XChaCha20-Poly1305 with the key from
//! `COUNTERSIGN_SECRET_KEY`, a random 192-bit nonce per value, and
//! associated data that binds each ciphertext to its owner and purpose, so
//! a row copied onto another user's cannot be opened there.

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
    /// The value was sealed with another key (rotation) or was tampered with.
    #[error("a stored secret could not be decrypted (wrong key, or tampered with)")]
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

/// The deployment's encryption key.
#[derive(Clone)]
pub struct SecretBox {
    key_id: String,
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretBox")
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl SecretBox {
    /// Reads a key written as 64 hex characters.
    pub fn from_hex(hex_key: &str) -> Result<Self, SecretError> {
        let bytes = hex::decode(hex_key.trim()).map_err(|_| SecretError::BadKey)?;
        if bytes.len() != 32 {
            return Err(SecretError::BadKey);
        }
        let key_id = hex::encode(&Sha256::digest(&bytes)[..4]);
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| SecretError::BadKey)?;
        Ok(Self { key_id, cipher })
    }

    /// Encrypts `plaintext`, bound to `aad`.
    pub fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Sealed {
        let nonce: [u8; 24] = rand::random();
        #[expect(clippy::expect_used, reason = "encryption into a Vec cannot fail")]
        let ciphertext = self
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
            key_id: self.key_id.clone(),
            nonce: nonce.to_vec(),
            ciphertext,
        }
    }

    /// Decrypts a value sealed with this key and the same `aad`.
    pub fn open(&self, sealed: &Sealed, aad: &[u8]) -> Result<Vec<u8>, SecretError> {
        let nonce: [u8; 24] = sealed
            .nonce
            .as_slice()
            .try_into()
            .map_err(|_| SecretError::Undecryptable)?;
        if sealed.key_id != self.key_id {
            return Err(SecretError::Undecryptable);
        }
        self.cipher
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
