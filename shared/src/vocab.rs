//! The API's vocabulary: every status, decision, grant, origin, review
//! state, activity kind and outcome, turn ending and `no_prose_reason` as
//! a serde enum (DESIGN §5–§8), so the compiler, not a grep, says who
//! produces and who consumes each word.
//!
//! Each enum serialises to its wire word (`rename_all = "snake_case"`),
//! byte for byte what the API sent as a string before, and has an
//! `Unknown` catch-all: an older client reading a newer server's word gets
//! `Unknown` instead of failing the whole event or list. The server never
//! produces `Unknown`; a request carrying an unknown word is refused by the
//! handler with the same message as before.
//!
//! Reading is written by hand rather than with `#[serde(other)]`: it reads
//! a JSON string, exactly as the `String` field it replaces did, and maps
//! it with [`FromStr`]. So anything but a string fails with the very error
//! the string field gave ("invalid type: …, expected a string"), and the
//! externally-tagged map form a derived enum would also take
//! (`{"approve": null}`) is refused, as it always was.
//!
//! With the `sqlx` feature (the server's, never the web app's) each enum
//! is also a Postgres `text` value: it decodes a column with [`FromStr`]
//! (a word the vocabulary does not know is a decode error, not
//! `Unknown`: the tables' CHECK constraints admit only known words) and
//! encodes [`as_str`](PendingCallStatus::as_str). Compile-checked queries
//! read it with a type override (`status as "status: PendingCallStatus"`)
//! and bind `as_str()`, which the macros check against the `text` parameter.

use serde::{Deserialize, Serialize};
use std::{fmt, str::FromStr};

/// A word that is not in a vocabulary (what [`FromStr`] answers for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWord {
    /// The enum that was asked.
    pub vocabulary: &'static str,
    /// The word it does not know.
    pub word: String,
}

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\" is not a {} word", self.word, self.vocabulary)
    }
}

impl std::error::Error for UnknownWord {}

/// Declares one vocabulary: the enum with its serde attributes and
/// `Unknown`, `as_str` (the wire word), `Display`, `FromStr`,
/// `TryFrom<String>` and `ALL` (every known word, for tests and lists).
/// The wire words are written out by hand; the round-trip tests below
/// check that serde writes exactly them.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A word this build does not know (a newer peer sent it).
            /// Never produced by this server.
            Unknown,
        }

        impl<'de> Deserialize<'de> for $name {
            /// A JSON string, as the `String` field this replaced read it;
            /// a word this build does not know is `Unknown`.
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(|word| Self::from_wire(&word))
            }
        }

        impl $name {
            /// Every known word, in declaration order (not `Unknown`).
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire word (`"unknown"` for [`Self::Unknown`]).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $wire, )+
                    Self::Unknown => "unknown",
                }
            }

            /// The variant for a wire word; `Unknown` for any other word.
            pub fn from_wire(word: &str) -> Self {
                word.parse().unwrap_or(Self::Unknown)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;

            /// Only the known words: `"unknown"` is not one.
            fn from_str(word: &str) -> Result<Self, UnknownWord> {
                match word {
                    $( $wire => Ok(Self::$variant), )+
                    _ => Err(UnknownWord {
                        vocabulary: stringify!($name),
                        word: word.to_owned(),
                    }),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = UnknownWord;

            fn try_from(word: String) -> Result<Self, UnknownWord> {
                word.parse()
            }
        }

        /// A string of the known words: the server never sends
        /// `unknown`, and a client should read a word it does not know as
        /// it (DESIGN §8).
        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($wire),+]))
                    .into()
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        #[cfg(feature = "sqlx")]
        impl sqlx::Type<sqlx::Postgres> for $name {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }

            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        #[cfg(feature = "sqlx")]
        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $name {
            fn decode(
                value: sqlx::postgres::PgValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(<&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?.parse()?)
            }
        }

        #[cfg(feature = "sqlx")]
        impl sqlx::Encode<'_, sqlx::Postgres> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<sqlx::Postgres>>::encode(self.as_str(), buf)
            }
        }
    };
}

vocabulary! {
    /// Where a pending call stands in the approval ledger (DESIGN §6):
    /// `pending → approved → executing → executed | failed`,
    /// `pending → denied | expired`. Also the `status` of a decision's
    /// answer (`approved` or `denied`).
    pub enum PendingCallStatus {
        /// Waiting for the user.
        Pending = "pending",
        /// The user approved it; the policy asks for a second approval,
        /// which an approver who is not the user gives (or refuses).
        AwaitingSecond = "awaiting_second",
        /// The user approved it; not yet claimed.
        Approved = "approved",
        /// Claimed by its turn; running.
        Executing = "executing",
        /// It ran (the call completed).
        Executed = "executed",
        /// It errored or was interrupted; the approval is spent.
        Failed = "failed",
        /// The user declined it (or the turn stopped).
        Denied = "denied",
        /// Nobody decided in time.
        Expired = "expired",
    }
}

impl PendingCallStatus {
    /// No transition leaves it (the sweep may delete it).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Executed | Self::Failed | Self::Denied | Self::Expired
        )
    }
}

vocabulary! {
    /// The `decision` of `POST /api/mcp-pending-calls/{id}`.
    pub enum Decision {
        /// Run it.
        Approve = "approve",
        /// Do not.
        Deny = "deny",
    }
}

vocabulary! {
    /// How far an approval reaches: the `grant` of a decision, of an
    /// activity entry, and each of a card's `offered_grants`.
    pub enum GrantKind {
        /// "Allow once": this call only.
        Once = "once",
        /// "Allow for this turn": this connector + tool, this turn.
        Turn = "turn",
        /// "Always allow this tool": a durable rule for this descriptor.
        Always = "always",
    }
}

vocabulary! {
    /// How a card ended: the `decision` of `mcp_confirmation_resolved`.
    pub enum Resolution {
        /// The user approved it.
        Approved = "approved",
        /// The user declined it (or the turn stopped).
        Denied = "denied",
        /// Nobody decided in time.
        Expired = "expired",
    }
}

vocabulary! {
    /// What let an MCP call run: the `origin` of `mcp_tool_call`.
    pub enum CallOrigin {
        /// The user approved its card.
        Approved = "approved",
        /// "Allow for this turn" on an earlier card of the same turn.
        TurnGrant = "turn_grant",
        /// The user's always-allow rule for this descriptor.
        AlwaysGrant = "always_grant",
        /// Trusted annotations declare it read-only and closed-world.
        TrustedAnnotations = "trusted_annotations",
        /// A rule with the effect "allow" covers it (`rule` names which).
        Rule = "rule",
    }
}

vocabulary! {
    /// Where a string in a proposed call's arguments came from
    /// (`provenance.values[].origin`, issue 16): the strongest origin of
    /// any of its matched spans, else `model`.
    pub enum ValueOrigin {
        /// A long span of it was typed by the user in this chat.
        Typed = "typed",
        /// A long span of it is in an earlier tool result of this chat.
        ToolResult = "tool_result",
        /// No long span of it was seen before: the model wrote it.
        Model = "model",
    }
}

vocabulary! {
    /// How a matched span was written in the argument: as it was, or
    /// encoded (the match was found in the decoded text).
    pub enum SpanEncoding {
        /// As it was seen (after normalising case, width and spacing).
        Plain = "plain",
        /// Base64 (standard or URL-safe alphabet).
        Base64 = "base64",
        /// Percent-encoding (`%20`, `+` for space), as in a URL.
        Percent = "percent",
        /// Hexadecimal bytes.
        Hex = "hex",
    }
}

vocabulary! {
    /// A tool's review state (DESIGN §5): new → kept | declined;
    /// kept → changed when the server's descriptor moves.
    pub enum ReviewState {
        /// Listed by the server, not yet reviewed: off.
        New = "new",
        /// Kept by the user: offered as reviewed.
        Kept = "kept",
        /// Declined: never offered, never badged again.
        Declined = "declined",
        /// Kept, but the server's descriptor moved since.
        Changed = "changed",
    }
}

vocabulary! {
    /// The `status` of `mcp_tool_call` and `tool_result`.
    pub enum ToolCallStatus {
        /// It ran and succeeded.
        Ok = "ok",
        /// It failed or could not run (`error` says why).
        Error = "error",
    }
}

vocabulary! {
    /// The `kind` of an activity entry.
    pub enum ActivityKind {
        /// What decided a call (before it runs, or when it will not).
        Decided = "decided",
        /// How it ended.
        Outcome = "outcome",
        /// An administrator changed the instance's policy.
        PolicyChanged = "policy_changed",
        /// An administrator changed an account (disabled, enabled, made
        /// or unmade an admin, reset its password).
        UserChanged = "user_changed",
        /// The user signed in to a connector's account (OAuth), perhaps
        /// another one than before, or out of it: later calls act as
        /// that account.
        ConnectorAccountChanged = "connector_account_changed",
        /// An administrator read another account's activity log (or
        /// every account's), or exported it.
        ActivityRead = "activity_read",
        /// A call's result waited for the user's review before the model
        /// read it: how the review ended (`result_review`).
        ResultReviewed = "result_reviewed",
        /// The user approved a call the policy gives a second approver:
        /// the first of its two decisions (the `decided` entry that
        /// follows names the approver, `second_approver`).
        FirstApproval = "first_approval",
    }
}

vocabulary! {
    /// The `decision` of an activity entry: a card's resolution, or the
    /// rule that let the call run.
    pub enum ActivityDecision {
        /// The user approved its card.
        Approved = "approved",
        /// The user declined it.
        Denied = "denied",
        /// Nobody decided in time.
        Expired = "expired",
        /// An earlier "Allow for this turn".
        TurnGrant = "turn_grant",
        /// The user's always-allow rule.
        AlwaysGrant = "always_grant",
        /// Trusted annotations.
        TrustedAnnotations = "trusted_annotations",
        /// A rule allowed it (the entry's `rule` names which).
        Rule = "rule",
        /// A rule with the effect "deny" refused it: nobody was asked and
        /// nothing ran.
        DeniedByRule = "denied_by_rule",
    }
}

vocabulary! {
    /// What a rule does to a call it matches (DESIGN §5 "Rules").
    pub enum RuleEffect {
        /// The call runs without a card (never a flagged or changed one).
        Allow = "allow",
        /// The call always asks, whatever grant or trust exists.
        Ask = "ask",
        /// The call is refused: nobody is asked and nothing runs.
        Deny = "deny",
    }
}

vocabulary! {
    /// Whose a rule is.
    pub enum RuleScope {
        /// The user's own, for their calls only.
        User = "user",
        /// An administrator's, for everyone's calls; decides before any
        /// user's rule.
        Admin = "admin",
    }
}

vocabulary! {
    /// How a rule's condition tests an argument.
    pub enum ConditionOp {
        /// The value is exactly this JSON value.
        Equals = "equals",
        /// The value is exactly one of these JSON values.
        OneOf = "one_of",
        /// The text matches this glob (`*`, `?`, `[…]`), ignoring case.
        Glob = "glob",
        /// The text ends with this, ignoring case.
        EndsWith = "ends_with",
        /// The number is at most this.
        AtMost = "at_most",
        /// The number is at least this.
        AtLeast = "at_least",
        /// The call's destinations (as the card's "Sends to" lists them)
        /// are in this list of domains, hosts and addresses.
        DestinationIn = "destination_in",
    }
}

impl From<Resolution> for ActivityDecision {
    fn from(resolution: Resolution) -> Self {
        match resolution {
            Resolution::Approved => Self::Approved,
            Resolution::Denied => Self::Denied,
            Resolution::Expired => Self::Expired,
            Resolution::Unknown => Self::Unknown,
        }
    }
}

impl From<CallOrigin> for ActivityDecision {
    fn from(origin: CallOrigin) -> Self {
        match origin {
            CallOrigin::Approved => Self::Approved,
            CallOrigin::TurnGrant => Self::TurnGrant,
            CallOrigin::AlwaysGrant => Self::AlwaysGrant,
            CallOrigin::TrustedAnnotations => Self::TrustedAnnotations,
            CallOrigin::Rule => Self::Rule,
            CallOrigin::Unknown => Self::Unknown,
        }
    }
}

vocabulary! {
    /// The `outcome` of an activity entry.
    pub enum ActivityOutcome {
        /// Decided, about to run.
        Running = "running",
        /// It will not run (declined or expired).
        NotRun = "not_run",
        /// It ran and succeeded.
        Ok = "ok",
        /// It failed.
        Error = "error",
    }
}

impl From<ToolCallStatus> for ActivityOutcome {
    fn from(status: ToolCallStatus) -> Self {
        match status {
            ToolCallStatus::Ok => Self::Ok,
            ToolCallStatus::Error => Self::Error,
            ToolCallStatus::Unknown => Self::Unknown,
        }
    }
}

vocabulary! {
    /// How a turn ended: the `status` of `turn_finished` and of a finished
    /// turn in a chat's detail.
    pub enum TurnEnding {
        /// Finished normally.
        Done = "done",
        /// It failed (or its process died).
        Failed = "failed",
        /// The user pressed Stop.
        Cancelled = "cancelled",
    }
}

vocabulary! {
    /// Why a turn ended without model text on purpose (`turn_finished`).
    pub enum NoProseReason {
        /// Every call of the turn was declined or expired.
        Declined = "declined",
    }
}

vocabulary! {
    /// The `status` of a stored message.
    pub enum MessageStatus {
        /// Written in full.
        Complete = "complete",
        /// The user pressed Stop while it was written.
        Stopped = "stopped",
        /// The turn failed while it was written.
        Failed = "failed",
    }
}

vocabulary! {
    /// A connector's last Test/Refresh.
    pub enum ConnectorStatus {
        /// Never tested.
        Untested = "untested",
        /// The last one worked.
        Ok = "ok",
        /// The last one failed (`last_error` says why).
        Error = "error",
    }
}

vocabulary! {
    /// How Countersign authenticates to a connector (`auth.type`,
    /// `auth_type`).
    pub enum AuthType {
        /// No credentials.
        None = "none",
        /// `Authorization: Bearer …`.
        Bearer = "bearer",
        /// Custom headers.
        Headers = "headers",
        /// OAuth 2.1: the user signs in at the server's authorization
        /// server (DESIGN §2 "Connector authorization").
        #[serde(rename = "oauth")]
        OAuth = "oauth",
    }
}

vocabulary! {
    /// Where an OAuth connector's sign-in stands (`oauth_status`).
    pub enum OAuthStatus {
        /// It has tokens for its URL.
        Connected = "connected",
        /// Never signed in, a refresh was refused, or its URL changed.
        NeedsSignIn = "needs_sign_in",
        /// Not an OAuth connector.
        NotApplicable = "not_applicable",
    }
}

vocabulary! {
    /// How a server asks the user for input (DESIGN §6a): a form from a
    /// requested schema, or a URL to open.
    pub enum InputMode {
        /// Fields from `requested_schema`.
        Form = "form",
        /// A page the user may open.
        Url = "url",
    }
}

vocabulary! {
    /// The `action` of `POST /api/mcp-input-requests/{id}`: the three
    /// answers MCP gives a server.
    pub enum InputAction {
        /// Send the content (form) or say the URL was opened (url).
        Accept = "accept",
        /// Say no.
        Decline = "decline",
        /// Dismiss without choosing.
        Cancel = "cancel",
    }
}

vocabulary! {
    /// Where an input request stands: `pending → accepted | declined |
    /// cancelled | expired`.
    pub enum InputRequestStatus {
        /// Waiting for the user.
        Pending = "pending",
        /// The user answered (the content went to the server).
        Accepted = "accepted",
        /// The user said no.
        Declined = "declined",
        /// The user dismissed it, or the turn stopped.
        Cancelled = "cancelled",
        /// Nobody answered in time.
        Expired = "expired",
    }
}

vocabulary! {
    /// The `action` of `POST /api/mcp-pending-calls/{id}/result`: what
    /// becomes of a result the user reviews before the model reads it.
    pub enum ResultAction {
        /// The model reads the result as it is.
        Pass = "pass",
        /// The model reads it with the chosen spans as `[redacted]`.
        Redact = "redact",
        /// The model reads only that the user withheld it.
        Withhold = "withhold",
    }
}

vocabulary! {
    /// Where a result under review stands: `waiting → passed | redacted |
    /// withheld | expired`. Expired, a crash or a Stop withhold it: an
    /// unreviewed result never reaches the model.
    pub enum ResultReviewStatus {
        /// Waiting for the user.
        Waiting = "waiting",
        /// Passed whole.
        Passed = "passed",
        /// Passed with spans redacted.
        Redacted = "redacted",
        /// Withheld by the user.
        Withheld = "withheld",
        /// Nobody reviewed it in time (or the turn ended): withheld.
        Expired = "expired",
    }
}

vocabulary! {
    /// Why a result waits for review.
    pub enum ResultReviewReason {
        /// The instruction detector marked it: it gives the assistant
        /// instructions.
        Instructions = "instructions",
        /// The user's "Review results first" on the connector.
        Connector = "connector",
        /// The admin policy's `review_results_tools` names the tool.
        Policy = "policy",
    }
}

vocabulary! {
    /// What waits for the user (`GET /api/waiting`).
    pub enum WaitingKind {
        /// A tool call to allow or decline.
        Approval = "approval",
        /// A form or a link a server asks the user to fill in or open.
        Input = "input",
        /// A tool's result to pass, redact or withhold before the model
        /// reads it.
        Review = "review",
    }
}

impl ResultReviewStatus {
    /// The status an action leads to.
    pub fn of(action: ResultAction) -> Self {
        match action {
            ResultAction::Pass => Self::Passed,
            ResultAction::Redact => Self::Redacted,
            ResultAction::Withhold => Self::Withheld,
            ResultAction::Unknown => Self::Unknown,
        }
    }
}

impl InputRequestStatus {
    /// The status an answer leads to.
    pub fn of(action: InputAction) -> Self {
        match action {
            InputAction::Accept => Self::Accepted,
            InputAction::Decline => Self::Declined,
            InputAction::Cancel => Self::Cancelled,
            InputAction::Unknown => Self::Unknown,
        }
    }
}

vocabulary! {
    /// One thing a tool's reviewed annotations say about its risk
    /// ([`crate::risk::assess`]; DESIGN §9): the server's claims, never
    /// verified, and a missing hint read as MCP's cautious default.
    pub enum RiskFlag {
        /// No hints at all: shown as the riskiest kind, never as safe.
        DeclaresNothing = "declares_nothing",
        /// `destructiveHint` true, or left to its default: may delete or
        /// overwrite data.
        DeletesData = "deletes_data",
        /// Not read-only, but declares it deletes nothing.
        ChangesData = "changes_data",
        /// `readOnlyHint` true.
        ReadOnly = "read_only",
        /// `openWorldHint` true or absent: reaches outside its server.
        ReachesOutside = "reaches_outside",
        /// `openWorldHint` false.
        StaysInside = "stays_inside",
    }
}

vocabulary! {
    /// What a destination of a call is (DESIGN §6.2 "Sends to").
    pub enum DestinationKind {
        /// The host of a URL in the arguments.
        Host = "host",
        /// An e-mail address.
        Email = "email",
        /// The value of an argument whose name names a destination (`to`,
        /// `channel`, `webhook`, …) that is neither of the above.
        Named = "named",
    }
}

vocabulary! {
    /// Why a character of an argument is flagged on the card (DESIGN §6.2):
    /// what the bytes are, not how they look.
    pub enum CharacterKind {
        /// A letter of another script that looks like an ASCII one (the
        /// Cyrillic `і` of `fіrm`).
        LookAlike = "look_alike",
        /// A character that shows nothing: a zero-width space or joiner, a
        /// soft hyphen, a word joiner, a byte order mark.
        Invisible = "invisible",
        /// A bidirectional control, which reorders what is shown around it.
        Bidi = "bidi",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// Every variant writes exactly its wire word, reads back from it, and
    /// `as_str`, `Display` and `FromStr` agree; the table covers `ALL`;
    /// a word the enum does not know reads as `Unknown`.
    fn check<T>(all: &[T], table: &[(T, &str)])
    where
        T: Serialize + DeserializeOwned + FromStr<Err = UnknownWord> + fmt::Display + fmt::Debug,
        T: PartialEq + Copy,
    {
        assert_eq!(all.len(), table.len(), "the table names every variant");
        for (variant, word) in table {
            assert!(all.contains(variant), "{variant:?} is in ALL");
            let json = serde_json::to_string(variant).expect("serialise");
            assert_eq!(json, format!("\"{word}\""), "{variant:?} on the wire");
            let back: T = serde_json::from_str(&json).expect("deserialise");
            assert_eq!(back, *variant, "{word} reads back");
            assert_eq!(variant.to_string(), *word, "Display of {variant:?}");
            assert_eq!(word.parse::<T>().ok(), Some(*variant), "FromStr of {word}");
        }
        let newer: T = serde_json::from_str("\"a_word_from_a_newer_server\"").expect("unknown");
        assert_eq!(
            newer.to_string(),
            "unknown",
            "an unknown word reads as Unknown"
        );
        assert!("a_word_from_a_newer_server".parse::<T>().is_err());
        assert!(
            "unknown".parse::<T>().is_err(),
            "Unknown is not a word to parse"
        );
        // Anything but a string fails as the `String` field did.
        for (json, error) in [
            ("7", "invalid type: integer `7`, expected a string"),
            ("null", "invalid type: null, expected a string"),
            (r#"{"ok":null}"#, "invalid type: map, expected a string"),
            (r#"["ok"]"#, "invalid type: sequence, expected a string"),
        ] {
            let err = serde_json::from_str::<T>(json).expect_err(json).to_string();
            let was = serde_json::from_str::<String>(json)
                .expect_err(json)
                .to_string();
            assert_eq!(err, was, "{json}: the string field's error");
            assert!(err.starts_with(error), "{json}: {err}");
        }
    }

    #[test]
    fn pending_call_statuses_are_their_wire_words() {
        use PendingCallStatus::*;
        check(
            PendingCallStatus::ALL,
            &[
                (Pending, "pending"),
                (AwaitingSecond, "awaiting_second"),
                (Approved, "approved"),
                (Executing, "executing"),
                (Executed, "executed"),
                (Failed, "failed"),
                (Denied, "denied"),
                (Expired, "expired"),
            ],
        );
        assert_eq!(PendingCallStatus::Unknown.as_str(), "unknown");
        assert_eq!(PendingCallStatus::from_wire("later"), Unknown);
        let terminal: Vec<_> = PendingCallStatus::ALL
            .iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [&Executed, &Failed, &Denied, &Expired]);
    }

    #[test]
    fn provenance_words_are_their_wire_words() {
        use ValueOrigin::*;
        check(
            ValueOrigin::ALL,
            &[
                (Typed, "typed"),
                (ToolResult, "tool_result"),
                (Model, "model"),
            ],
        );
        use SpanEncoding::*;
        check(
            SpanEncoding::ALL,
            &[
                (Plain, "plain"),
                (Base64, "base64"),
                (Percent, "percent"),
                (Hex, "hex"),
            ],
        );
    }

    #[test]
    fn decisions_are_their_wire_words() {
        use Decision::*;
        check(Decision::ALL, &[(Approve, "approve"), (Deny, "deny")]);
    }

    #[test]
    fn grant_kinds_are_their_wire_words() {
        use GrantKind::*;
        check(
            GrantKind::ALL,
            &[(Once, "once"), (Turn, "turn"), (Always, "always")],
        );
    }

    #[test]
    fn resolutions_are_their_wire_words() {
        use Resolution::*;
        check(
            Resolution::ALL,
            &[
                (Approved, "approved"),
                (Denied, "denied"),
                (Expired, "expired"),
            ],
        );
    }

    #[test]
    fn result_review_words_are_their_wire_words() {
        use ResultAction as A;
        check(
            A::ALL,
            &[
                (A::Pass, "pass"),
                (A::Redact, "redact"),
                (A::Withhold, "withhold"),
            ],
        );
        use ResultReviewStatus as S;
        check(
            S::ALL,
            &[
                (S::Waiting, "waiting"),
                (S::Passed, "passed"),
                (S::Redacted, "redacted"),
                (S::Withheld, "withheld"),
                (S::Expired, "expired"),
            ],
        );
        use ResultReviewReason as R;
        check(
            R::ALL,
            &[
                (R::Instructions, "instructions"),
                (R::Connector, "connector"),
                (R::Policy, "policy"),
            ],
        );
        use WaitingKind as W;
        check(
            W::ALL,
            &[
                (W::Approval, "approval"),
                (W::Input, "input"),
                (W::Review, "review"),
            ],
        );
    }

    #[test]
    fn input_words_are_their_wire_words() {
        use InputAction::*;
        check(
            InputAction::ALL,
            &[(Accept, "accept"), (Decline, "decline"), (Cancel, "cancel")],
        );
        check(
            InputMode::ALL,
            &[(InputMode::Form, "form"), (InputMode::Url, "url")],
        );
        use InputRequestStatus as S;
        check(
            S::ALL,
            &[
                (S::Pending, "pending"),
                (S::Accepted, "accepted"),
                (S::Declined, "declined"),
                (S::Cancelled, "cancelled"),
                (S::Expired, "expired"),
            ],
        );
        assert_eq!(S::of(Accept), S::Accepted);
        assert_eq!(S::of(Decline), S::Declined);
        assert_eq!(S::of(Cancel), S::Cancelled);
    }

    #[test]
    fn call_origins_are_their_wire_words() {
        use CallOrigin::*;
        check(
            CallOrigin::ALL,
            &[
                (Approved, "approved"),
                (TurnGrant, "turn_grant"),
                (AlwaysGrant, "always_grant"),
                (TrustedAnnotations, "trusted_annotations"),
                (Rule, "rule"),
            ],
        );
    }

    #[test]
    fn rule_words_are_their_wire_words() {
        check(
            RuleEffect::ALL,
            &[
                (RuleEffect::Allow, "allow"),
                (RuleEffect::Ask, "ask"),
                (RuleEffect::Deny, "deny"),
            ],
        );
        check(
            RuleScope::ALL,
            &[(RuleScope::User, "user"), (RuleScope::Admin, "admin")],
        );
        use ConditionOp::*;
        check(
            ConditionOp::ALL,
            &[
                (Equals, "equals"),
                (OneOf, "one_of"),
                (Glob, "glob"),
                (EndsWith, "ends_with"),
                (AtMost, "at_most"),
                (AtLeast, "at_least"),
                (DestinationIn, "destination_in"),
            ],
        );
    }

    #[test]
    fn review_states_are_their_wire_words() {
        use ReviewState::*;
        check(
            ReviewState::ALL,
            &[
                (New, "new"),
                (Kept, "kept"),
                (Declined, "declined"),
                (Changed, "changed"),
            ],
        );
    }

    #[test]
    fn tool_call_statuses_are_their_wire_words() {
        use ToolCallStatus::*;
        check(ToolCallStatus::ALL, &[(Ok, "ok"), (Error, "error")]);
    }

    #[test]
    fn destination_words_are_their_wire_words() {
        check(
            DestinationKind::ALL,
            &[
                (DestinationKind::Host, "host"),
                (DestinationKind::Email, "email"),
                (DestinationKind::Named, "named"),
            ],
        );
    }

    #[test]
    fn character_words_are_their_wire_words() {
        check(
            CharacterKind::ALL,
            &[
                (CharacterKind::LookAlike, "look_alike"),
                (CharacterKind::Invisible, "invisible"),
                (CharacterKind::Bidi, "bidi"),
            ],
        );
    }

    #[test]
    fn activity_words_are_their_wire_words() {
        check(
            ActivityKind::ALL,
            &[
                (ActivityKind::Decided, "decided"),
                (ActivityKind::Outcome, "outcome"),
                (ActivityKind::PolicyChanged, "policy_changed"),
                (ActivityKind::UserChanged, "user_changed"),
                (
                    ActivityKind::ConnectorAccountChanged,
                    "connector_account_changed",
                ),
                (ActivityKind::ActivityRead, "activity_read"),
                (ActivityKind::ResultReviewed, "result_reviewed"),
                (ActivityKind::FirstApproval, "first_approval"),
            ],
        );
        use ActivityDecision::*;
        check(
            ActivityDecision::ALL,
            &[
                (Approved, "approved"),
                (Denied, "denied"),
                (Expired, "expired"),
                (TurnGrant, "turn_grant"),
                (AlwaysGrant, "always_grant"),
                (TrustedAnnotations, "trusted_annotations"),
                (Rule, "rule"),
                (DeniedByRule, "denied_by_rule"),
            ],
        );
        check(
            ActivityOutcome::ALL,
            &[
                (ActivityOutcome::Running, "running"),
                (ActivityOutcome::NotRun, "not_run"),
                (ActivityOutcome::Ok, "ok"),
                (ActivityOutcome::Error, "error"),
            ],
        );
    }

    #[test]
    fn the_narrower_words_widen_to_the_same_activity_word() {
        for r in Resolution::ALL {
            assert_eq!(ActivityDecision::from(*r).as_str(), r.as_str());
        }
        for o in CallOrigin::ALL {
            assert_eq!(ActivityDecision::from(*o).as_str(), o.as_str());
        }
        for s in ToolCallStatus::ALL {
            assert_eq!(ActivityOutcome::from(*s).as_str(), s.as_str());
        }
    }

    #[test]
    fn turn_endings_and_messages_are_their_wire_words() {
        use TurnEnding::*;
        check(
            TurnEnding::ALL,
            &[(Done, "done"), (Failed, "failed"), (Cancelled, "cancelled")],
        );
        check(NoProseReason::ALL, &[(NoProseReason::Declined, "declined")]);
        check(
            MessageStatus::ALL,
            &[
                (MessageStatus::Complete, "complete"),
                (MessageStatus::Stopped, "stopped"),
                (MessageStatus::Failed, "failed"),
            ],
        );
    }

    #[test]
    fn connector_words_are_their_wire_words() {
        check(
            ConnectorStatus::ALL,
            &[
                (ConnectorStatus::Untested, "untested"),
                (ConnectorStatus::Ok, "ok"),
                (ConnectorStatus::Error, "error"),
            ],
        );
        check(
            AuthType::ALL,
            &[
                (AuthType::None, "none"),
                (AuthType::Bearer, "bearer"),
                (AuthType::Headers, "headers"),
                (AuthType::OAuth, "oauth"),
            ],
        );
        check(
            OAuthStatus::ALL,
            &[
                (OAuthStatus::Connected, "connected"),
                (OAuthStatus::NeedsSignIn, "needs_sign_in"),
                (OAuthStatus::NotApplicable, "not_applicable"),
            ],
        );
    }

    #[test]
    fn risk_flags_are_their_wire_words() {
        use RiskFlag::*;
        check(
            RiskFlag::ALL,
            &[
                (DeclaresNothing, "declares_nothing"),
                (DeletesData, "deletes_data"),
                (ChangesData, "changes_data"),
                (ReadOnly, "read_only"),
                (ReachesOutside, "reaches_outside"),
                (StaysInside, "stays_inside"),
            ],
        );
    }

    #[test]
    fn an_unknown_word_names_itself_and_its_vocabulary() {
        let err = "maybe".parse::<Decision>().expect_err("not a decision");
        assert_eq!(err.to_string(), "\"maybe\" is not a Decision word");
        assert_eq!(
            GrantKind::try_from("turn".to_owned()).ok(),
            Some(GrantKind::Turn)
        );
    }
}
