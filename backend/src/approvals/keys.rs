//! The ledger's HMAC keys: what a row's tag covers ([`Binding`]) and the
//! keys that sign it (`COUNTERSIGN_APPROVAL_KEY`) and still verify it
//! (`COUNTERSIGN_APPROVAL_KEY_PREVIOUS`, during a rotation).
//!
//! It reads no row and writes none: [`super::Row::verify`] asks it.

use crate::{
    Config,
    ids::{ChatId, ConnectorId, PendingCallId, TurnId, UserId},
};
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// One HMAC key and its id (the first 8 hex digits of its SHA-256).
#[derive(Clone)]
struct Key {
    id: String,
    mac: HmacSha256,
}

impl Key {
    fn new(bytes: &[u8]) -> anyhow::Result<Self> {
        anyhow::ensure!(
            bytes.len() >= 32,
            "COUNTERSIGN_APPROVAL_KEY must be at least 32 bytes (64 hex characters)"
        );
        let id = hex::encode(&Sha256::digest(bytes)[..4]);
        let mac = HmacSha256::new_from_slice(bytes)
            .map_err(|_| anyhow::anyhow!("unusable COUNTERSIGN_APPROVAL_KEY"))?;
        Ok(Self { id, mac })
    }

    fn from_hex(hex_key: &str) -> anyhow::Result<Self> {
        let bytes = hex::decode(hex_key.trim())
            .map_err(|_| anyhow::anyhow!("COUNTERSIGN_APPROVAL_KEY must be hex"))?;
        Self::new(&bytes)
    }
}

/// The keys that sign and verify ledger rows. Never printed.
#[derive(Clone)]
pub struct ApprovalKeys {
    current: Key,
    previous: Option<Key>,
}

impl std::fmt::Debug for ApprovalKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalKeys")
            .field("current", &self.current.id)
            .field("previous", &self.previous.as_ref().map(|k| &k.id))
            .finish()
    }
}

/// What the HMAC covers.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// Ledger id.
    pub id: PendingCallId,
    /// The only user who may decide it.
    pub user_id: UserId,
    /// Where the card is shown.
    pub chat_id: ChatId,
    /// The turn that waits for it (a turn grant is scoped to it).
    pub turn_id: TurnId,
    /// Re-checked as the user's, kept tool's connector at the claim.
    pub connector_id: ConnectorId,
    /// The connector URL the call was proposed for (and may only run on).
    pub destination_url: &'a str,
    /// Tool name on its server.
    pub tool_name: &'a str,
    /// SHA-256 of the canonical arguments.
    pub arguments_digest: &'a str,
    /// Expiry, in microseconds since the epoch (the database's precision).
    pub expires_at_micros: i128,
}

impl Binding<'_> {
    /// Length-prefixed fields, so no two bindings share their bytes.
    fn message(&self) -> Vec<u8> {
        let fields = [
            self.id.to_string(),
            self.user_id.to_string(),
            self.chat_id.to_string(),
            self.turn_id.to_string(),
            self.connector_id.to_string(),
            self.destination_url.to_owned(),
            self.tool_name.to_owned(),
            self.arguments_digest.to_owned(),
            self.expires_at_micros.to_string(),
        ];
        let mut message = b"countersign/approval/v2".to_vec();
        for field in fields {
            message.extend_from_slice(&(field.len() as u64).to_be_bytes());
            message.extend_from_slice(field.as_bytes());
        }
        message
    }
}

impl ApprovalKeys {
    /// Keys from settings. Without `COUNTERSIGN_APPROVAL_KEY`, a random key
    /// for this process only (with a warning): calls approved through
    /// another instance then fail closed.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let current = match &config.approval_key {
            Some(key) => Key::from_hex(key.expose())?,
            None => {
                tracing::warn!(
                    "COUNTERSIGN_APPROVAL_KEY is not set: using a key for this process only. \
                     Set the same key on every instance, or approved calls will fail on the others."
                );
                Key::new(&rand::random::<[u8; 32]>())?
            }
        };
        let previous = config
            .approval_key_previous
            .as_ref()
            .map(|k| Key::from_hex(k.expose()))
            .transpose()?;
        Ok(Self { current, previous })
    }

    /// Keys from raw bytes (tests).
    pub fn from_bytes(current: &[u8]) -> anyhow::Result<Self> {
        Ok(Self {
            current: Key::new(current)?,
            previous: None,
        })
    }

    /// Signs `binding`: the key id and the tag (hex).
    pub fn sign(&self, binding: &Binding<'_>) -> (String, String) {
        let mut mac = self.current.mac.clone();
        mac.update(&binding.message());
        (
            self.current.id.clone(),
            hex::encode(mac.finalize().into_bytes()),
        )
    }

    /// Whether `tag` is the HMAC of `binding` under the key `key_id`, in
    /// constant time.
    pub fn verify(&self, key_id: &str, binding: &Binding<'_>, tag: &str) -> bool {
        let key = std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|k| k.id == key_id);
        let (Some(key), Ok(tag)) = (key, hex::decode(tag)) else {
            return false;
        };
        let mut mac = key.mac.clone();
        mac.update(&binding.message());
        mac.verify_slice(&tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn binding<'a>(tool: &'a str, digest: &'a str) -> Binding<'a> {
        let id = PendingCallId(Uuid::from_u128(1));
        Binding {
            id,
            user_id: UserId(Uuid::from_u128(2)),
            chat_id: ChatId(Uuid::from_u128(3)),
            turn_id: TurnId(Uuid::from_u128(4)),
            connector_id: ConnectorId(Uuid::from_u128(5)),
            destination_url: "https://mcp.example/mcp",
            tool_name: tool,
            arguments_digest: digest,
            expires_at_micros: 1_700_000_000_000_000,
        }
    }

    #[test]
    fn the_hmac_binds_every_field_and_names_its_key() {
        let keys = ApprovalKeys::from_bytes(&[7; 32]).expect("key");
        let b = binding("search", "ab");
        let (key_id, tag) = keys.sign(&b);
        assert!(keys.verify(&key_id, &b, &tag));
        assert!(!keys.verify(&key_id, &binding("delete", "ab"), &tag));
        assert!(!keys.verify(&key_id, &binding("search", "ac"), &tag));
        let mut later = b;
        later.expires_at_micros += 1;
        assert!(!keys.verify(&key_id, &later, &tag));
        let mut other_user = b;
        other_user.user_id = UserId(Uuid::from_u128(9));
        assert!(!keys.verify(&key_id, &other_user, &tag));
        let mut elsewhere = b;
        elsewhere.destination_url = "https://mcp.example.evil/mcp";
        assert!(!keys.verify(&key_id, &elsewhere, &tag), "another URL");
        assert!(!keys.verify("00000000", &b, &tag), "unknown key id");
        assert!(!keys.verify(&key_id, &b, "zz"), "not hex");
        let other = ApprovalKeys::from_bytes(&[8; 32]).expect("key");
        assert!(!other.verify(&key_id, &b, &tag));
        // Field boundaries are part of the message.
        assert_ne!(binding("ab", "c").message(), binding("a", "bc").message());
    }

    #[test]
    fn keys_are_at_least_256_bits_and_never_printed() {
        assert!(ApprovalKeys::from_bytes(&[1; 31]).is_err());
        let keys = ApprovalKeys::from_bytes(&[1; 32]).expect("key");
        let printed = format!("{keys:?}");
        assert!(!printed.contains("0101"), "{printed}");
    }
}
