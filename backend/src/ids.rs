//! Typed ids for the places where ids of different kinds travel together
//! (a turn's [`ToolContext`](crate::tools::ToolContext), a ledger row and
//! what its HMAC binds, an activity entry): a chat id passed where a user
//! id belongs no longer compiles.
//!
//! Each is a `Copy` newtype over [`Uuid`] that binds and decodes as the
//! `uuid` column itself (`#[sqlx(transparent)]`), serialises as the bare
//! UUID string (`#[serde(transparent)]`) and prints as the UUID does, so
//! SQL, JSON and HMAC messages see the same bytes as before.
//!
//! What it deliberately does not do: chase every `Uuid` in the code base.
//! Handlers and single-id functions still take a `Uuid`; `From` converts
//! at those edges.

use std::fmt;
use uuid::Uuid;

macro_rules! id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, sqlx::Type,
        )]
        #[sqlx(transparent)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A fresh random id.
            pub fn new_v4() -> Self {
                Self(Uuid::new_v4())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }
    };
}

id!(
    /// A user (`users.id`).
    UserId
);
id!(
    /// A chat (`chats.id`).
    ChatId
);
id!(
    /// A turn (`turns.id`).
    TurnId
);
id!(
    /// A connector (`connectors.id`).
    ConnectorId
);
id!(
    /// A row of the approval ledger (`mcp_pending_calls.id`).
    PendingCallId
);

/// Who is calling, from where: the three ids a tool call carries (the
/// model's user, the chat, the turn), which the type keeps apart.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext {
    /// The user whose model made the call.
    pub user_id: UserId,
    /// The chat.
    pub chat_id: ChatId,
    /// The turn.
    pub turn_id: TurnId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_prints_and_serialises_exactly_as_its_uuid() {
        let uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let id = PendingCallId(uuid);
        assert_eq!(
            id.to_string(),
            uuid.to_string(),
            "HMAC messages use Display"
        );
        assert_eq!(
            serde_json::to_string(&TurnId(uuid)).expect("json"),
            serde_json::to_string(&uuid).expect("json")
        );
        assert_eq!(Uuid::from(UserId::from(uuid)), uuid);
    }
}
